"""``package verify`` of the image bundle (``Files/images/``): its list
parses, every archive is there with its SHA-256 and holds the image it
is listed for, the version is the package's, and kubeadm's images of
that version are all in it. Archives are read as tar files, never run."""
from __future__ import annotations

import tempfile
from pathlib import Path

from kubernetes_mgmt.params import image_bundle
from kubernetes_mgmt.params.image_bundle import BundleError, ImageBundle
from kubernetes_mgmt.vnf_package.csar import Csar


def check(csar: Csar, minor: str | None
          ) -> tuple[ImageBundle | None, list[str]]:
    """(the bundle, its problems); (None, []) for a package without one."""
    if not csar.has(image_bundle.MANIFEST):
        # The VM image lives there too; OCI archives need the list.
        stray = [n for n in csar.names
                 if n.startswith(f'{image_bundle.BUNDLE_DIR}/')
                 and n.endswith('.tar')]
        return None, [f'{n} is in the package but there is no '
                      f'{image_bundle.MANIFEST} listing it'
                      for n in stray[:3]]
    try:
        bundle = image_bundle.parse(
            csar.read(image_bundle.MANIFEST).decode('utf-8'))
    except (BundleError, UnicodeDecodeError) as exc:
        return None, [str(exc)]
    with tempfile.TemporaryDirectory(prefix='kmgmt-bundle-') as tmp:
        local = {}
        for image in bundle.images:
            name = f'{image_bundle.BUNDLE_DIR}/{image.file}'
            if csar.has(name) and image.file not in local:
                local[image.file] = csar.extract_large(name, Path(tmp))
        return bundle, image_bundle.problems(bundle, local, minor)

"""Image bundles for the lab: one OCI archive per image the lab's kubeadm
lists for a version (``kubeadm config images list``), each a small real
image (``oci_images``), as an operator would write them with ``skopeo
copy docker://REF oci-archive:FILE:REF`` before ``package build
--image-bundle``."""
from __future__ import annotations

import os
import re
import tempfile

from kubernetes_mgmt_lab import oci_images
from kubernetes_mgmt_lab.emulated.kubeadm import image_list


def archive_name(ref: str) -> str:
    """A file name for ``ref``'s archive: its path and tag, flattened."""
    path = ref.split('/', 1)[1]
    return re.sub('[^A-Za-z0-9._-]', '_', path) + '.tar'


def write_bundle(directory: str, version: str,
                 repository: str = 'registry.k8s.io',
                 leave_out: tuple[str, ...] = ()) -> dict[str, str]:
    """The archives of every image of ``version`` (vX.Y.Z) under
    ``repository`` in ``directory``, except images whose name is in
    ``leave_out``; returns reference -> manifest digest."""
    os.makedirs(directory, exist_ok=True)
    written = {}
    with tempfile.TemporaryDirectory(prefix='klab-layouts-') as layouts:
        for ref in image_list(version, repository):
            path, tag = ref.split('/', 1)[1].rsplit(':', 1)
            if path.rsplit('/', 1)[-1] in leave_out:
                continue
            layout = oci_images.build(
                os.path.join(layouts, archive_name(ref)), path, tag)
            written[ref] = oci_images.archive(
                layout, os.path.join(directory, archive_name(ref)), ref)
    return written

"""The image bundle a VNF package may carry, for sites with no registry.

``Files/images/`` holds one OCI archive per image (what ``skopeo copy
docker://REF oci-archive:FILE:REF`` writes) and ``bundle.json``: the
Kubernetes version the images are for and, per archive, its file name,
SHA-256, the image reference and its manifest digest. Each node imports
the archives into containerd (``ctr images import``) before kubeadm runs
and checks every digest, so kubeadm finds all its images and never
pulls.

Archives are read as tar files only: nothing in them is run or
extracted.
"""
from __future__ import annotations

import hashlib
import json
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from kubernetes_mgmt.params.versions import Minor

BUNDLE_DIR = 'Files/images'
MANIFEST_NAME = 'bundle.json'
MANIFEST = f'{BUNDLE_DIR}/{MANIFEST_NAME}'
# What kubeadm runs on every node, by image name (the last path part).
CONTROL_PLANE = ('kube-apiserver', 'kube-controller-manager',
                 'kube-scheduler', 'kube-proxy')
ADDONS = ('pause', 'etcd', 'coredns')
_REF_NAME_KEYS = ('io.containerd.image.name',
                  'org.opencontainers.image.ref.name')

_FILE = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]{0,127}\.tar')
_SHA256 = re.compile('[a-f0-9]{64}')
_DIGEST = re.compile('sha256:[a-f0-9]{64}')
_VERSION = re.compile(r'1\.[0-9]{1,3}\.[0-9]{1,3}')
_LABEL = '[a-z0-9]([a-z0-9-]*[a-z0-9])?'
_REF = re.compile(rf'{_LABEL}(\.{_LABEL})*(:[0-9]{{1,5}})?'
                  r'(/[a-z0-9]+([._-][a-z0-9]+)*)+:[A-Za-z0-9_][A-Za-z0-9._-]'
                  r'{0,127}')


class BundleError(Exception):
    """The bundle cannot be used; the message says which file and why."""


@dataclass(frozen=True)
class BundleImage:
    ref: str            # e.g. registry.k8s.io/kube-apiserver:v1.37.1
    file: str           # the archive's name in Files/images/
    sha256: str         # of the archive
    digest: str         # the image's manifest digest

    @property
    def name(self) -> str:
        """The image's name without registry, path and tag."""
        return self.ref.rsplit('/', 1)[-1].split(':', 1)[0]

    @property
    def tag(self) -> str:
        return self.ref.rsplit(':', 1)[1]


@dataclass(frozen=True)
class ImageBundle:
    kubernetes_version: str          # X.Y.Z, the version kubeadm runs
    images: tuple[BundleImage, ...]

    @property
    def minor(self) -> str:
        return self.kubernetes_version.rsplit('.', 1)[0]

    def to_json(self) -> str:
        return json.dumps({
            'kubernetes_version': self.kubernetes_version,
            'images': [{'ref': i.ref, 'file': i.file, 'sha256': i.sha256,
                        'digest': i.digest} for i in self.images]},
            indent=2) + '\n'

    def node_list(self) -> str:
        """What a node's install script reads: "SHA256 FILE REF DIGEST"
        per line (no JSON parser on the node)."""
        return ''.join(f'{i.sha256} {i.file} {i.ref} {i.digest}\n'
                       for i in self.images)

    def missing(self) -> list[str]:
        """What kubeadm needs for this version and the bundle lacks."""
        names = {i.name: i.tag for i in self.images}
        wanted = f'v{self.kubernetes_version}'
        found = [f'{n}:{wanted}' for n in CONTROL_PLANE
                 if names.get(n) != wanted]
        return found + [n for n in ADDONS if n not in names]


def parse(text: str, where: str = MANIFEST) -> ImageBundle:
    """The bundle ``text`` describes; BundleError naming the field."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise BundleError(f'{where} is not JSON: {exc}') from None
    if not isinstance(data, dict) or not isinstance(data.get('images'),
                                                    list):
        raise BundleError(f'{where} must be an object with "images", a list')
    version = data.get('kubernetes_version')
    if not isinstance(version, str) or not _VERSION.fullmatch(version):
        raise BundleError(f'{where}: kubernetes_version must be X.Y.Z, '
                          'e.g. 1.37.1')
    images = tuple(_image(entry, f'{where}: images[{n}]')
                   for n, entry in enumerate(data['images']))
    _unique([i.file for i in images], f'{where}: file')
    _unique([i.ref for i in images], f'{where}: ref')
    return ImageBundle(version, images)


def _image(entry: object, where: str) -> BundleImage:
    if not isinstance(entry, dict):
        raise BundleError(f'{where} must be an object')
    checks = {'ref': _REF, 'file': _FILE, 'sha256': _SHA256,
              'digest': _DIGEST}
    for key, pattern in checks.items():
        value = entry.get(key)
        if not isinstance(value, str) or not pattern.fullmatch(value):
            raise BundleError(f'{where}.{key} is missing or malformed')
    return BundleImage(entry['ref'], entry['file'], entry['sha256'],
                       entry['digest'])


def _unique(values: list[str], what: str) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise BundleError(f'{what} {value} is given twice')
        seen.add(value)


# -- OCI archives -------------------------------------------------------------

def archive_refs(path: Path) -> dict[str, str]:
    """Reference -> manifest digest of each image an OCI archive names
    (its index.json), checked to be in the archive's blobs."""
    try:
        with tarfile.open(path, mode='r:') as tar:
            names = {PurePosixPath(m.name).as_posix().lstrip('./')
                     for m in tar.getmembers() if m.isfile()}
            if 'oci-layout' not in names or 'index.json' not in names:
                raise BundleError(f'{path.name} is not an OCI archive (no '
                                  'oci-layout or index.json)')
            member = tar.extractfile(_member(tar, 'index.json'))
            index = json.load(member) if member else {}
    except (tarfile.TarError, ValueError, OSError) as exc:
        raise BundleError(f'{path.name} is not a readable OCI archive: '
                          f'{exc}') from None
    found: dict[str, str] = {}
    for manifest in index.get('manifests', []):
        digest = manifest.get('digest', '')
        annotations = manifest.get('annotations') or {}
        ref = next((annotations[k] for k in _REF_NAME_KEYS
                    if _REF.fullmatch(str(annotations.get(k, '')))), None)
        if ref is None or not _DIGEST.fullmatch(digest):
            continue
        if f'blobs/sha256/{digest.split(":", 1)[1]}' not in names:
            raise BundleError(f'{path.name}: the manifest of {ref} is not '
                              'in the archive')
        found[ref] = digest
    if not found:
        raise BundleError(f'{path.name} names no image (an index.json '
                          'manifest with a full reference in its '
                          'io.containerd.image.name or '
                          'org.opencontainers.image.ref.name annotation)')
    return found


def _member(tar: tarfile.TarFile, name: str) -> tarfile.TarInfo:
    for candidate in (name, f'./{name}'):
        try:
            return tar.getmember(candidate)
        except KeyError:
            continue
    raise BundleError(f'no {name}')


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()


def from_archives(directory: Path) -> ImageBundle:
    """The bundle of the OCI archives (``*.tar``) in ``directory``; its
    version is kube-apiserver's tag."""
    images = []
    for path in sorted(directory.glob('*.tar')):
        if not _FILE.fullmatch(path.name):
            raise BundleError(f'{path.name}: archive names are letters, '
                              'digits, ".", "_" and "-", ending in .tar')
        refs = archive_refs(path)
        # bundle.json lists each archive once: one image per archive.
        if len(refs) != 1:
            raise BundleError(f'{path.name} holds {len(refs)} images; '
                              'write one OCI archive per image')
        ((ref, digest),) = refs.items()
        images.append(BundleImage(ref, path.name, sha256_of(path), digest))
    if not images:
        raise BundleError(f'{directory} holds no OCI archive (*.tar)')
    tags = {i.tag for i in images if i.name == 'kube-apiserver'}
    if len(tags) != 1 or not _VERSION.fullmatch(next(iter(tags))[1:]):
        raise BundleError(f'{directory}: exactly one kube-apiserver image '
                          'tagged vX.Y.Z is needed (it names the version)')
    bundle = ImageBundle(next(iter(tags))[1:], tuple(images))
    _unique([i.ref for i in images], 'image')
    return bundle


def problems(bundle: ImageBundle, read: dict[str, Path],
             software_version: str | None) -> list[str]:
    """What is wrong with ``bundle`` for a package of
    ``software_version``: missing images, another minor (when it names
    one), archives whose hash or content differ. ``read``: archive name
    -> a local copy."""
    found = []
    package = Minor.exact(software_version)
    minor = str(package) if package else None
    if minor and bundle.minor != minor:
        found.append(f'{MANIFEST} is for Kubernetes '
                     f'{bundle.kubernetes_version}, the package installs '
                     f'{minor}')
    missing = bundle.missing()
    if missing:
        found.append(f'{MANIFEST} lacks images kubeadm '
                     f'{bundle.kubernetes_version} needs: '
                     f'{", ".join(missing)}')
    for image in bundle.images:
        path = read.get(image.file)
        if path is None:
            found.append(f'{BUNDLE_DIR}/{image.file} (of {image.ref}) is '
                         'not in the package')
            continue
        if sha256_of(path) != image.sha256:
            found.append(f'{BUNDLE_DIR}/{image.file} has another SHA-256 '
                         f'than {MANIFEST} says')
            continue
        try:
            refs = archive_refs(path)
        except BundleError as exc:
            found.append(f'{BUNDLE_DIR}/{exc}')
            continue
        if refs.get(image.ref) != image.digest:
            found.append(f'{BUNDLE_DIR}/{image.file} does not hold '
                         f'{image.ref} at {image.digest}')
    return found


def load(package_root: Path) -> ImageBundle | None:
    """The bundle of an extracted package, None when it has none."""
    path = package_root / MANIFEST
    if not path.is_file():
        return None
    return parse(path.read_text(encoding='utf-8'))

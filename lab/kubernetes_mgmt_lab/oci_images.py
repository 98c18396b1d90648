"""Small container images for the lab, made here: no image is fetched
from the internet (the lab has none, nor has an air-gapped site).

An image is an OCI image layout directory (image-spec ``image-layout``):
one uncompressed layer holding one file (``/true``, a static program that
exits 0 when gcc and a static libc are there, else a few bytes), its
config, its manifest and an index naming the tag. Everything is fixed
(times, owners, the order of JSON keys), so the same name and tag give
the same digests in every build on a machine: a test can compare the
digest containerd shows with the one it built.

``push`` uploads one with skopeo to a registry; ``archive`` writes the
OCI archive ``ctr images import`` reads, as a site carries images in.
"""
from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import platform
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass

from kubernetes_mgmt_lab import pki
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.registry import LabRegistry
from kubernetes_mgmt_lab.sysrun import run

MANIFEST_TYPE = 'application/vnd.oci.image.manifest.v1+json'
INDEX_TYPE = 'application/vnd.oci.image.index.v1+json'
CONFIG_TYPE = 'application/vnd.oci.image.config.v1+json'
LAYER_TYPE = 'application/vnd.oci.image.layer.v1.tar'
REF_NAME = 'org.opencontainers.image.ref.name'
# containerd's own annotation: the full image name of an imported image.
CONTAINERD_NAME = 'io.containerd.image.name'
EPOCH = '1970-01-01T00:00:00Z'
PROGRAM = 'true'
_SOURCE = 'int main(void) { return 0; }\n'
_ARCH = {'x86_64': 'amd64', 'aarch64': 'arm64', 'armv7l': 'arm',
         'ppc64le': 'ppc64le', 's390x': 's390x'}
# Not an instruction set: what the layer holds when no static program
# can be built here (images are pulled and unpacked, never run).
_FALLBACK = b'#!/bin/true\n# kubernetes-mgmt lab image\n'


@dataclass(frozen=True)
class OciLayout:
    """An image layout directory and the digests of its blobs."""

    path: str
    name: str               # repository, e.g. lab/true
    tag: str
    manifest_digest: str
    config_digest: str
    layer_digest: str


def _json(value: dict) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(',', ':')).encode()


def _digest(data: bytes) -> str:
    return 'sha256:' + hashlib.sha256(data).hexdigest()


def _descriptor(media_type: str, data: bytes, **extra) -> dict:
    return {'mediaType': media_type, 'digest': _digest(data),
            'size': len(data), **extra}


@functools.cache
def program_bytes() -> bytes:
    """A static ``int main(){return 0;}`` (built once per process with
    ``gcc -static -Os -s``), or fixed bytes without a compiler."""
    if shutil.which('gcc') is None:
        return _FALLBACK
    with tempfile.TemporaryDirectory(prefix='klab-true-') as tmp:
        # Fixed file names: the program holds no trace of the temp dir.
        source, output = (os.path.join(tmp, f'{PROGRAM}.c'),
                          os.path.join(tmp, PROGRAM))
        with open(source, 'w', encoding='utf-8') as f:
            f.write(_SOURCE)
        built = subprocess.run(
            ['gcc', '-static', '-Os', '-s', '-o', output, source],
            capture_output=True, check=False, cwd=tmp, timeout=120)
        if built.returncode != 0:    # e.g. no libc.a (libc6-dev)
            return _FALLBACK
        with open(output, 'rb') as f:
            return f.read()


def _layer(content: bytes) -> bytes:
    """A tar of one file, with no times, owners or names of this machine."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode='w',
                      format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo(PROGRAM)
        info.size, info.mode, info.mtime = len(content), 0o755, 0
        info.uid = info.gid = 0
        info.uname = info.gname = ''
        tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def _config(layer: bytes, name: str, tag: str) -> bytes:
    arch = _ARCH.get(platform.machine(), platform.machine())
    return _json({
        'architecture': arch, 'os': 'linux', 'created': EPOCH,
        'config': {'Entrypoint': [f'/{PROGRAM}'],
                   'Labels': {'org.opencontainers.image.title':
                              f'{name}:{tag}'}},
        'rootfs': {'type': 'layers', 'diff_ids': [_digest(layer)]},
        'history': [{'created': EPOCH,
                     'created_by': 'kubernetes-mgmt lab oci_images'}]})


def _write_blob(layout: str, data: bytes) -> None:
    path = os.path.join(layout, 'blobs', 'sha256',
                        _digest(data).split(':', 1)[1])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb') as f:
        f.write(data)


def _index(manifest: bytes, annotations: dict[str, str]) -> bytes:
    return _json({'schemaVersion': 2, 'mediaType': INDEX_TYPE,
                  'manifests': [_descriptor(MANIFEST_TYPE, manifest,
                                            annotations=annotations)]})


def build(directory: str, name: str, tag: str) -> OciLayout:
    """Write the image ``name:tag`` as an OCI layout in ``directory``."""
    layer = _layer(program_bytes())
    config = _config(layer, name, tag)
    manifest = _json({'schemaVersion': 2, 'mediaType': MANIFEST_TYPE,
                      'config': _descriptor(CONFIG_TYPE, config),
                      'layers': [_descriptor(LAYER_TYPE, layer)]})
    for blob in (layer, config, manifest):
        _write_blob(directory, blob)
    with open(os.path.join(directory, 'oci-layout'), 'wb') as f:
        f.write(_json({'imageLayoutVersion': '1.0.0'}))
    with open(os.path.join(directory, 'index.json'), 'wb') as f:
        f.write(_index(manifest, {REF_NAME: tag}))
    return OciLayout(directory, name, tag, _digest(manifest),
                     _digest(config), _digest(layer))


def _policy_file(directory: str) -> str:
    """skopeo's signature policy: accept any (the lab's images are
    unsigned; the machine's /etc/containers/policy.json is not ours)."""
    path = os.path.join(directory, 'policy.json')
    pki.write(path, _json({'default': [{'type': 'insecureAcceptAnything'}]}))
    return path


def _authfile(directory: str, registry: LabRegistry) -> str:
    """The containers-auth.json of the registry's user, 0600: credentials
    reach skopeo through this file, never its command line."""
    path = os.path.join(directory, 'auth.json')
    auth = registry.basic_auth.split(' ', 1)[1]
    pki.write(path, _json({'auths': {registry.address: {'auth': auth}}}),
              private=True)
    return path


def _cert_dir(directory: str, registry: LabRegistry) -> str:
    """skopeo's --dest-cert-dir: the CA (*.crt), and the client pair
    (*.cert, *.key) when the registry wants one."""
    path = os.path.join(directory, 'certs')
    pki.write(os.path.join(path, 'ca.crt'), registry.ca_pem)
    if registry.client_cert_pem:
        pki.write(os.path.join(path, 'client.cert'),
                  registry.client_cert_pem)
        pki.write(os.path.join(path, 'client.key'), registry.client_key_pem,
                  private=True)
    return path


def push(layout: OciLayout, registry: LabRegistry, ref: str) -> str:
    """Copy the layout's image to ``registry`` as ``ref`` (``repo:tag``)
    with skopeo; return the manifest digest the registry stored, which is
    the layout's (``--preserve-digests``: skopeo may not convert)."""
    with tempfile.TemporaryDirectory(prefix='klab-skopeo-') as tmp:
        digest_file = os.path.join(tmp, 'digest')
        run(['skopeo', '--policy', _policy_file(tmp), 'copy', '--quiet',
             '--preserve-digests',
             '--dest-cert-dir', _cert_dir(tmp, registry),
             '--dest-authfile', _authfile(tmp, registry),
             '--digestfile', digest_file,
             f'oci:{layout.path}:{layout.tag}',
             f'docker://{registry.address}/{ref}'], timeout=300)
        with open(digest_file, encoding='utf-8') as f:
            digest = f.read().strip()
    if digest != layout.manifest_digest:
        raise LabError(f'skopeo pushed {digest}, the layout holds '
                       f'{layout.manifest_digest}')
    return digest


def archive(layout: OciLayout, path: str, ref: str) -> str:
    """Write an OCI archive (the layout as a tar) whose image is named
    ``ref`` (a full name, ``host/repo:tag``) for ``ctr images import``;
    return its manifest digest. containerd names the image after its own
    annotation; the OCI one keeps the tag for other readers."""
    with open(os.path.join(layout.path, 'index.json'), 'rb') as f:
        manifest_desc = json.load(f)['manifests'][0]
    blob = os.path.join(layout.path, 'blobs', 'sha256',
                        manifest_desc['digest'].split(':', 1)[1])
    with open(blob, 'rb') as f:
        manifest = f.read()
    index = _index(manifest, {CONTAINERD_NAME: ref,
                              REF_NAME: ref.rpartition(':')[2]})
    with tarfile.open(path, 'w', format=tarfile.PAX_FORMAT) as tar:
        _add_bytes(tar, 'oci-layout', _json({'imageLayoutVersion': '1.0.0'}))
        _add_bytes(tar, 'index.json', index)
        blobs = os.path.join(layout.path, 'blobs', 'sha256')
        for name in sorted(os.listdir(blobs)):
            with open(os.path.join(blobs, name), 'rb') as f:
                _add_bytes(tar, f'blobs/sha256/{name}', f.read())
    return _digest(manifest)


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o644, 0
    tar.addfile(info, io.BytesIO(data))

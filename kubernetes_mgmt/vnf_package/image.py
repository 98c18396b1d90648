"""The VM image packed as ``Files/images/<name>`` and described in the VNFD.

Tacker uploads the image to Glance at instantiation and refuses it unless
Glance's SHA-512 equals ``sw_image_data.checksum.hash``; the deployment
flavour files therefore carry tokens (``@IMAGE_SHA512@``...) that the build
replaces with the real file name, checksum, size and disk format.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

from kubernetes_mgmt.vnf_package import layout
from kubernetes_mgmt.vnf_package.digest import digests

PLACEHOLDER_NAME = 'kubernetes-mgmt-placeholder.img'
PLACEHOLDER_TEXT = b"""\
PLACEHOLDER - THIS IS NOT A BOOTABLE VM IMAGE.

This VNF package was built by `kubernetes-mgmt package build` without
--image. It is enough to onboard and inspect the package, but VMs created
from it cannot boot. For a real deployment rebuild the package with
    kubernetes-mgmt package build --image PATH
where PATH is an Ubuntu cloud image (22.04 or later, qcow2 or raw).
"""
TOKEN = re.compile(r'@IMAGE_[A-Z0-9_]+@')
_SAFE_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9._+-]{0,254}')
_EXTENSION_FORMATS = {'.qcow2': 'qcow2', '.vmdk': 'vmdk', '.vhd': 'vhd',
                      '.vhdx': 'vhdx', '.vdi': 'vdi', '.iso': 'iso',
                      '.raw': 'raw', '.img': 'raw'}


class ImageError(ValueError):
    """The image cannot be packed; the message says why."""


@dataclass(frozen=True)
class Image:
    name: str                   # file name under Files/images
    size: int
    sha256: str
    sha512: str
    disk_format: str
    source: Path | None = None  # None: the placeholder
    data: bytes | None = None

    @property
    def placeholder(self) -> bool:
        return self.source is None

    @property
    def member_name(self) -> str:
        return f'{layout.IMAGES}/{self.name}'

    def tokens(self) -> dict[str, str]:
        return {'@IMAGE_FILE@': self.name,
                '@IMAGE_SHA512@': self.sha512,
                '@IMAGE_SIZE@': f'{self.size} B',
                '@IMAGE_DISK_FORMAT@': self.disk_format}


def from_file(path: str | Path) -> Image:
    source = Path(path)
    if not source.is_file():
        raise ImageError(f'--image {source}: no such file')
    if not _SAFE_NAME.fullmatch(source.name):
        raise ImageError(
            f'--image {source}: rename the file to letters, digits and '
            "'._+-' only (its name goes into the VNFD)")
    try:
        with source.open('rb') as stream:
            head = stream.read(1 << 16)
            stream.seek(0)
            sums = digests(stream, 'sha256', 'sha512')
    except OSError as exc:
        raise ImageError(f'--image {source}: {exc.strerror or exc}') from None
    return Image(name=source.name, size=source.stat().st_size,
                 sha256=sums['sha256'], sha512=sums['sha512'],
                 disk_format=disk_format(head, source.name), source=source)


def placeholder() -> Image:
    data = PLACEHOLDER_TEXT
    sums = digests(BytesIO(data), 'sha256', 'sha512')
    return Image(name=PLACEHOLDER_NAME, size=len(data),
                 sha256=sums['sha256'], sha512=sums['sha512'],
                 disk_format='raw', data=data)


def disk_format(head: bytes, name: str) -> str:
    """Glance disk_format from the file's magic, else its extension."""
    if head.startswith(b'QFI\xfb'):
        return 'qcow2'
    if head.startswith(b'KDMV'):
        return 'vmdk'
    if head.startswith(b'vhdxfile'):
        return 'vhdx'
    if head.startswith(b'conectix'):
        return 'vhd'
    if head[0x8001:0x8006] == b'CD001':
        return 'iso'
    return _EXTENSION_FORMATS.get(Path(name).suffix.lower(), 'raw')


def fill(text: str, image: Image) -> str:
    """Replace the image tokens; any other ``@IMAGE_…@`` is an error."""
    for token, value in image.tokens().items():
        text = text.replace(token, value)
    left = TOKEN.search(text)
    if left:
        raise ImageError(f'unknown token {left.group()} in the sample VNFD')
    return text

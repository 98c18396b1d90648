"""Writing a CSAR so that the same input gives the same bytes.

Entries come in a fixed order with a fixed timestamp, file mode and
compression: rebuilding a package from the same plugin and image yields an
identical file (and identical hashes for anyone comparing).
"""
from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import BinaryIO

FIXED_DATE = (1980, 1, 1, 0, 0, 0)   # the earliest a zip can record
_UNIX = 3                            # ZipInfo.create_system for Unix
_FILE = 0o100000                     # S_IFREG


@dataclass(frozen=True)
class Member:
    """One CSAR entry: bytes in memory, or a file read when written."""

    name: str
    data: bytes | None = None
    source: Path | None = None
    executable: bool = False
    compress: bool = True

    def size(self) -> int:
        if self.data is not None:
            return len(self.data)
        assert self.source is not None
        return self.source.stat().st_size

    def open(self) -> BinaryIO:
        if self.data is not None:
            return BytesIO(self.data)
        assert self.source is not None
        return self.source.open('rb')


def write(path: Path, members: Iterable[Member]) -> None:
    """Write the zip atomically: a reader never sees half a package."""
    path = path.resolve()
    fd, temp = tempfile.mkstemp(prefix=f'.{path.name}.', dir=path.parent)
    try:
        with os.fdopen(fd, 'wb') as raw, \
                zipfile.ZipFile(raw, 'w', allowZip64=True) as archive:
            for member in members:
                _add(archive, member)
        os.chmod(temp, 0o644)
        os.replace(temp, path)
    except BaseException:
        os.unlink(temp)
        raise


def _add(archive: zipfile.ZipFile, member: Member) -> None:
    info = zipfile.ZipInfo(member.name, date_time=FIXED_DATE)
    info.create_system = _UNIX
    mode = 0o755 if member.executable else 0o644
    info.external_attr = (_FILE | mode) << 16
    info.compress_type = (zipfile.ZIP_DEFLATED if member.compress
                          else zipfile.ZIP_STORED)
    # Known up front so that zipfile picks zip64 for files over 2 GiB.
    info.file_size = member.size()
    with member.open() as source, archive.open(info, 'w') as target:
        shutil.copyfileobj(source, target, 1 << 20)

"""Which entries of a CSAR make it unsafe to unpack, from the zip's
central directory alone.

Tacker unpacks an uploaded package with Python's zipfile, other tools
(``unzip``, a person checking a package by hand) differ in how they treat
an absolute name, a ``..``, a symbolic link or a name given twice. A
package that depends on such an entry is refused as a whole, before any
member is read or written anywhere.
"""
from __future__ import annotations

import posixpath
import re
import stat
import zipfile
from collections.abc import Iterable

# Deflate cannot compress better than about 1032:1; a larger ratio is a
# forged size or a bomb. Small entries are left alone: they cost nothing.
MAX_RATIO = 1100
_RATIO_FROM = 1 << 20
_UNIX = 3                      # ZipInfo.create_system of Unix
_DRIVE = re.compile(r'^[A-Za-z]:')
_KINDS = {stat.S_IFLNK: 'a symbolic link', stat.S_IFIFO: 'a FIFO',
          stat.S_IFCHR: 'a character device', stat.S_IFBLK: 'a block device',
          stat.S_IFSOCK: 'a socket'}


def shown(name: str) -> str:
    """The entry name on one line, quoted only if it needs it."""
    return name if name.isprintable() and name.strip() == name \
        else repr(name)


def refusals(infos: Iterable[zipfile.ZipInfo]) -> list[str]:
    """One line per unsafe entry, naming it; empty when all are safe."""
    found, seen, files = [], set(), set()
    for info in infos:
        reason = _name_problem(info.filename) or _kind_problem(info) \
            or _size_problem(info)
        key = posixpath.normpath(info.filename).rstrip('/')
        if reason is None and key in seen:
            reason = 'a second entry of that name (zip readers differ on ' \
                     'which one they take)'
        seen.add(key)
        if not info.is_dir():
            files.add(key)
        if reason:
            found.append(_line(info.filename, reason))
    parents = {posixpath.dirname(n) for n in seen}
    parents |= {p for n in parents for p in _ancestors(n)}
    found += [_line(n, 'a file, yet other entries lie beneath it')
              for n in sorted(files & parents)]
    return found


def _line(name: str, reason: str) -> str:
    return (f'{shown(name)}: unsafe entry in the archive ({reason}); the '
            'package is refused and nothing was extracted')


def _name_problem(name: str) -> str | None:
    if not name.strip('/'):
        return 'an empty name'
    if name.startswith('/'):
        return 'an absolute path'
    if '\\' in name:
        return 'a backslash, a Windows path separator'
    if _DRIVE.match(name):
        return 'a drive letter'
    if '..' in name.split('/'):
        return "a '..' component, which leads out of the package"
    return None


def _kind_problem(info: zipfile.ZipInfo) -> str | None:
    if info.create_system != _UNIX:
        return None             # no Unix file type recorded
    kind = _KINDS.get(stat.S_IFMT(info.external_attr >> 16))
    return f'{kind}, not a regular file' if kind else None


def _size_problem(info: zipfile.ZipInfo) -> str | None:
    if info.compress_type == zipfile.ZIP_STORED and \
            info.file_size != info.compress_size and not info.is_dir():
        return (f'stored uncompressed, yet it declares {info.file_size} '
                f'bytes in {info.compress_size}')
    if info.compress_type == zipfile.ZIP_DEFLATED and \
            info.file_size > _RATIO_FROM and \
            info.file_size > MAX_RATIO * max(info.compress_size, 1):
        return (f'it declares {info.file_size} bytes from '
                f'{info.compress_size} compressed, more than deflate can '
                'produce: a forged size or a zip bomb')
    return None


def _ancestors(name: str) -> list[str]:
    parts = name.split('/')
    return ['/'.join(parts[:i]) for i in range(1, len(parts))]

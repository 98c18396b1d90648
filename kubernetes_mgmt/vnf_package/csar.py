"""Reading a CSAR for verification, without extracting it.

Opening one checks every entry first (``zipcheck``): an archive with an
unsafe entry is refused before any member is read, so nothing that
follows can write outside its own directory.
"""
from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from kubernetes_mgmt.vnf_package import zipcheck
from kubernetes_mgmt.vnf_package.digest import ALGORITHMS, digests

# What reading a damaged member raises (bad CRC, truncated, bad deflate).
_DAMAGED = (zipfile.BadZipFile, zlib.error, OSError, EOFError)
# Members read whole are YAML, scripts, Python: far below this.
READ_LIMIT = 64 << 20


class Unreadable(Exception):
    """The file cannot be read as a zip archive; one-line message."""


class Refused(Exception):
    """The archive has unsafe entries: ``problems``, one line each."""

    def __init__(self, problems: list[str]):
        super().__init__('; '.join(problems))
        self.problems = problems


class Csar:
    """The files of a CSAR, by POSIX path (directories left out)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self._zip = zipfile.ZipFile(self.path)
        except FileNotFoundError:
            raise Unreadable(f'{self.path}: no such file') from None
        except IsADirectoryError:
            raise Unreadable(f'{self.path} is a directory, not a CSAR '
                             'file') from None
        except zipfile.BadZipFile:
            raise Unreadable(f'{self.path} is not a zip file (a CSAR is '
                             'a zip archive)') from None
        except OSError as exc:
            raise Unreadable(f'cannot read {self.path}: '
                             f'{exc.strerror or exc}') from None
        refusals = zipcheck.refusals(self._zip.infolist())
        if refusals:
            self._zip.close()
            raise Refused(refusals)
        self.names = sorted(i.filename for i in self._zip.infolist()
                            if not i.is_dir())
        self._known = set(self.names)

    def __enter__(self) -> Csar:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._zip.close()

    def has(self, name: str) -> bool:
        return name in self._known

    def read(self, name: str) -> bytes:
        size = self._zip.getinfo(name).file_size
        if size > READ_LIMIT:
            raise Unreadable(f'{self.path}: {name} declares {size} bytes, '
                             f'more than the {READ_LIMIT >> 20} MiB the '
                             'verifier reads of a text member')
        try:
            return self._zip.read(name)
        except _DAMAGED as exc:
            raise Unreadable(f'{self.path}: {name} is corrupt: '
                             f'{exc}') from None

    def extract(self, name: str, root: Path) -> Path:
        """Write member ``name`` under ``root`` (a directory the caller
        owns) and return its path; never follows or replaces a link."""
        with self._new_file(name, root) as (target, out):
            out.write(self.read(name))
        return target

    def extract_large(self, name: str, root: Path) -> Path:
        """``extract`` for a member of any size (an image archive),
        streamed."""
        try:
            with self._new_file(name, root) as (target, out), \
                    self._zip.open(name) as stream:
                shutil.copyfileobj(stream, out, 1 << 20)
        except _DAMAGED as exc:
            raise Unreadable(f'{self.path}: {name} is corrupt: '
                             f'{exc}') from None
        return target

    @contextlib.contextmanager
    def _new_file(self, name: str, root: Path
                  ) -> Iterator[tuple[Path, BinaryIO]]:
        """A new file for member ``name`` under ``root``, refused outside
        it; never follows or replaces a link."""
        target = root.joinpath(*name.split('/'))
        if not target.resolve().is_relative_to(root.resolve()):
            raise Unreadable(f'{self.path}: {name} would be written '
                             f'outside {root}')
        target.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        with os.fdopen(os.open(target, flags, 0o600), 'wb') as out:
            yield target, out

    def digest(self, name: str, algorithm: str) -> str:
        """Hex digest of a member; ``algorithm`` as in TOSCA.meta."""
        hashlib_name = ALGORITHMS[algorithm.lower()]
        try:
            with self._zip.open(name) as stream:
                return digests(stream, hashlib_name)[hashlib_name]
        except _DAMAGED as exc:
            raise Unreadable(f'{self.path}: {name} is corrupt: '
                             f'{exc}') from None

    def load_yaml(self, name: str) -> Any:
        """The parsed YAML of a member; ValueError with a one-line reason."""
        try:
            return yaml.safe_load(self.read(name))
        except yaml.YAMLError as exc:
            mark = getattr(exc, 'problem_mark', None)
            where = f' (line {mark.line + 1})' if mark else ''
            problem = getattr(exc, 'problem', None) or 'invalid YAML'
            raise ValueError(f'{name} is not valid YAML{where}: '
                             f'{problem}') from None


def resolve(base_dir: str, reference: str) -> str | None:
    """``reference`` relative to ``base_dir``; None if it leaves the CSAR."""
    joined = posixpath.normpath(posixpath.join(base_dir, reference))
    if joined.startswith('../') or joined == '..' or joined.startswith('/'):
        return None
    return joined

"""Small files that survive a crash of the host: written to a temporary
file in the same directory, flushed to disk, then put in place in one
step, and the directory flushed too, so that after a power loss the file
is either absent or whole, never empty or half written.

For the conductor host's own secrets and counters (the state key, the
state generations), owner-only.
"""
from __future__ import annotations

import contextlib
import os
import tempfile


def make_dir(path: str) -> None:
    """``path`` and its missing parents, owner-only when made here."""
    os.makedirs(path, mode=0o700, exist_ok=True)


def create(path: str, data: bytes, mode: int = 0o600) -> bool:
    """Write ``path`` only if it does not exist; False if it did (another
    process made it first: its file is whole, never one being written)."""
    directory = os.path.dirname(path) or '.'
    make_dir(directory)
    temp = _written_temp(directory, os.path.basename(path), data, mode)
    try:
        os.link(temp, path)     # fails if the name exists: O_EXCL's twin
    except FileExistsError:
        return False
    finally:
        os.unlink(temp)
    sync_dir(directory)
    return True


def replace(path: str, data: bytes, mode: int = 0o600) -> None:
    """Write ``path``, replacing what is there in one step."""
    directory = os.path.dirname(path) or '.'
    make_dir(directory)
    temp = _written_temp(directory, os.path.basename(path), data, mode)
    try:
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    sync_dir(directory)


def _written_temp(directory: str, name: str, data: bytes, mode: int) -> str:
    fd, temp = tempfile.mkstemp(prefix=f'.{name}.', dir=directory)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, 'wb') as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return temp


def sync_dir(directory: str) -> None:
    """Flush ``directory``'s entries (a rename or link in it)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

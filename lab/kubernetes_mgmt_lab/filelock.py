"""An exclusive lock held on a file, between processes of this machine."""
from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator


@contextlib.contextmanager
def exclusive(lock_path: str) -> Iterator[None]:
    """Hold ``lock_path`` (created if missing) until the block ends; a
    process that dies holding it releases it."""
    os.makedirs(os.path.dirname(lock_path), exist_ok=True)
    with open(lock_path, 'a', encoding='utf-8') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)

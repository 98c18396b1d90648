"""Small JSON records a host keeps about itself under its private
``/var/lib/klab`` (what packages, units, sysctls it has)."""
from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator

from kubernetes_mgmt_lab.emulated import store
from kubernetes_mgmt_lab.emulated.host import host_path

STATE_DIR = '/var/lib/klab'


def _file(name: str) -> str:
    return host_path(os.path.join(STATE_DIR, f'{name}.json'))


def read(name: str) -> dict:
    return store.load_json(_file(name), {})


@contextlib.contextmanager
def mutate(name: str) -> Iterator[dict]:
    path = _file(name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(f'{path}.lock', 'a+') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            data = store.load_json(path, {})
            yield data
            store.save_json(path, data)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)

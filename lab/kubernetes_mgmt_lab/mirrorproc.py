"""Starting and stopping the lab's site mirror as a detached process."""
from __future__ import annotations

import os

from kubernetes_mgmt_lab import detached, mirror

MODULE = 'kubernetes_mgmt_lab.mirror'


def content_dir(root: str) -> str:
    return os.path.join(root, 'mirror')


def log_path(root: str) -> str:
    return os.path.join(root, 'mirror.log')


def start(root: str, ip: str, port: int) -> int:
    """Fill ``<root>/mirror`` and serve it on ``ip:port``; return the
    server's pid once it accepts connections."""
    directory = content_dir(root)
    mirror.populate(directory)
    return detached.start(MODULE, ['--dir', directory,
                                   '--listen', f'{ip}:{port}'],
                          ip, port, log_path(root), "the lab's site mirror")


def is_mirror(pid: int | None) -> bool:
    return detached.runs(pid, MODULE)


def stop(pid: int | None) -> None:
    detached.stop(pid, MODULE)

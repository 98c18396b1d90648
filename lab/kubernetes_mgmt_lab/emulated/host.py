"""Who am I: the lab host a command runs on, and its private paths.

In the lab every "VM" has private /etc, /var/lib, /run, ... through its
own mount namespace, so a command just uses the real paths.  Unit tests
run without namespaces: ``KLAB_HOST_ROOT`` then prefixes every
host-private path, and ``KLAB_HOST_FILE`` points at the host's
``host.json``.
"""
from __future__ import annotations

import json
import os

HOST_FILE = '/etc/klab/host.json'
# Directories each lab VM has to itself (the rest is the machine's).
PRIVATE_PREFIXES = ('/etc', '/var/lib', '/var/log', '/usr/local/bin',
                    '/home', '/run')


def host_path(path: str) -> str:
    """Map a path the way the host's mount namespace would."""
    root = os.environ.get('KLAB_HOST_ROOT')
    if not root or not os.path.isabs(path):
        return path
    norm = os.path.normpath(path)
    for prefix in PRIVATE_PREFIXES:
        if norm == prefix or norm.startswith(prefix + '/'):
            return os.path.join(root, norm.lstrip('/'))
    return path


class HostInfo:
    """The host's ``host.json``. A plain class: every emulated command
    loads it, and importing dataclasses would double a short command's
    start-up."""

    FIELDS = ('name', 'ip', 'role', 'lab_root', 'cluster_dir', 'state_file')

    def __init__(self, name: str, ip: str, role: str = '',
                 lab_root: str = '', cluster_dir: str = '',
                 state_file: str = ''):
        self.name = name
        self.ip = ip
        self.role = role
        self.lab_root = lab_root
        self.cluster_dir = cluster_dir
        self.state_file = state_file

    def __repr__(self) -> str:
        return f'HostInfo(name={self.name!r}, ip={self.ip!r})'

    @classmethod
    def load(cls) -> HostInfo:
        path = os.environ.get('KLAB_HOST_FILE') or host_path(HOST_FILE)
        with open(path, encoding='utf-8') as f:
            data = json.load(f)
        return cls(**{k: data[k] for k in cls.FIELDS if k in data})

    def path(self, path: str) -> str:
        return host_path(path)

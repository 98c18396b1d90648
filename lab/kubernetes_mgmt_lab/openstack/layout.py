"""Where the services' virtualenvs, files and logs live."""
from __future__ import annotations

import os
from dataclasses import dataclass

# Virtualenvs are slow to build (uwsgi compiles): one set per machine,
# shared by every services root and reused while their pins match.
VENV_ROOT = '/opt/kubernetes-mgmt-lab/openstack'
# Held by "lab tacker up" (site.up) while it installs and starts.
UP_LOCK = os.path.join(VENV_ROOT, '.up.lock')
# A developer's services; tests use roots of their own.
DEFAULT_ROOT = '/var/tmp/kubernetes-mgmt-lab-openstack'  # noqa: S108
STATE_FILE = 'openstack.json'
CLOUDS_FILE = 'clouds.yaml'
CLOUD_NAME = 'kubernetes-mgmt-lab'
HOST = '127.0.0.1'
REGION = 'RegionOne'


@dataclass(frozen=True)
class Root:
    """The files of one run of the services."""

    path: str

    def of(self, *parts: str) -> str:
        return os.path.join(self.path, *parts)

    @property
    def state_file(self) -> str:
        return self.of(STATE_FILE)

    @property
    def clouds_file(self) -> str:
        return self.of(CLOUDS_FILE)

    def log(self, service: str) -> str:
        return os.path.join(self.log_dir(), f'{service}.log')

    def log_dir(self) -> str:
        return self.of('log')

    def service_dir(self, service: str) -> str:
        return self.of(service)


def venv_dir(service: str) -> str:
    return os.path.join(VENV_ROOT, service, 'venv')


def venv_bin(service: str, program: str) -> str:
    return os.path.join(venv_dir(service), 'bin', program)

"""Virtualenvs of the services from PyPI, reused while their pins match."""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass

from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.openstack.layout import venv_bin, venv_dir
from kubernetes_mgmt_lab.sysrun import run

# Debian's interpreter: venvs under /opt that any user may run.
PYTHON = '/usr/bin/python3'
INSTALL_TIMEOUT = 1800.0

_VERSIONS = ('import importlib.metadata as m, json, sys\n'
             'out = {}\n'
             'for name in sys.argv[1:]:\n'
             '    try:\n'
             '        out[name] = m.version(name)\n'
             '    except m.PackageNotFoundError:\n'
             '        out[name] = None\n'
             'print(json.dumps(out))\n')


@dataclass(frozen=True)
class Venv:
    """A service's virtualenv: pinned distributions and unpinned extras."""

    service: str
    pins: dict[str, str]
    extras: tuple[str, ...] = ()

    @property
    def path(self) -> str:
        return venv_dir(self.service)

    def bin(self, program: str) -> str:
        return venv_bin(self.service, program)

    def installed(self) -> dict[str, str | None]:
        python = self.bin('python')
        if not os.access(python, os.X_OK):
            return {}
        names = [*self.pins, *self.extras]
        proc = run([python, '-c', _VERSIONS, *names], check=False)
        if proc.returncode != 0:
            return {}
        return json.loads(proc.stdout)

    def matches(self) -> bool:
        found = self.installed()
        return (all(found.get(n) == v for n, v in self.pins.items())
                and all(found.get(n) for n in self.extras))

    def ensure(self) -> float:
        """Build or complete the venv; the seconds it took (0 if reused)."""
        if self.matches():
            return 0.0
        started = time.monotonic()
        if not os.access(self.bin('pip'), os.X_OK):
            run([PYTHON, '-m', 'venv', self.path], timeout=300)
        specs = [f'{n}=={v}' for n, v in self.pins.items()] + list(
            self.extras)
        run([self.bin('pip'), 'install', '-q', *specs],
            timeout=INSTALL_TIMEOUT)
        if not self.matches():
            raise LabError(f'{self.service} venv at {self.path}: pip ran '
                           f'but {specs} are not all installed')
        return time.monotonic() - started

    def pip_install(self, *args: str) -> None:
        run([self.bin('pip'), 'install', '-q', *args],
            timeout=INSTALL_TIMEOUT)

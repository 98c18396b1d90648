"""Tacker Mgmt Driver plugin that builds Kubernetes clusters on VNF VMs."""
from __future__ import annotations

import os

INSTALL_SCRIPT = 'install_k8s_cluster.sh'
_HERE = os.path.dirname(os.path.abspath(__file__))


def scripts_dir() -> str:
    """The directory holding ``install_k8s_cluster.sh`` (and its peers).

    An installed wheel carries the scripts as package data (setup.py
    copies the repository's ``scripts/`` to ``kubernetes_mgmt/data/
    scripts``); a source checkout or editable install reads
    ``<repo>/scripts``.
    """
    packaged = os.path.join(_HERE, 'data', 'scripts')
    checkout = os.path.join(os.path.dirname(_HERE), 'scripts')
    for candidate in (packaged, checkout):
        if os.path.isfile(os.path.join(candidate, INSTALL_SCRIPT)):
            return candidate
    raise FileNotFoundError(
        f'{INSTALL_SCRIPT} is neither in {packaged} nor in {checkout}; '
        'reinstall tacker-kubernetes-mgmt')

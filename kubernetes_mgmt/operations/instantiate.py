"""instantiate_end: from the VNF's VMs to a registered Kubernetes VIM."""
from __future__ import annotations

from kubernetes_mgmt.engine.progress import Progress
from kubernetes_mgmt.operations.install import install
from kubernetes_mgmt.operations.request import InstanceStore, OperationRequest

OPERATION = 'instantiate'


def instantiate(request: OperationRequest, store: InstanceStore
                ) -> Progress:
    """Install the cluster on the instance's VMs (a re-run finishes what
    an earlier attempt began) and register it as a VIM."""
    return install(OPERATION, request, store)

"""Heal of the whole VNF (SOL003: a heal request without vnfcInstanceId).

Tacker deletes the stack and creates it again between the two hooks:
heal_start gives up the cluster's VIM (and its vim_connection_info
entry) and what the driver stored about the old VMs; heal_end installs
the cluster on the new stack, exactly as instantiate does with the
stored request, and registers the VIM again.
"""
from __future__ import annotations

from kubernetes_mgmt import redact
from kubernetes_mgmt.engine.graph import CLUSTER, Graph
from kubernetes_mgmt.engine.progress import Progress
from kubernetes_mgmt.operations import vim_steps
from kubernetes_mgmt.operations.install import install
from kubernetes_mgmt.operations.request import InstanceStore, OperationRequest
from kubernetes_mgmt.state.instance_state import DriverState

LOG = redact.get_logger(__name__)
OPERATION = 'heal of the whole VNF'
INSTALL = 'heal (whole VNF)'


def rebuild_start(request: OperationRequest, store: InstanceStore) -> None:
    """Refuse while CNFs use the cluster; else delete its VIM and forget
    the old cluster."""
    request.cluster_params()    # heal_end will need them: check now
    state = store.load()
    vim_steps.run_offline(
        rebuild_start_graph(store, request.instance_id, state),
        request.instance_id)
    LOG.info('instance %s: VIM removed; the cluster is installed again '
             'on the new stack by heal_end', request.instance_id)


def rebuild_start_graph(store: InstanceStore, instance_id: str,
                        state: DriverState) -> Graph:
    graph = Graph(OPERATION)
    unused = vim_steps.check_unused(graph, store, instance_id, state,
                                    OPERATION)
    deleted = vim_steps.delete_vim(graph, store, instance_id, state,
                                   needs=[unused])
    graph.add('forget the old VMs', CLUSTER,
              lambda _: store.save(_fresh(state)), needs=[deleted])
    return graph


def rebuild_end(request: OperationRequest, store: InstanceStore
                ) -> Progress:
    """The cluster on the new stack, registered as a VIM again."""
    request.cluster_params()
    state = store.load()
    stack_id = request.stack()
    if state.stack_id and state.stack_id != stack_id:
        # heal_start did not finish: what is known belongs to the VMs of
        # the old stack (their host keys would refuse the new VMs).
        LOG.info('instance %s: forgetting the VMs of stack %s',
                 request.instance_id, state.stack_id)
        store.save(_fresh(state, keep_vim=True))
    return install(INSTALL, request, store)


def _fresh(state: DriverState, keep_vim: bool = False) -> DriverState:
    """Nothing of the old VMs; the cluster record stays, so that the
    cluster is rebuilt as it was built (version, CNI, ports, CIDRs)."""
    fresh = DriverState(cluster=state.cluster)
    if keep_vim:
        fresh.vim_id, fresh.vim_name = state.vim_id, state.vim_name
    return fresh

"""terminate_start / terminate_end: the cluster's VIM and everything the
driver stored go with the VNF.

terminate_start refuses, before Tacker deletes anything, while CNFs are
deployed on the cluster. terminate_end (after the stack is gone, and also
when Tacker rolls back a failed instantiate, without a request) deletes
the VIM - a VIM that was never registered is fine - and forgets the
instance's driver state. No VM is contacted: they are going, or gone.
"""
from __future__ import annotations

from kubernetes_mgmt import redact
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.engine.graph import CLUSTER, Graph
from kubernetes_mgmt.monitoring import targets
from kubernetes_mgmt.operations import vim_steps
from kubernetes_mgmt.operations.request import InstanceStore, OperationRequest
from kubernetes_mgmt.state.instance_state import DriverState

LOG = redact.get_logger(__name__)
OPERATION = 'terminate'


def terminate_start(request: OperationRequest, store: InstanceStore) -> None:
    state = store.load()
    vim_steps.run_offline(
        terminate_start_graph(store, request.instance_id, state),
        request.instance_id)
    LOG.info('instance %s: no CNF uses the cluster; it may be terminated',
             request.instance_id)


def terminate_end(request: OperationRequest, store: InstanceStore, *,
                  rollback: bool = False) -> None:
    state = store.load()
    vim_steps.run_offline(
        terminate_end_graph(store, request.instance_id, state),
        request.instance_id)
    # Prometheus stops scraping the gone VMs (no alert, no heal).
    if CONF.kubernetes_mgmt.monitoring_targets_dir:
        targets.remove(CONF.kubernetes_mgmt.monitoring_targets_dir,
                       request.instance_id)
    LOG.info('instance %s: %s: VIM and driver state removed',
             request.instance_id,
             'instantiate rolled back' if rollback else 'terminated')


def terminate_start_graph(store: InstanceStore, instance_id: str,
                          state: DriverState) -> Graph:
    graph = Graph(OPERATION)
    vim_steps.check_unused(graph, store, instance_id, state, OPERATION)
    return graph


def terminate_end_graph(store: InstanceStore, instance_id: str,
                        state: DriverState) -> Graph:
    graph = Graph(OPERATION)
    deleted = vim_steps.delete_vim(graph, store, instance_id, state)
    graph.add('forget driver state', CLUSTER, lambda _: store.forget(),
              needs=[deleted])
    return graph

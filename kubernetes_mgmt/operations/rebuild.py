"""Heal of the whole VNF (SOL003: a heal request without vnfcInstanceId).

Tacker deletes the stack and creates it again between the two hooks:
heal_start gives up the cluster's VIM (and its vim_connection_info
entry) and what the driver stored about the old VMs; heal_end installs
the cluster on the new stack, exactly as instantiate does with the
stored request, and registers the VIM again.
"""
from __future__ import annotations

from typing import Any

from kubernetes_mgmt import redact
from kubernetes_mgmt.engine.graph import CLUSTER, Graph
from kubernetes_mgmt.engine.progress import Progress
from kubernetes_mgmt.operations import terminate
from kubernetes_mgmt.operations.context import stored_params
from kubernetes_mgmt.operations.instantiate import instantiate
from kubernetes_mgmt.shim import tacker_objects
from kubernetes_mgmt.state import instance_state
from kubernetes_mgmt.state.instance_state import DriverState
from kubernetes_mgmt.vim.release import refuse_if_in_use, release_vim

LOG = redact.get_logger(__name__)
OPERATION = 'heal of the whole VNF'


def rebuild_start(context: Any, vnf_instance: Any) -> None:
    """Refuse while CNFs use the cluster; else delete its VIM and forget
    the old cluster."""
    stored_params(vnf_instance)     # heal_end will need them: check now
    state = instance_state.load(vnf_instance)
    terminate.run(rebuild_start_graph(context, vnf_instance, state),
                  vnf_instance)
    LOG.info('instance %s: VIM removed; the cluster is installed again '
             'on the new stack by heal_end',
             tacker_objects.instance_id(vnf_instance))


def rebuild_start_graph(context: Any, vnf_instance: Any,
                        state: DriverState) -> Graph:
    graph = Graph(OPERATION)
    unused = graph.add('check no CNF uses the VIM', CLUSTER,
                       lambda _: refuse_if_in_use(context, vnf_instance,
                                                  state, OPERATION))
    deleted = graph.add('delete VIM', CLUSTER,
                        lambda _: release_vim(context, vnf_instance, state),
                        needs=[unused])
    graph.add('forget the old VMs', CLUSTER,
              lambda _: instance_state.save(vnf_instance, _fresh(state)),
              needs=[deleted])
    return graph


def rebuild_end(context: Any, vnf_instance: Any, vnf: dict | None = None,
                zones: dict[str, str] | None = None) -> Progress:
    """The cluster on the new stack, registered as a VIM again."""
    params = stored_params(vnf_instance)
    state = instance_state.load(vnf_instance)
    stack_id = tacker_objects.stack_id(vnf_instance, vnf)
    if state.stack_id and state.stack_id != stack_id:
        # heal_start did not finish: what is known belongs to the VMs of
        # the old stack (their host keys would refuse the new VMs).
        LOG.info('instance %s: forgetting the VMs of stack %s',
                 tacker_objects.instance_id(vnf_instance), state.stack_id)
        instance_state.save(vnf_instance, _fresh(state, keep_vim=True))
    return instantiate(context, vnf_instance, params, vnf,
                       operation='heal (whole VNF)', zones=zones)


def _fresh(state: DriverState, keep_vim: bool = False) -> DriverState:
    """Nothing of the old VMs; the cluster record stays, so that the
    cluster is rebuilt as it was built (version, CNI, ports, CIDRs)."""
    fresh = DriverState(cluster=state.cluster)
    if keep_vim:
        fresh.vim_id, fresh.vim_name = state.vim_id, state.vim_name
    return fresh

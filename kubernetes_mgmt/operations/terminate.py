"""terminate_start / terminate_end: the cluster's VIM and everything the
driver stored go with the VNF.

terminate_start refuses, before Tacker deletes anything, while CNFs are
deployed on the cluster. terminate_end (after the stack is gone, and also
when Tacker rolls back a failed instantiate, without a request) deletes
the VIM - a VIM that was never registered is fine - and forgets the
instance's driver state. No VM is contacted: they are going, or gone.
"""
from __future__ import annotations

from typing import Any

from kubernetes_mgmt import redact
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.engine import runner as engine
from kubernetes_mgmt.engine.graph import CLUSTER, Graph
from kubernetes_mgmt.engine.progress import Progress
from kubernetes_mgmt.shim import tacker_objects
from kubernetes_mgmt.state import instance_state
from kubernetes_mgmt.state.instance_state import DriverState
from kubernetes_mgmt.vim.release import refuse_if_in_use, release_vim

LOG = redact.get_logger(__name__)


def terminate_start(context: Any, vnf_instance: Any) -> None:
    state = instance_state.load(vnf_instance)
    run(terminate_start_graph(context, vnf_instance, state), vnf_instance)
    LOG.info('instance %s: no CNF uses the cluster; it may be terminated',
             tacker_objects.instance_id(vnf_instance))


def terminate_end(context: Any, vnf_instance: Any,
                  rollback: bool = False) -> None:
    state = instance_state.load(vnf_instance)
    run(terminate_end_graph(context, vnf_instance, state), vnf_instance)
    LOG.info('instance %s: %s: VIM and driver state removed',
             tacker_objects.instance_id(vnf_instance),
             'instantiate rolled back' if rollback else 'terminated')


def terminate_start_graph(context: Any, vnf_instance: Any,
                          state: DriverState) -> Graph:
    graph = Graph('terminate')
    graph.add('check no CNF uses the VIM', CLUSTER,
              lambda _: refuse_if_in_use(context, vnf_instance, state,
                                         'terminate'))
    return graph


def terminate_end_graph(context: Any, vnf_instance: Any,
                        state: DriverState) -> Graph:
    graph = Graph('terminate')
    deleted = graph.add('delete VIM', CLUSTER,
                        lambda _: release_vim(context, vnf_instance, state))

    def forget(_) -> None:
        instance_state.forget(vnf_instance)
        if callable(getattr(vnf_instance, 'save', None)):
            vnf_instance.save()     # vim_connection_info may have changed

    graph.add('forget driver state', CLUSTER, forget, needs=[deleted])
    return graph


def run(graph: Graph, vnf_instance: Any) -> Progress:
    """Run a graph that contacts no VM, as its own operation."""
    progress = Progress(graph.operation,
                        tacker_objects.instance_id(vnf_instance))
    engine.run(graph, progress,
               parallel=CONF.kubernetes_mgmt.max_parallel_hosts)
    return progress

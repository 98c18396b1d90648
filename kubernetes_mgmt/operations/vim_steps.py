"""The steps that give up the cluster's VIM (terminate, and heal of the
whole VNF before the stack is rebuilt), and how such a graph runs: as an
operation of its own that contacts no VM."""
from __future__ import annotations

from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.engine import runner
from kubernetes_mgmt.engine.graph import CLUSTER, Graph, Step
from kubernetes_mgmt.engine.progress import Progress
from kubernetes_mgmt.operations.request import InstanceStore
from kubernetes_mgmt.state.instance_state import DriverState
from kubernetes_mgmt.vim.release import refuse_if_in_use, release_vim


def check_unused(graph: Graph, store: InstanceStore, instance_id: str,
                 state: DriverState, operation: str) -> Step:
    """Refuses, naming them, while CNF instances use the cluster."""
    return graph.add('check no CNF uses the VIM', CLUSTER,
                     lambda _: refuse_if_in_use(store.vims, instance_id,
                                                state, operation))


def delete_vim(graph: Graph, store: InstanceStore, instance_id: str,
               state: DriverState, needs: list[Step] | None = None) -> Step:
    """The VIM deleted (a missing one is fine), and the instance's VIM
    connection naming it dropped."""
    def delete(_) -> None:
        vim_id = release_vim(store.vims, instance_id, state)
        if vim_id:
            store.remove_vim_connection(vim_id)

    return graph.add('delete VIM', CLUSTER, delete, needs=needs or [])


def run_offline(graph: Graph, instance_id: str) -> Progress:
    """Run a graph that contacts no VM, as its own operation."""
    progress = Progress(graph.operation, instance_id)
    runner.run(graph, progress,
               parallel=CONF.kubernetes_mgmt.max_parallel_hosts)
    return progress

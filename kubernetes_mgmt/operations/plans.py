"""The graphs an operation would run on a cluster, built without
touching any host: what ``kubernetes-mgmt plan`` prints.

Each operation is given the cluster plan (from the Heat stack and the
instantiate request) and the nodes it concerns; the graphs are the very
ones the hooks build, with no SSH sessions behind them (their checks and
actions are never called here).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from kubernetes_mgmt.cluster.cluster_plan import ClusterPlan, Node
from kubernetes_mgmt.cluster.placement import node_labels
from kubernetes_mgmt.engine.graph import Graph
from kubernetes_mgmt.engine.progress import Progress
from kubernetes_mgmt.errors import Problem, ValidationError
from kubernetes_mgmt.operations import heal, rebuild, scale, terminate
from kubernetes_mgmt.operations.context import Day2
from kubernetes_mgmt.operations.instantiate import install_graph
from kubernetes_mgmt.state.instance_state import DriverState
from kubernetes_mgmt.steps.cluster_setup import ClusterSetup
from kubernetes_mgmt.topology.hosts import Role

OPERATIONS = ('instantiate', 'scale-out', 'scale-in', 'heal',
              'heal-whole', 'terminate')


def graphs(operation: str, plan: ClusterPlan,
           nodes: Sequence[str] = ()) -> list[Graph]:
    """The graphs of ``operation`` (one per Tacker hook that has work),
    for the nodes named (scale and heal; default: the last worker, and
    for heal the last worker and, in HA, the last master)."""
    if operation not in OPERATIONS:
        raise ValueError(f'unknown operation {operation!r}; one of '
                         f'{", ".join(OPERATIONS)}')
    if operation == 'instantiate':
        return [_install(operation, plan)]
    if operation == 'heal-whole':
        return [rebuild.rebuild_start_graph(None, None, DriverState()),
                _install('heal (whole VNF)', plan)]
    if operation == 'terminate':
        state = DriverState()
        return [terminate.terminate_start_graph(None, None, state),
                terminate.terminate_end_graph(None, None, state)]
    chosen = _chosen(plan, operation, nodes)
    if operation == 'scale-out':
        op, setup = _day2('scale-out', plan)
        return [scale.scale_out_graph(op, setup, chosen, _labels(plan,
                                                                 chosen))]
    if operation == 'scale-in':
        staying = dataclasses.replace(plan, workers=tuple(
            w for w in plan.workers if w not in chosen))
        op, setup = _day2('scale-in', staying)
        return [scale.scale_in_graph(op, setup, chosen, ())]
    op, setup = _day2('heal', plan)
    targets = [heal.Target(n.host.server_id, n.host.server_id, n.name,
                           n.host.role.value, n.ip) for n in chosen]
    return [heal.heal_start_graph(op, setup, targets),
            heal.heal_end_graph(op, setup, chosen, (),
                                _labels(plan, chosen))]


def _install(operation: str, plan: ClusterPlan) -> Graph:
    setup = ClusterSetup(plan, None, Progress(operation, plan.instance_id),
                         installs=True)
    return install_graph(operation, setup, _labels(plan, plan.nodes),
                         DriverState(), lambda admin: None)


def _day2(operation: str, plan: ClusterPlan) -> tuple[Day2, ClusterSetup]:
    progress = Progress(operation, plan.instance_id)
    op = Day2(operation, None, None, plan.params, DriverState(), progress)
    return op, ClusterSetup(plan, None, progress)


def _labels(plan: ClusterPlan, nodes: Sequence[Node]) -> dict:
    return node_labels(plan.topology, nodes, {})


def _chosen(plan: ClusterPlan, operation: str,
            names: Sequence[str]) -> list[Node]:
    by_name = {n.name: n for n in plan.nodes}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValidationError([Problem(
            '--node', f'{", ".join(unknown)}: not a node of stack '
            f'{plan.topology.stack_id}; its nodes are '
            f'{", ".join(sorted(by_name))}')])
    chosen = [by_name[n] for n in names] or _default(plan, operation)
    masters = [n for n in chosen if n.host.role is Role.MASTER]
    if masters and operation != 'heal':
        raise ValidationError([Problem(
            '--node', f'{masters[0].name} is a master: only workers '
            'scale')])
    if masters and len(masters) == len(plan.masters):
        raise ValidationError([Problem(
            '--node', 'every master would be healed: at least one must '
            'stay (heal-whole rebuilds the cluster)')])
    return chosen


def _default(plan: ClusterPlan, operation: str) -> list[Node]:
    chosen = list(plan.workers[-1:])
    if operation == 'heal' and len(plan.masters) > 1:
        chosen.insert(0, plan.masters[-1])
    if not chosen:
        raise ValidationError([Problem(
            '--node', f'the cluster has no worker to {operation}; name '
            'the nodes')])
    return chosen

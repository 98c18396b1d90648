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
from pathlib import Path
from typing import Any

from kubernetes_mgmt.cluster.cluster_plan import ClusterPlan, Node
from kubernetes_mgmt.cluster.placement import node_labels
from kubernetes_mgmt.engine.graph import Graph
from kubernetes_mgmt.engine.progress import Progress
from kubernetes_mgmt.errors import Problem, ValidationError
from kubernetes_mgmt.operations import (
    heal,
    install,
    rebuild,
    scale,
    terminate,
    upgrade,
)
from kubernetes_mgmt.operations.context import OperationContext, plan_only
from kubernetes_mgmt.operations.request import OperationRequest
from kubernetes_mgmt.params.cluster_params import ClusterParams
from kubernetes_mgmt.params.upgrade_request import UpgradeOptions
from kubernetes_mgmt.params.versions import Minor
from kubernetes_mgmt.state.instance_state import DriverState
from kubernetes_mgmt.steps.runtime import PlanOnlyError
from kubernetes_mgmt.steps.upgrade_actions import Upgrade
from kubernetes_mgmt.topology.hosts import Role
from kubernetes_mgmt.vim.registry import SiteVims

OPERATIONS = ('instantiate', 'scale-out', 'scale-in', 'heal',
              'heal-whole', 'terminate', 'upgrade')


def graphs(operation: str, plan: ClusterPlan,
           nodes: Sequence[str] = ()) -> list[Graph]:
    """The graphs of ``operation`` (one per Tacker hook that has work),
    for the nodes named (scale and heal; default: the last worker, and
    for heal the last worker and, in HA, the last master)."""
    if operation not in OPERATIONS:
        raise ValueError(f'unknown operation {operation!r}; one of '
                         f'{", ".join(OPERATIONS)}')
    store, state = PlanStore(), DriverState()
    if operation == 'instantiate':
        return [_install(operation, plan)]
    if operation == 'heal-whole':
        return [rebuild.rebuild_start_graph(store, plan.instance_id, state),
                _install(rebuild.INSTALL, plan)]
    if operation == 'upgrade':
        return [_upgrade(plan)]
    if operation == 'terminate':
        return [terminate.terminate_start_graph(store, plan.instance_id,
                                                state),
                terminate.terminate_end_graph(store, plan.instance_id,
                                              state)]
    chosen = _chosen(plan, operation, nodes)
    if operation == 'scale-out':
        op = _context('scale-out', plan)
        return [scale.scale_out_graph(op, plan_only(plan, op.operation),
                                      chosen, _labels(plan, chosen))]
    if operation == 'scale-in':
        staying = dataclasses.replace(plan, workers=tuple(
            w for w in plan.workers if w not in chosen))
        op = _context('scale-in', staying)
        return [scale.scale_in_graph(op, plan_only(staying, op.operation),
                                     chosen, ())]
    op = _context('heal', plan)
    setup = plan_only(plan, op.operation)
    targets = [heal.Target(n.host.server_id, n.host.server_id, n.name,
                           n.host.role.value, n.ip) for n in chosen]
    return [heal.heal_start_graph(op, setup, targets,
                                  heal.guard_limits(lifted=False)),
            heal.heal_end_graph(op, setup, chosen, (),
                                _labels(plan, chosen))]


def _install(operation: str, plan: ClusterPlan) -> Graph:
    return install.install_graph(operation, plan_only(plan, operation),
                                 _labels(plan, plan.nodes), DriverState(),
                                 _never_registers)


def _upgrade(plan: ClusterPlan) -> Graph:
    """To the minor after the plan's, one worker at a time."""
    op = _context(upgrade.OPERATION, plan)
    minor = Minor.parse(plan.kubernetes_version)
    assert minor is not None
    return upgrade.upgrade_graph(op, Upgrade(
        plan_only(plan, op.operation), minor.next(), UpgradeOptions()))


def _never_registers(_admin: Any) -> None:
    raise PlanOnlyError('this graph only plans: no VIM is registered')


def _context(operation: str, plan: ClusterPlan) -> OperationContext:
    request = OperationRequest(plan.instance_id, plan.params,
                               plan.topology.stack_id)
    return OperationContext(operation, request, PlanStore(), DriverState(),
                            Progress(operation, plan.instance_id))


class PlanStore:
    """The instance store of a printed plan: no stored state, and
    nothing stored in or asked of Tacker (a step that would is never
    run). ``kubernetes-mgmt plan`` gives it the stack's Heat client and
    the package directory to read the cluster plan with."""

    def __init__(self, heat: Any = None, package_root: Path | None = None):
        self._heat = heat
        self._root = package_root

    def load(self) -> DriverState:
        return DriverState()

    def heat(self) -> Any:
        return self._heat if self._heat is not None else self._refuse()

    def package_root(self) -> Path:
        return self._root if self._root is not None else self._refuse()

    @property
    def vims(self) -> SiteVims:
        return self._refuse()

    def _refuse(self, *_args: Any) -> Any:
        raise PlanOnlyError('this graph only plans: Tacker is not asked')

    save = forget = add_vim_connection = remove_vim_connection = _refuse
    publish = _refuse


def cluster_plan(params: ClusterParams, stack_id: str, heat: Any,
                 package_root: Path) -> ClusterPlan:
    """The cluster plan of a stack, read as an install reads it (no
    stored state: today's configuration), for ``kubernetes-mgmt plan``."""
    request = OperationRequest('(plan)', params, stack_id)
    return OperationContext.open('plan', request, PlanStore(
        heat, package_root)).read_plan(install=True)



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

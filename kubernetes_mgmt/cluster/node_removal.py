"""Taking a node out of the cluster: cordon, drain, delete.

Run with kubectl on a control-plane node that stays; the leaving VM itself
is never contacted (it may be broken, which is why it is healed). Each
step checks first, so repeating a removal is harmless.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster.conditions import is_ready
from kubernetes_mgmt.cluster.disruption import blocking_budgets
from kubernetes_mgmt.errors import CommandFailed, MgmtDriverError
from kubernetes_mgmt.remote.kubectl import kubectl
from kubernetes_mgmt.remote.ssh import SshSession

LOG = redact.get_logger(__name__)
# Beyond drain's own --timeout: kubectl's start and its last eviction.
_DRAIN_GRACE = 60


class DrainFailed(MgmtDriverError):
    """A node could not be drained in time; it is cordoned, not deleted."""


@dataclass(frozen=True)
class NodeStatus:
    name: str
    ready: bool
    unschedulable: bool


def node_status(session: SshSession, name: str) -> NodeStatus | None:
    """The node called exactly ``name``, or None if there is none."""
    out = kubectl(session, ['get', 'nodes', '-o', 'json'],
                  step='list nodes').stdout
    for item in json.loads(out).get('items', []):
        if item.get('metadata', {}).get('name') == name:
            return NodeStatus(
                name=name,
                ready=is_ready(item),
                unschedulable=bool(item.get('spec', {}).get(
                    'unschedulable')))
    return None


def remove_node(session: SshSession, name: str, *,
                drain_timeout: int) -> bool:
    """Cordon, drain and delete node ``name``; False if it was not there.

    The drain evicts the pods of every namespace, skips DaemonSet pods,
    allows emptyDir data to go, and honours PodDisruptionBudgets for up
    to ``drain_timeout`` seconds; then DrainFailed says which pods held
    it, and the node stays (cordoned). A NotReady node is not drained:
    its kubelet cannot confirm evictions, so the drain could only time
    out; deleting it lets the controllers recreate its pods elsewhere.
    """
    status = node_status(session, name)
    if status is None:
        LOG.info('node %s is not registered: nothing to remove', name)
        return False
    if status.ready:
        drain_node(session, name, drain_timeout,
                   afterwards='The node is cordoned and was not deleted.')
    else:
        kubectl(session, ['cordon', name], step=f'cordon {name}')
        LOG.warning('node %s is NotReady: cordoned and deleted without a '
                    'drain; its pods are rescheduled elsewhere', name)
    kubectl(session, ['delete', 'node', name, '--ignore-not-found'],
            step=f'delete node {name}')
    LOG.info('node %s removed from the cluster', name)
    return True


def drain_node(session: SshSession, name: str, timeout: int, *,
               afterwards: str, setting: str = '[kubernetes_mgmt] '
               'drain_timeout') -> None:
    """Cordon and drain node ``name``: every namespace's pods evicted
    but DaemonSet pods, emptyDir data allowed to go, PodDisruptionBudgets
    honoured for up to ``timeout`` seconds. Then DrainFailed names the
    budgets that still hold pods on the node, and the node stays
    cordoned (``afterwards`` says what else the operation left as it
    was; ``setting``: where the timeout is set)."""
    kubectl(session, ['cordon', name], step=f'cordon {name}')
    try:
        kubectl(session, ['drain', name, '--ignore-daemonsets',
                          '--delete-emptydir-data', f'--timeout={timeout}s'],
                step=f'drain {name}', timeout=timeout + _DRAIN_GRACE)
    except CommandFailed as exc:
        detail = (exc.stderr.strip() or exc.stdout.strip())[-1500:]
        budgets = blocking_budgets(session, name)
        held = ('; held by ' + '; '.join(map(str, budgets))
                if budgets else '')
        raise DrainFailed(
            f'[{exc.host}] node {name} could not be drained within '
            f'{timeout} s ({setting}){held}: {detail}\n'
            f'{afterwards} A PodDisruptionBudget that allows no '
            'disruption blocks a drain: scale its workload up or relax '
            'the budget (or raise the timeout), then run the operation '
            'again.') from None


def uncordon(session: SshSession, name: str) -> None:
    """Node ``name`` schedulable again (harmless when it already is)."""
    kubectl(session, ['uncordon', name], step=f'uncordon {name}')

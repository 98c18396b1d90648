"""Which master runs kubectl, etcdctl and refresh-join for an operation
after instantiate, and how long to wait for nodes outside it.

Nodes outside an operation (bystanders) were running before, so they are
given a short connect deadline (``bystander_connect_deadline``): a VM
that is down must not hold the operation for ``ssh_connect_deadline``.
They are reached through the operation's own sessions, so the master
chosen here is connected once for the whole operation.
"""
from __future__ import annotations

import json
from collections.abc import Sequence

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster.cluster_plan import Node
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.remote.kubectl import kubectl
from kubernetes_mgmt.remote.ssh import Sessions, SshSession

LOG = redact.get_logger(__name__)
# A master whose API server does not answer is not waited for long: the
# next master is tried instead.
API_RETRY = 5.0


def bystander_session(sessions: Sessions, node: Node) -> SshSession:
    """The operation's connection to ``node``, made with the short
    bystander deadline if it is not connected yet."""
    return sessions.get(node.endpoint, deadline=CONF.kubernetes_mgmt
                        .bystander_connect_deadline)


def reachable_ready_master(operation: str, candidates: Sequence[Node],
                           sessions: Sessions) -> Node:
    """The first of ``candidates`` that answers SSH and whose own node is
    Ready as its API server reports it. A master that fails either is
    skipped with a warning; none left is an error naming every master
    tried and why."""
    tried: list[str] = []
    for node in candidates:
        reason = _unusable(sessions, node)
        if reason is None:
            return node
        LOG.warning('%s: master %s (%s) cannot run the cluster '
                    'operations: %s; trying the next master',
                    operation, node.name, node.ip, reason)
        tried.append(f'{node.name} ({node.ip}): {reason}')
    raise MgmtDriverError(
        f'{operation}: no master can run the cluster operations (kubectl, '
        'etcdctl, join credentials); tried: ' + '; '.join(tried))


def _unusable(sessions: Sessions, node: Node) -> str | None:
    """Why ``node`` cannot be the helper master, or None."""
    try:
        session = bystander_session(sessions, node)
        result = kubectl(session, ['get', 'node', node.name, '-o', 'json'],
                         step='check master Ready', check=False,
                         unreachable_retry=API_RETRY)
    except MgmtDriverError as exc:
        return f'not reachable: {exc}'
    if result.exit_status != 0:
        return (f'kubectl get node failed: '
                f'{(result.stderr or result.stdout).strip()[-300:]}')
    try:
        conditions = json.loads(result.stdout)['status']['conditions']
    except (ValueError, KeyError, TypeError):
        return 'kubectl gave no node status'
    if not any(c.get('type') == 'Ready' and c.get('status') == 'True'
               for c in conditions if isinstance(c, dict)):
        return 'its node is NotReady'
    return None

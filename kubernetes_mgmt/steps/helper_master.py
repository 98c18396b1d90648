"""Which master runs kubectl, etcdctl and refresh-join for an operation
after instantiate.

A master is usable when it answers SSH (with the short bystander connect
deadline: it was running before, and one that is down must not hold the
operation) and its API server reports its own node Ready. The choice is
the result of the operation's ``choose master`` step; the steps that
talk to the cluster receive it from there.
"""
from __future__ import annotations

from collections.abc import Sequence

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster.api_server import own_node_unusable
from kubernetes_mgmt.cluster.cluster_plan import Node
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.steps.runtime import Runtime

LOG = redact.get_logger(__name__)
# A master whose API server does not answer is not waited for long: the
# next master is tried instead.
API_RETRY = 5.0


def reachable_ready_master(operation: str, candidates: Sequence[Node],
                           runtime: Runtime) -> Node:
    """The first of ``candidates`` that answers SSH and whose own node is
    Ready. A master that fails either is skipped with a warning; none
    left is an error naming every master tried and why."""
    tried: list[str] = []
    for node in candidates:
        reason = _unusable(runtime, node)
        if reason is None:
            return node
        LOG.warning('%s: master %s (%s) cannot run the cluster '
                    'operations: %s; trying the next master',
                    operation, node.name, node.ip, reason)
        tried.append(f'{node.name} ({node.ip}): {reason}')
    raise MgmtDriverError(
        f'{operation}: no master can run the cluster operations (kubectl, '
        'etcdctl, join credentials); tried: ' + '; '.join(tried))


def _unusable(runtime: Runtime, node: Node) -> str | None:
    try:
        session = runtime.bystander_session(node)
    except MgmtDriverError as exc:
        return f'not reachable: {exc}'
    return own_node_unusable(session, node.name, unreachable_retry=API_RETRY)

"""Which PodDisruptionBudgets hold pods on a node: what a drain that
timed out names, so the operator knows which budget to relax."""
from __future__ import annotations

import json
from dataclasses import dataclass

from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.remote.kubectl import kubectl
from kubernetes_mgmt.remote.ssh import SshSession


@dataclass(frozen=True)
class Budget:
    namespace: str
    name: str
    pods: tuple[str, ...]               # its pods still on the node
    disruptions_allowed: int | None     # as the budget's status says

    def __str__(self) -> str:
        allowed = ('' if self.disruptions_allowed is None else
                   f', {self.disruptions_allowed} disruption(s) allowed')
        return (f'PodDisruptionBudget {self.namespace}/{self.name} '
                f'(pods {", ".join(self.pods)}{allowed})')


def _selects(budget: dict, pod: dict) -> bool:
    """The budget's selector (matchLabels and matchExpressions In/NotIn/
    Exists/DoesNotExist) selects ``pod`` of the same namespace."""
    if budget['metadata'].get('namespace') != pod['metadata'].get(
            'namespace'):
        return False
    selector = (budget.get('spec') or {}).get('selector') or {}
    labels = pod['metadata'].get('labels') or {}
    if not selector:
        return False
    if any(labels.get(k) != v
           for k, v in (selector.get('matchLabels') or {}).items()):
        return False
    return all(_matches(e, labels)
               for e in selector.get('matchExpressions') or [])


def _matches(expression: dict, labels: dict) -> bool:
    key, operator = expression.get('key'), expression.get('operator')
    values = expression.get('values') or []
    if operator == 'In':
        return labels.get(key) in values
    if operator == 'NotIn':
        return labels.get(key) not in values
    if operator == 'Exists':
        return key in labels
    if operator == 'DoesNotExist':
        return key not in labels
    return False


def budgets_holding(pods: list[dict], budgets: list[dict]) -> list[Budget]:
    """The budgets that select any of ``pods`` (the pods left on a
    node), with those pods."""
    found = []
    for budget in budgets:
        held = tuple(p['metadata']['name'] for p in pods
                     if _selects(budget, p))
        if held:
            status = budget.get('status') or {}
            found.append(Budget(budget['metadata'].get('namespace', ''),
                                budget['metadata']['name'], held,
                                status.get('disruptionsAllowed')))
    return found


def blocking_budgets(session: SshSession, node: str) -> list[Budget]:
    """The budgets of the pods still on ``node`` (DaemonSet pods are
    never evicted and not counted). Best effort: an empty list when the
    API cannot tell."""
    try:
        pods = json.loads(kubectl(
            session, ['get', 'pods', '--all-namespaces', '--field-selector',
                      f'spec.nodeName={node}', '-o', 'json'],
            step=f'pods on {node}').stdout).get('items', [])
        budgets = json.loads(kubectl(
            session, ['get', 'poddisruptionbudgets', '--all-namespaces',
                      '-o', 'json'],
            step='list PodDisruptionBudgets').stdout).get('items', [])
    except (MgmtDriverError, ValueError):
        return []
    evictable = [p for p in pods if not any(
        o.get('kind') == 'DaemonSet'
        for o in p['metadata'].get('ownerReferences') or [])]
    return budgets_holding(evictable, budgets)

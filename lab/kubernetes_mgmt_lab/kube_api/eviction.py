"""The eviction subresource of pods, honouring PodDisruptionBudgets.

``kubectl drain`` evicts each pod (``POST .../pods/NAME/eviction``) and
retries while the API answers 429: the pod's budget allows no
disruption now. A pod that is not Ready may always go, as the default
``unhealthyPodEvictionPolicy`` (IfHealthyBudget) lets it when the budget
holds.
"""
from __future__ import annotations

import math

from kubernetes_mgmt_lab.kube_api import controllers
from kubernetes_mgmt_lab.kube_api.status import ApiError
from kubernetes_mgmt_lab.kube_api.store import Store


def _selects(pdb: dict, pod: dict) -> bool:
    selector = (pdb.get('spec') or {}).get('selector') or {}
    wanted = selector.get('matchLabels') or {}
    labels = pod['metadata'].get('labels') or {}
    return bool(wanted) and all(labels.get(k) == v
                                for k, v in wanted.items())


def _count(value: object, expected: int, round_up: bool) -> int:
    """An int-or-percent of a budget, against ``expected`` pods."""
    if isinstance(value, str) and value.endswith('%'):
        share = expected * int(value[:-1]) / 100
        return math.ceil(share) if round_up else math.floor(share)
    return int(value)


def _desired_healthy(pdb: dict, expected: int) -> int:
    spec = pdb.get('spec') or {}
    if 'maxUnavailable' in spec:
        return expected - _count(spec['maxUnavailable'], expected, False)
    return _count(spec.get('minAvailable', 0), expected, True)


def budget_status(store: Store, pdb: dict) -> dict:
    """What the disruption controller writes into a budget's status."""
    namespace = pdb['metadata']['namespace']
    pods = [p for p in store.of_kind('Pod', namespace)
            if _selects(pdb, p) and not controllers.terminating(p)]
    healthy = sum(1 for p in pods if controllers.pod_ready(p))
    desired = _desired_healthy(pdb, len(pods))
    return {'expectedPods': len(pods), 'currentHealthy': healthy,
            'desiredHealthy': desired,
            'disruptionsAllowed': max(0, healthy - desired)}


def check(store: Store, pod: dict) -> None:
    """Raise the API's answer when evicting ``pod`` is not allowed now."""
    namespace = pod['metadata']['namespace']
    budgets = [b for b in store.of_kind('PodDisruptionBudget', namespace)
               if _selects(b, pod)]
    if len(budgets) > 1:
        raise ApiError(500, 'This pod has more than one '
                       'PodDisruptionBudget, which the eviction '
                       'subresource does not support.')
    if not budgets or not controllers.pod_ready(pod):
        return
    status = budget_status(store, budgets[0])
    if status['disruptionsAllowed'] > 0:
        return
    name = budgets[0]['metadata']['name']
    raise ApiError(
        429, "Cannot evict pod as it would violate the pod's disruption "
        'budget.', 'TooManyRequests',
        details={'causes': [{
            'reason': 'DisruptionBudget',
            'message': f'The disruption budget {name} needs '
                       f'{status["desiredHealthy"]} healthy pods and has '
                       f'{status["currentHealthy"]} currently'}]})

"""When is a created object ready? Read from its status, by kind.

Kinds without a rule are ready once they exist (ConfigMap, Service,
Role ...). A reason string means "not yet", and says why.
"""
from __future__ import annotations

from collections.abc import Callable

from kubernetes_mgmt.cluster.conditions import is_ready


def _count(status: dict, key: str) -> int:
    return int(status.get(key) or 0)     # the API omits zero counts


def _generation_seen(obj: dict) -> str | None:
    generation = obj.get('metadata', {}).get('generation')
    observed = obj.get('status', {}).get('observedGeneration')
    if generation is not None and (observed or 0) < generation:
        return (f'controller has not seen generation {generation} yet '
                f'(observed {observed})')
    return None


def _replicas_ready(*keys: str) -> Callable[[dict], str | None]:
    def check(obj: dict) -> str | None:
        seen = _generation_seen(obj)
        if seen:
            return seen
        wanted = obj.get('spec', {}).get('replicas')
        wanted = 1 if wanted is None else int(wanted)
        status = obj.get('status') or {}
        for key in keys:
            if _count(status, key) != wanted:
                return f'{key} {_count(status, key)}/{wanted}'
        if _count(status, 'replicas') != wanted:
            return f'replicas {_count(status, "replicas")}/{wanted}'
        return None
    return check


def _daemonset(obj: dict) -> str | None:
    status = obj.get('status') or {}
    wanted = _count(status, 'desiredNumberScheduled')
    ready = _count(status, 'numberReady')
    return _generation_seen(obj) or (
        None if ready == wanted else f'numberReady {ready}/{wanted}')


def _job(obj: dict) -> str | None:
    wanted = int(obj.get('spec', {}).get('completions') or 1)
    done = _count(obj.get('status') or {}, 'succeeded')
    return None if done >= wanted else f'succeeded {done}/{wanted}'


def _claim(obj: dict) -> str | None:
    phase = (obj.get('status') or {}).get('phase')
    return None if phase == 'Bound' else f'phase {phase or "unknown"}'


def _pod(obj: dict) -> str | None:
    if is_ready(obj):
        return None
    return f'phase {(obj.get("status") or {}).get("phase") or "unknown"}'


_RULES: dict[str, Callable[[dict], str | None]] = {
    'Deployment': _replicas_ready('updatedReplicas', 'readyReplicas',
                                  'availableReplicas'),
    'StatefulSet': _replicas_ready('readyReplicas'),
    'ReplicaSet': _replicas_ready('readyReplicas'),
    'DaemonSet': _daemonset,
    'Job': _job,
    'PersistentVolumeClaim': _claim,
    'Pod': _pod,
}


def not_ready(kind: str, obj: dict) -> str | None:
    """Why ``obj`` is not ready yet, or None when it is."""
    rule = _RULES.get(kind)
    return rule(obj) if rule else None

"""The pods of a workload: selected by the workload's labels, and named
after it (so a pod of another workload with the same labels is not
counted)."""
from __future__ import annotations

from dataclasses import dataclass

from kubernetes_mgmt.cluster.conditions import is_ready
from kubernetes_mgmt.cnf.errors import CnfError
from kubernetes_mgmt.cnf.kube import KubeSession


@dataclass(frozen=True)
class PodView:
    name: str
    ready: bool
    terminating: bool
    created: str
    metadata: dict


def selector(workload: dict) -> str:
    spec_selector = (workload.get('spec') or {}).get('selector') or {}
    labels = spec_selector.get('matchLabels') or {}
    if not labels:
        meta = workload.get('metadata', {})
        raise CnfError(f'{workload.get("kind")}/{meta.get("name")} has no '
                       'spec.selector.matchLabels: cannot find its pods')
    return ','.join(f'{k}={v}' for k, v in sorted(labels.items()))


def of_workload(session: KubeSession, workload: dict,
                namespace: str) -> list[PodView]:
    """Pods of ``workload``, oldest first."""
    pod_resource = session.resource('v1', 'Pod')
    name = workload['metadata']['name']
    views = []
    for pod in session.list(pod_resource, namespace, selector(workload)):
        meta = pod.get('metadata') or {}
        if not meta.get('name', '').startswith(f'{name}-'):
            continue
        views.append(PodView(
            name=meta['name'], ready=is_ready(pod),
            terminating=bool(meta.get('deletionTimestamp')),
            created=meta.get('creationTimestamp') or '', metadata=meta))
    return sorted(views, key=lambda v: (v.created, v.name))


def settled(pods: list[PodView], wanted: int) -> str | None:
    """None once exactly ``wanted`` pods run, all ready, none leaving."""
    leaving = [p.name for p in pods if p.terminating]
    alive = [p for p in pods if not p.terminating]
    ready = [p for p in alive if p.ready]
    if leaving:
        return f'pods still terminating: {", ".join(leaving)}'
    if len(alive) != wanted or len(ready) != wanted:
        return f'{len(ready)} ready of {len(alive)} pods, want {wanted}'
    return None

"""Tiny stand-ins for kube-controller-manager, kubelet and the garbage
collector.

They run at the start of every request (``advance``), so whatever a
client reads has already been reconciled, and time-driven changes (a pod
becoming Ready, a terminating object disappearing) happen once their
moment has passed: no background thread, no sleep.

Simplification: a Deployment owns its pods directly (no ReplicaSet in
between); pod names still follow the real ``<name>-<hash>-<suffix>``
pattern and carry the ``pod-template-hash`` label.
"""
from __future__ import annotations

import copy
import hashlib
import json
import random
from dataclasses import dataclass

from kubernetes_mgmt_lab.kube_api import catalog, scheduling, volumes
from kubernetes_mgmt_lab.kube_api.store import Key, Store, key_of, timestamp

WORKLOADS = ('Deployment', 'ReplicaSet', 'StatefulSet', 'DaemonSet', 'Job')
_SUFFIX_CHARS = 'bcdfghjklmnpqrstvwxz2456789'   # as Kubernetes picks them
_POD = catalog.by_kind('Pod')


@dataclass(frozen=True)
class Timing:
    """How long simulated transitions take, in seconds."""

    pod_ready_after: float = 0.05
    terminate_after: float = 0.05


def terminating(obj: dict) -> bool:
    return bool(obj['metadata'].get('deletionTimestamp'))


def owner_uid(obj: dict) -> str | None:
    for ref in obj['metadata'].get('ownerReferences') or []:
        if ref.get('controller'):
            return ref.get('uid')
    return None


def pod_ready(pod: dict) -> bool:
    return any(c.get('type') == 'Ready' and c.get('status') == 'True'
               for c in pod.get('status', {}).get('conditions') or [])


def mark_terminating(store: Store, key: Key, timing: Timing,
                     grace: int | None = None) -> None:
    obj = store.objects[key]
    meta = obj['metadata']
    if terminating(obj):
        return
    meta['deletionTimestamp'] = timestamp()
    meta['deletionGracePeriodSeconds'] = 30 if grace is None else grace
    store.gone_at[key] = store.clock() + timing.terminate_after
    store.touch(key)


def dependents(store: Store, owner: dict) -> list[Key]:
    uid = owner['metadata']['uid']
    return [key for key, obj in store.objects.items()
            if owner_uid(obj) == uid]


def new_pod(store: Store, owner: dict, name: str, timing: Timing,
            node: str | None = None) -> None:
    template = owner['spec'].get('template', {})
    meta = copy.deepcopy(template.get('metadata') or {})
    labels = meta.setdefault('labels', {})
    if owner['kind'] == 'Deployment':
        labels['pod-template-hash'] = _template_hash(template)
    meta.update(name=name, namespace=owner['metadata']['namespace'],
                ownerReferences=[{
                    'apiVersion': owner['apiVersion'], 'kind': owner['kind'],
                    'name': owner['metadata']['name'],
                    'uid': owner['metadata']['uid'], 'controller': True,
                    'blockOwnerDeletion': True}])
    pod = {'metadata': meta,
           'spec': copy.deepcopy(template.get('spec') or {}),
           'status': {'phase': 'Pending'}}
    if node:
        pod['spec']['nodeName'] = node
    start_pod(store, store.put_new(_POD, pod), timing)


def start_pod(store: Store, pod: dict, timing: Timing) -> None:
    """Schedule a new pod: Pending now, Running+Ready a moment later on
    the node chosen for it; Pending and Unschedulable when none fits."""
    node = pod['spec'].get('nodeName') or scheduling.choose(store, pod)
    if node is None:
        scheduling.unschedulable(pod)
        return
    pod['spec']['nodeName'] = node
    pod['status'] = {'phase': 'Pending'}
    key = key_of(_POD, pod['metadata']['namespace'], pod['metadata']['name'])
    store.ready_at[key] = store.clock() + timing.pod_ready_after


def _schedule_pending(store: Store, timing: Timing) -> None:
    for pod in store.of_kind('Pod'):
        if pod['spec'].get('nodeName') or terminating(pod):
            continue
        start_pod(store, pod, timing)
        if pod['spec'].get('nodeName'):
            store.touch(key_of(_POD, pod['metadata']['namespace'],
                               pod['metadata']['name']))


def _template_hash(template: dict) -> str:
    digest = hashlib.sha256(
        json.dumps(template, sort_keys=True).encode()).hexdigest()
    return digest[:10]


def random_suffix() -> str:
    return ''.join(random.choice(_SUFFIX_CHARS)  # noqa: S311 (names only)
                   for _ in range(5))


def _pod_name(store: Store, owner: dict, taken: set[str]) -> str:
    name = owner['metadata']['name']
    if owner['kind'] == 'Deployment':
        name = f'{name}-{_template_hash(owner["spec"].get("template", {}))}'
    while True:
        candidate = f'{name}-{random_suffix()}'
        if candidate not in taken:
            return candidate


def _desired(store: Store, owner: dict) -> int:
    if owner['kind'] == 'Job':
        return int(owner['spec'].get('completions') or 1)
    replicas = owner['spec'].get('replicas')
    return 1 if replicas is None else int(replicas)


def _owned_pods(store: Store, owner: dict) -> list[tuple[Key, dict]]:
    uid = owner['metadata']['uid']
    return [(key, obj) for key, obj in store.objects.items()
            if key[0] == 'Pod' and owner_uid(obj) == uid]


def _reconcile_statefulset(store: Store, owner: dict,
                           timing: Timing) -> None:
    """Pods ``<name>-0`` .. ``<name>-(n-1)``: a missing ordinal comes
    back under its old name once its predecessor is completely gone."""
    pods = {p['metadata']['name']: k for k, p in _owned_pods(store, owner)}
    name = owner['metadata']['name']
    desired = _desired(store, owner)
    for ordinal in range(desired):
        if f'{name}-{ordinal}' not in pods:
            new_pod(store, owner, f'{name}-{ordinal}', timing)
    for pod_name, key in pods.items():
        if int(pod_name.rsplit('-', 1)[1]) >= desired:
            mark_terminating(store, key, timing)
    _update_status(store, owner)


def _reconcile_daemonset(store: Store, owner: dict,
                         timing: Timing) -> None:
    """One pod on each node that fits its template; none elsewhere."""
    template = owner['spec'].get('template') or {}
    nodes = scheduling.daemon_nodes(store, {
        'metadata': template.get('metadata') or {},
        'spec': template.get('spec') or {}})
    placed: dict[str, Key] = {}
    for key, pod in _owned_pods(store, owner):
        if terminating(pod):
            continue
        node = pod['spec'].get('nodeName')
        if node in nodes and node not in placed:
            placed[node] = key
        else:
            mark_terminating(store, key, timing)
    taken = {p['metadata']['name'] for _, p in _owned_pods(store, owner)}
    for node in nodes:
        if node not in placed:
            name = _pod_name(store, owner, taken)
            taken.add(name)
            new_pod(store, owner, name, timing, node=node)
    _update_status(store, owner)


def _reconcile_workload(store: Store, owner: dict, timing: Timing) -> None:
    if owner['kind'] == 'StatefulSet':
        _reconcile_statefulset(store, owner, timing)
        return
    if owner['kind'] == 'DaemonSet':
        _reconcile_daemonset(store, owner, timing)
        return
    pods = _owned_pods(store, owner)
    alive = [(k, p) for k, p in pods if not terminating(p)]
    desired = _desired(store, owner)
    taken = {p['metadata']['name'] for _, p in pods}
    for _ in range(desired - len(alive)):
        name = _pod_name(store, owner, taken)
        taken.add(name)
        new_pod(store, owner, name, timing)
    if len(alive) > desired:
        # Newest (highest ordinal for a StatefulSet) go first.
        ranked = sorted(alive, key=lambda kp: (
            kp[1]['metadata']['creationTimestamp'],
            int(kp[1]['metadata']['resourceVersion'])), reverse=True)
        for key, _ in ranked[:len(alive) - desired]:
            mark_terminating(store, key, timing)
    _update_status(store, owner)


def _update_status(store: Store, owner: dict) -> None:
    pods = [p for _, p in _owned_pods(store, owner) if not terminating(p)]
    ready = sum(1 for p in pods if pod_ready(p))
    generation = owner['metadata'].get('generation', 1)
    status = _STATUS[owner['kind']](len(pods), ready, owner, pods)
    status['observedGeneration'] = generation
    # Like the real API, zero counts are left out (omitempty).
    status = {k: v for k, v in status.items() if v not in (0, None)}
    if owner.get('status') != status:
        owner['status'] = status
        store.touch(key_of(catalog.by_kind(owner['kind']),
                           owner['metadata'].get('namespace'),
                           owner['metadata']['name']))


def _deployment_status(total, ready, owner, pods):
    return {'replicas': total, 'updatedReplicas': total,
            'readyReplicas': ready, 'availableReplicas': ready,
            'unavailableReplicas': total - ready,
            'conditions': [{'type': 'Available',
                            'status': str(ready >= _spec_replicas(owner))}]}


def _replicaset_status(total, ready, owner, pods):
    return {'replicas': total, 'fullyLabeledReplicas': total,
            'readyReplicas': ready, 'availableReplicas': ready}


def _statefulset_status(total, ready, owner, pods):
    return {'replicas': total, 'readyReplicas': ready,
            'currentReplicas': total, 'updatedReplicas': total,
            'availableReplicas': ready}


def _daemonset_status(total, ready, owner, pods):
    return {'desiredNumberScheduled': total,
            'currentNumberScheduled': total, 'numberReady': ready,
            'numberAvailable': ready, 'updatedNumberScheduled': total}


def _job_status(total, ready, owner, pods):
    succeeded = sum(1 for p in pods
                    if p['status'].get('phase') == 'Succeeded')
    status = {'active': total - succeeded, 'succeeded': succeeded}
    if succeeded >= int(owner['spec'].get('completions') or 1):
        status['conditions'] = [{'type': 'Complete', 'status': 'True'}]
    return status


def _spec_replicas(owner: dict) -> int:
    replicas = owner['spec'].get('replicas')
    return 1 if replicas is None else int(replicas)


_STATUS = {'Deployment': _deployment_status,
           'ReplicaSet': _replicaset_status,
           'StatefulSet': _statefulset_status,
           'DaemonSet': _daemonset_status,
           'Job': _job_status}


def _start_due_pods(store: Store, now: float) -> None:
    for key, when in list(store.ready_at.items()):
        pod = store.objects.get(key)
        if pod is None or when > now:
            continue
        del store.ready_at[key]
        if terminating(pod):
            continue
        job = any(r.get('kind') == 'Job'
                  for r in pod['metadata'].get('ownerReferences') or [])
        address = int(pod['metadata']['resourceVersion']) % 250
        pod['status'] = {
            'phase': 'Succeeded' if job else 'Running',
            'podIP': f'10.244.0.{address}',
            'conditions': [{'type': 'Ready',
                            'status': 'False' if job else 'True'}]}
        store.touch(key)


def _finish_terminating(store: Store, now: float) -> None:
    # Repeat: removing pods may release their owner in the same moment.
    while _finish_terminating_once(store, now):
        pass


def _finish_terminating_once(store: Store, now: float) -> bool:
    removed = False
    for key, when in list(store.gone_at.items()):
        obj = store.objects.get(key)
        if obj is None:
            store.gone_at.pop(key, None)
            continue
        if when > now:
            continue
        if held(store, key, obj):
            continue
        store.remove(key)
        removed = True
    return removed


def held(store: Store, key: Key, obj: dict) -> bool:
    """Is a terminating object kept a while longer?"""
    if dependents(store, obj):
        return True            # foreground deletion waits for dependents
    if key[0] == 'Namespace':
        return any(k[1] == key[2] for k in store.objects)
    if key[0] == 'PersistentVolume':    # pv-protection: while bound
        return (obj.get('status') or {}).get('phase') == 'Bound'
    return False


def _collect_orphans(store: Store, timing: Timing) -> None:
    uids = {obj['metadata']['uid'] for obj in store.objects.values()}
    for key, obj in list(store.objects.items()):
        uid = owner_uid(obj)
        if uid and uid not in uids:
            mark_terminating(store, key, timing)


def advance(store: Store, timing: Timing) -> None:
    """Bring the whole cluster up to date with the present moment."""
    now = store.clock()
    with store.lock:
        _start_due_pods(store, now)
        _finish_terminating(store, now)
        _schedule_pending(store, timing)
        _collect_orphans(store, timing)
        volumes.bind_claims(store)
        for hook in store.hooks:
            hook(store)
        for kind in WORKLOADS:
            for owner in store.of_kind(kind):
                if not terminating(owner):
                    _reconcile_workload(store, owner, timing)
                else:
                    _update_status(store, owner)
        # What became due just now (zero delays) happens now as well, so
        # a reader of the stored state never sees a step half-taken.
        _start_due_pods(store, now)
        _finish_terminating(store, now)

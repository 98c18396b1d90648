"""Where pods run: a stand-in for kube-scheduler and the DaemonSet
controller's node choice.

A node takes new pods unless it is cordoned (``spec.unschedulable``),
reports a Ready condition other than True (the node lifecycle
controller's ``not-ready`` NoSchedule taint: pods that tolerate it, as
CNI and kube-proxy DaemonSets do, still go there), lacks a label of the pod's
``nodeSelector``, or has a NoSchedule taint the pod does not tolerate.
Among the nodes left, the one running the fewest pods wins (ties by
name). A pod no node takes stays Pending, marked Unschedulable, until
one does. DaemonSet pods ignore cordons, as the real controller's do.
"""
from __future__ import annotations

from kubernetes_mgmt_lab.kube_api.store import Store

NOT_READY_TAINT = {'key': 'node.kubernetes.io/not-ready',
                   'effect': 'NoSchedule'}


def _ready(node: dict) -> bool:
    conditions = (node.get('status') or {}).get('conditions') or []
    ready = [c for c in conditions if c.get('type') == 'Ready']
    # A node the test made without conditions counts as Ready.
    return not ready or ready[0].get('status') == 'True'


def _tolerates(pod: dict, taint: dict) -> bool:
    for toleration in pod['spec'].get('tolerations') or []:
        if toleration.get('effect') not in (None, '', taint.get('effect')):
            continue
        if toleration.get('operator') == 'Exists' and (
                not toleration.get('key')
                or toleration['key'] == taint.get('key')):
            return True
        if (toleration.get('key') == taint.get('key')
                and toleration.get('value', '') == taint.get('value', '')):
            return True
    return False


def fits(node: dict, pod: dict, daemon: bool = False) -> bool:
    """May ``pod`` be placed on ``node`` now?"""
    spec = node.get('spec') or {}
    if spec.get('unschedulable') and not daemon:
        return False
    taints = list(spec.get('taints') or [])
    if not _ready(node):
        taints.append(NOT_READY_TAINT)
    labels = node['metadata'].get('labels') or {}
    selector = pod['spec'].get('nodeSelector') or {}
    if any(labels.get(k) != v for k, v in selector.items()):
        return False
    return all(_tolerates(pod, taint) for taint in taints
               if taint.get('effect') in ('NoSchedule', 'NoExecute'))


def _load(store: Store) -> dict[str, int]:
    load: dict[str, int] = {}
    for pod in store.of_kind('Pod'):
        name = pod['spec'].get('nodeName')
        if name and not pod['metadata'].get('deletionTimestamp'):
            load[name] = load.get(name, 0) + 1
    return load


def choose(store: Store, pod: dict) -> str | None:
    """The node for a new pod, or None when no node fits."""
    load = _load(store)
    candidates = [n['metadata']['name'] for n in store.of_kind('Node')
                  if fits(n, pod)]
    if not candidates:
        return None
    return min(candidates, key=lambda name: (load.get(name, 0), name))


def daemon_nodes(store: Store, template_pod: dict) -> list[str]:
    """The nodes a DaemonSet with this pod template runs on."""
    return [n['metadata']['name'] for n in store.of_kind('Node')
            if fits(n, template_pod, daemon=True)]


def unschedulable(pod: dict) -> None:
    pod['status'] = {'phase': 'Pending', 'conditions': [{
        'type': 'PodScheduled', 'status': 'False',
        'reason': 'Unschedulable',
        'message': '0 nodes are available for the pod'}]}

"""Operations on the shared cluster state (a dict loaded by ``store``):
its objects, nodes, and ``reconcile``, which runs the API's controllers
(``kube_api.controllers``, with the lab's hooks: ``controllers``) after a
node agent changed something, as the control plane would react."""
from __future__ import annotations

import ipaddress

from kubernetes_mgmt_lab.emulated import controllers, objects, store
from kubernetes_mgmt_lab.kube_api import catalog, persisted
from kubernetes_mgmt_lab.kube_api import controllers as kube_controllers

# In the lab, pods start and terminating objects go at once: whoever
# reads the state after a change sees its outcome.
TIMING = kube_controllers.Timing(pod_ready_after=0.0, terminate_after=0.0)


# ---- the object store -------------------------------------------------

def objects_of(state: dict, kind: str) -> list[dict]:
    return state.setdefault('objects', {}).setdefault(kind, [])


def _key(obj: dict) -> tuple[str, str | None]:
    meta = obj['metadata']
    return meta['name'], meta.get('namespace')


def find(state: dict, kind: str, name: str,
         namespace: str | None = None) -> dict | None:
    for obj in objects_of(state, kind):
        if _key(obj) == (name, namespace):
            return obj
    return None


def put(state: dict, obj: dict) -> dict:
    """Create or replace; keeps uid and creation time of the old one."""
    meta = obj.setdefault('metadata', {})
    if not catalog.by_kind(obj['kind']).namespaced:
        meta.pop('namespace', None)
    items = objects_of(state, obj['kind'])
    old = find(state, obj['kind'], meta['name'], meta.get('namespace'))
    fresh = objects.new_meta(meta['name'])
    for field in ('uid', 'creationTimestamp'):
        meta[field] = (old or {}).get('metadata', {}).get(field) or \
            meta.get(field) or fresh[field]
    state['rv'] = state.get('rv', 0) + 1
    meta['resourceVersion'] = str(state['rv'])
    if old is not None:
        items[items.index(old)] = obj
    else:
        items.append(obj)
    return obj


def remove(state: dict, kind: str, name: str,
           namespace: str | None = None) -> dict | None:
    obj = find(state, kind, name, namespace)
    if obj is not None:
        objects_of(state, kind).remove(obj)
    return obj


def host_record(state: dict, host: str) -> dict:
    return state.setdefault('hosts', {}).setdefault(host, {})


# ---- nodes -------------------------------------------------------------

def alloc_pod_cidr(state: dict) -> str | None:
    subnet = state['cluster'].get('pod_subnet')
    if not subnet:
        return None
    net = ipaddress.ip_network(subnet.split(',')[0], strict=False)
    size = 24 if net.version == 4 else 64
    used = {n['spec'].get('podCIDR') for n in objects_of(state, 'Node')}
    for sub in net.subnets(new_prefix=max(size, net.prefixlen)):
        if str(sub) not in used:
            return str(sub)
    return None


def add_node(state: dict, name: str, host: str, ip: str, version: str,
             control_plane: bool) -> dict:
    remove(state, 'Node', name)
    _drop_pods_on(state, name)
    node = objects.node(name, ip, version, control_plane,
                        alloc_pod_cidr(state))
    state.setdefault('node_hosts', {})[name] = host
    put(state, node)
    if control_plane:
        for comp in ('etcd', 'kube-apiserver', 'kube-controller-manager',
                     'kube-scheduler'):
            put(state, objects.static_pod(comp, name,
                                          node['metadata']['uid'], ip,
                                          version))
    return node


def _drop_pods_on(state: dict, node_name: str) -> None:
    pods = objects_of(state, 'Pod')
    pods[:] = [p for p in pods if p['spec'].get('nodeName') != node_name]


def is_ready(node: dict) -> bool:
    for cond in node['status'].get('conditions', []):
        if cond['type'] == 'Ready':
            return cond['status'] == 'True'
    return False


def reconcile(state: dict) -> None:
    """Bring dependent objects in line, as the controllers would."""
    if not state['cluster'].get('initialized'):
        return
    api_store = persisted.load(state, list(controllers.HOOKS))
    kube_controllers.advance(api_store, TIMING)
    persisted.dump(api_store, state)


def set_kubelet(cluster_dir: str, host: str, active: bool,
                version: str | None = None) -> None:
    """The kubelet on ``host`` was started or stopped; ``version``: a
    kubelet of that version was (re)started, and its node reports it."""
    with store.mutate(cluster_dir) as state:
        rec = host_record(state, host)
        rec['kubelet'] = active
        if version:
            rec['kubelet_version'] = version
            _report_kubelet_version(state, host, version)
        reconcile(state)


def _report_kubelet_version(state: dict, host: str, version: str) -> None:
    hosts = state.get('node_hosts', {})
    for node in list(objects_of(state, 'Node')):
        if hosts.get(node['metadata']['name']) != host:
            continue
        info = node['status'].setdefault('nodeInfo', {})
        if info.get('kubeletVersion') != version:
            info['kubeletVersion'] = info['kubeProxyVersion'] = version
            put(state, node)

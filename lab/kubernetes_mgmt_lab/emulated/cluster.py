"""Operations on the shared cluster state (a dict loaded by ``store``):
object store, nodes, and ``reconcile`` which plays the controllers
(node readiness, DaemonSet and Deployment pods, scheduling, token
secrets, PV binding) after every change."""
from __future__ import annotations

import ipaddress

from kubernetes_mgmt_lab.emulated import kinds, objects, store

# DaemonSets whose presence means a pod network (CNI) is installed.
CNI_DAEMONSETS = ('calico-node', 'kube-flannel-ds', 'cilium', 'weave-net',
                  'kube-router', 'canal')
NOT_READY_NO_CNI = ('container runtime network not ready: '
                    'NetworkReady=false reason:NetworkPluginNotReady '
                    'message:Network plugin returns error: cni plugin '
                    'not initialized')


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
    if not kinds.for_object(obj).namespaced:
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

def node_host(state: dict, node_name: str) -> str | None:
    return state.setdefault('node_hosts', {}).get(node_name)


def kubelet_running(state: dict, host: str | None) -> bool:
    return bool(host and host_record(state, host).get('kubelet'))


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


def delete_node(state: dict, name: str) -> dict | None:
    node = remove(state, 'Node', name)
    if node is not None:
        # The pod garbage collector removes pods bound to a gone node.
        _drop_pods_on(state, name)
        state.setdefault('node_hosts', {}).pop(name, None)
    return node


def node_ip(node: dict) -> str:
    for addr in node['status'].get('addresses', []):
        if addr['type'] == 'InternalIP':
            return addr['address']
    return ''


def ready_status(state: dict, node: dict) -> tuple[str, str, str]:
    host = node_host(state, node['metadata']['name'])
    if not kubelet_running(state, host):
        return ('Unknown', 'NodeStatusUnknown',
                'Kubelet stopped posting node status.')
    if not state['cluster'].get('cni'):
        return 'False', 'KubeletNotReady', NOT_READY_NO_CNI
    return 'True', 'KubeletReady', 'kubelet is posting ready status'


def is_ready(node: dict) -> bool:
    for cond in node['status'].get('conditions', []):
        if cond['type'] == 'Ready':
            return cond['status'] == 'True'
    return False


def _update_conditions(state: dict, node: dict) -> None:
    status, reason, message = ready_status(state, node)
    old = {c['type']: c for c in node['status'].get('conditions', [])}
    conds = []
    pressure = status != 'Unknown'
    for kind in ('MemoryPressure', 'DiskPressure', 'PIDPressure'):
        prev = old.get(kind)
        value = 'False' if pressure else 'Unknown'
        since = prev['lastTransitionTime'] if prev and \
            prev['status'] == value else None
        conds.append(objects.condition(
            kind, value, f'KubeletHasNo{kind}' if pressure else
            'NodeStatusUnknown', '' if pressure else message, since))
    prev = old.get('Ready')
    since = prev['lastTransitionTime'] if prev and \
        prev['status'] == status else None
    conds.append(objects.condition('Ready', status, reason, message, since))
    if [c['status'] for c in conds] != \
            [old.get(c['type'], {}).get('status') for c in conds]:
        node['status']['conditions'] = conds


# ---- controllers -------------------------------------------------------

def _tolerates(pod: dict, taints: list[dict]) -> bool:
    tolerations = pod['spec'].get('tolerations') or []
    for taint in taints:
        if taint.get('effect') not in ('NoSchedule', 'NoExecute'):
            continue
        if not any(_tolerated(t, taint) for t in tolerations):
            return False
    return True


def _tolerated(tol: dict, taint: dict) -> bool:
    if tol.get('effect') and tol['effect'] != taint.get('effect'):
        return False
    if not tol.get('key'):
        return tol.get('operator') == 'Exists'
    if tol['key'] != taint['key']:
        return False
    return tol.get('operator') == 'Exists' or \
        tol.get('value', '') == taint.get('value', '')


def _pod_ip(state: dict, node: dict, host_network: bool) -> str:
    if host_network or not node['spec'].get('podCIDR'):
        return node_ip(node)
    net = ipaddress.ip_network(node['spec']['podCIDR'])
    used = {p['status'].get('podIP') for p in objects_of(state, 'Pod')}
    for addr in list(net.hosts())[1:]:
        if str(addr) not in used:
            return str(addr)
    return str(net.network_address)


def bind_pod(state: dict, pod: dict, node: dict) -> None:
    pod['spec']['nodeName'] = node['metadata']['name']
    ip = _pod_ip(state, node, pod['spec'].get('hostNetwork', False))
    objects.run(pod, ip, node_ip(node))


def _schedule(state: dict) -> None:
    nodes = [n for n in objects_of(state, 'Node') if is_ready(n)
             and not n['spec'].get('unschedulable')]
    for pod in objects_of(state, 'Pod'):
        if pod['spec'].get('nodeName') or \
                pod['metadata'].get('deletionTimestamp'):
            continue
        fits = [n for n in nodes
                if _tolerates(pod, n['spec'].get('taints') or [])]
        if not fits:
            continue
        load = {}
        for p in objects_of(state, 'Pod'):
            load[p['spec'].get('nodeName')] = \
                load.get(p['spec'].get('nodeName'), 0) + 1
        fits.sort(key=lambda n: load.get(n['metadata']['name'], 0))
        bind_pod(state, pod, fits[0])


def _owned_by(pod: dict, kind: str, name: str) -> bool:
    return any(o['kind'] == kind and o['name'] == name
               for o in pod['metadata'].get('ownerReferences', []))


def _template_pod(state: dict, owner: dict, name: str, owner_kind: str,
                  owner_name: str, owner_uid: str) -> dict:
    tmpl = owner['spec'].get('template') or {}
    spec = tmpl.get('spec') or {}
    containers = spec.get('containers') or [{}]
    pod = objects.pod(
        name, owner['metadata'].get('namespace', 'default'),
        containers[0].get('image', 'registry.k8s.io/pause:3.10'),
        labels=(tmpl.get('metadata') or {}).get('labels'),
        owner_ref=objects.owner(owner_kind, owner_name, owner_uid),
        tolerations=spec.get('tolerations'),
        host_network=spec.get('hostNetwork', False),
        volumes=spec.get('volumes'))
    return pod


def _daemonsets(state: dict) -> None:
    pods = objects_of(state, 'Pod')
    for ds in objects_of(state, 'DaemonSet'):
        name, ns = _key(ds)
        mine = [p for p in pods if _owned_by(p, 'DaemonSet', name)
                and p['metadata'].get('namespace') == ns]
        covered = {p['spec'].get('nodeName') for p in mine}
        for node in objects_of(state, 'Node'):
            if node['metadata']['name'] in covered:
                continue
            pod = _template_pod(state, ds, f'{name}-{objects.suffix()}',
                                'DaemonSet', name, ds['metadata']['uid'])
            # DaemonSet pods tolerate what the DS controller adds.
            pod['spec']['tolerations'].append({'operator': 'Exists'})
            put(state, pod)
            bind_pod(state, pod, node)
        total = len(objects_of(state, 'Node'))
        ds['status'] = {'desiredNumberScheduled': total,
                        'currentNumberScheduled': total,
                        'numberReady': total, 'numberAvailable': total,
                        'updatedNumberScheduled': total}


def _deployments(state: dict) -> None:
    pods = objects_of(state, 'Pod')
    for dep in objects_of(state, 'Deployment'):
        name, ns = _key(dep)
        rs = f'{name}-{objects.stable_suffix(dep["metadata"]["uid"])}'
        mine = [p for p in pods if _owned_by(p, 'ReplicaSet', rs)
                and p['metadata'].get('namespace') == ns]
        want = int(dep['spec'].get('replicas', 1))
        for extra in mine[want:]:
            pods.remove(extra)
        for _ in range(want - len(mine)):
            put(state, _template_pod(state, dep, f'{rs}-{objects.suffix()}',
                                     'ReplicaSet', rs,
                                     objects.stable_suffix(rs, 32)))
        ready = sum(1 for p in mine[:want]
                    if p['status'].get('phase') == 'Running')
        dep['status'] = {'replicas': want, 'readyReplicas': ready,
                         'availableReplicas': ready,
                         'updatedReplicas': want}


def _detect_cni(state: dict) -> None:
    if state['cluster'].get('cni'):
        return
    for ds in objects_of(state, 'DaemonSet'):
        if ds['metadata']['name'] in CNI_DAEMONSETS:
            state['cluster']['cni'] = ds['metadata']['name']
    if objects_of(state, 'Installation'):
        state['cluster']['cni'] = 'calico-operator'


def reconcile(state: dict) -> None:
    """Bring dependent objects in line, as the controllers would."""
    if not state['cluster'].get('initialized'):
        return
    from kubernetes_mgmt_lab.emulated import controllers
    _detect_cni(state)
    for node in objects_of(state, 'Node'):
        _update_conditions(state, node)
    if objects_of(state, 'Installation'):
        _ensure_operator_calico(state)
    _daemonsets(state)
    _deployments(state)
    _schedule(state)
    controllers.service_accounts(state)
    controllers.token_secrets(state)
    controllers.bind_volumes(state)


def _ensure_operator_calico(state: dict) -> None:
    # The tigera operator would create calico-node from an Installation.
    if find(state, 'DaemonSet', 'calico-node', 'calico-system'):
        return
    if find(state, 'Namespace', 'calico-system') is None:
        put(state, objects.namespace('calico-system'))
    put(state, objects.workload(
        'DaemonSet', 'calico-node', 'calico-system',
        'docker.io/calico/node:v3.28.0', {'k8s-app': 'calico-node'},
        host_network=True))


def set_kubelet(cluster_dir: str, host: str, active: bool) -> None:
    """The kubelet on ``host`` was started or stopped."""
    with store.mutate(cluster_dir) as state:
        host_record(state, host)['kubelet'] = active
        reconcile(state)

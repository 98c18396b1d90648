"""Kubernetes object shapes, as the API server would return them."""
from __future__ import annotations

import datetime
import secrets
import time
import uuid

# Kubernetes' alphabet for generated name suffixes (no vowels).
_SUFFIX_CHARS = 'bcdfghjklmnpqrstvwxz2456789'
CONTROL_PLANE_LABEL = 'node-role.kubernetes.io/control-plane'
CONTROL_PLANE_TAINT = {'key': CONTROL_PLANE_LABEL, 'effect': 'NoSchedule'}


def iso(ts: float | None = None) -> str:
    ts = time.time() if ts is None else ts
    dt = datetime.datetime.fromtimestamp(int(ts), datetime.timezone.utc)
    return dt.strftime('%Y-%m-%dT%H:%M:%SZ')


def suffix(n: int = 5) -> str:
    return ''.join(secrets.choice(_SUFFIX_CHARS) for _ in range(n))


def new_meta(name: str, namespace: str | None = None, **extra) -> dict:
    meta = {'name': name, 'uid': str(uuid.uuid4()),
            'creationTimestamp': iso()}
    if namespace:
        meta['namespace'] = namespace
    meta.update(extra)
    return meta


def node(name: str, ip: str, version: str, control_plane: bool,
         pod_cidr: str | None) -> dict:
    labels = {'beta.kubernetes.io/arch': 'amd64',
              'beta.kubernetes.io/os': 'linux',
              'kubernetes.io/arch': 'amd64',
              'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux'}
    spec: dict = {}
    if control_plane:
        labels[CONTROL_PLANE_LABEL] = ''
        labels['node.kubernetes.io/exclude-from-external-load-balancers'] \
            = ''
        spec['taints'] = [dict(CONTROL_PLANE_TAINT)]
    if pod_cidr:
        spec.update(podCIDR=pod_cidr, podCIDRs=[pod_cidr])
    resources = {'cpu': '2', 'memory': '4016220Ki', 'pods': '110',
                 'ephemeral-storage': '40581564Ki', 'hugepages-2Mi': '0'}
    annotations = {
        'kubeadm.alpha.kubernetes.io/cri-socket':
            'unix:///var/run/containerd/containerd.sock',
        'node.alpha.kubernetes.io/ttl': '0',
        'volumes.kubernetes.io/controller-managed-attach-detach': 'true'}
    return {
        'apiVersion': 'v1', 'kind': 'Node',
        'metadata': new_meta(name, labels=labels, annotations=annotations),
        'spec': spec,
        'status': {
            'addresses': [{'type': 'InternalIP', 'address': ip},
                          {'type': 'Hostname', 'address': name}],
            'capacity': dict(resources), 'allocatable': dict(resources),
            'conditions': [],
            'daemonEndpoints': {'kubeletEndpoint': {'Port': 10250}},
            'nodeInfo': {
                'architecture': 'amd64', 'operatingSystem': 'linux',
                'osImage': 'Ubuntu 24.04 LTS',
                'kernelVersion': '6.8.0-lab', 'bootID': str(uuid.uuid4()),
                'machineID': uuid.uuid4().hex,
                'systemUUID': str(uuid.uuid4()),
                'containerRuntimeVersion': 'containerd://1.7.12',
                'kubeletVersion': version, 'kubeProxyVersion': version},
        },
    }


def condition(kind: str, status: str, reason: str, message: str,
              since: str | None = None) -> dict:
    now = iso()
    return {'type': kind, 'status': status, 'reason': reason,
            'message': message, 'lastHeartbeatTime': now,
            'lastTransitionTime': since or now}


def owner(kind: str, name: str, uid: str) -> dict:
    api = 'v1' if kind == 'Node' else 'apps/v1'
    return {'apiVersion': api, 'kind': kind, 'name': name, 'uid': uid,
            'controller': True, 'blockOwnerDeletion': kind != 'Node'}


def pod(name: str, namespace: str, image: str, labels: dict | None = None,
        owner_ref: dict | None = None, tolerations: list | None = None,
        host_network: bool = False, volumes: list | None = None) -> dict:
    meta = new_meta(name, namespace, labels=dict(labels or {}))
    if owner_ref:
        meta['ownerReferences'] = [owner_ref]
    container = name.rsplit('-', 1)[0] if owner_ref else name
    return {
        'apiVersion': 'v1', 'kind': 'Pod', 'metadata': meta,
        'spec': {'containers': [{'name': container, 'image': image}],
                 'tolerations': list(tolerations or []),
                 'hostNetwork': host_network,
                 'volumes': list(volumes or []),
                 'restartPolicy': 'Always'},
        'status': {'phase': 'Pending', 'conditions': [],
                   'qosClass': 'BestEffort'},
    }


def static_pod(component: str, node_name: str, node_uid: str, ip: str,
               version: str) -> dict:
    image = ('registry.k8s.io/etcd:3.5.15-0' if component == 'etcd'
             else f'registry.k8s.io/{component}:{version}')
    obj = pod(f'{component}-{node_name}', 'kube-system', image,
              labels={'component': component, 'tier': 'control-plane'},
              owner_ref=owner('Node', node_name, node_uid),
              host_network=True)
    obj['metadata']['annotations'] = {
        'kubernetes.io/config.mirror': secrets.token_hex(16),
        'kubernetes.io/config.source': 'file'}
    obj['spec']['containers'][0]['name'] = component
    obj['spec']['nodeName'] = node_name
    obj['spec']['priorityClassName'] = 'system-node-critical'
    run(obj, ip)
    return obj


def run(obj: dict, pod_ip: str, host_ip: str | None = None) -> None:
    """Mark a scheduled pod as running."""
    now = iso()
    obj['status'].update(
        phase='Running', podIP=pod_ip, podIPs=[{'ip': pod_ip}],
        hostIP=host_ip or pod_ip, startTime=now,
        conditions=[condition(t, 'True', '', '', now)
                    for t in ('Initialized', 'Ready', 'ContainersReady',
                              'PodScheduled')])
    for cond in obj['status']['conditions']:
        cond.pop('lastHeartbeatTime', None)
        cond.pop('reason', None)
        cond.pop('message', None)


def namespace(name: str) -> dict:
    return {'apiVersion': 'v1', 'kind': 'Namespace',
            'metadata': new_meta(name, labels={
                'kubernetes.io/metadata.name': name}),
            'spec': {'finalizers': ['kubernetes']},
            'status': {'phase': 'Active'}}


def service_account(name: str, namespace: str) -> dict:
    return {'apiVersion': 'v1', 'kind': 'ServiceAccount',
            'metadata': new_meta(name, namespace)}


def workload(kind: str, name: str, namespace: str, image: str,
             labels: dict, replicas: int | None = None,
             tolerations: list | None = None,
             host_network: bool = False) -> dict:
    """A Deployment or DaemonSet as created by kubeadm or the lab."""
    spec: dict = {
        'selector': {'matchLabels': dict(labels)},
        'template': {'metadata': {'labels': dict(labels)},
                     'spec': {'containers': [{'name': name,
                                              'image': image}],
                              'tolerations': list(tolerations or []),
                              'hostNetwork': host_network}}}
    if replicas is not None:
        spec['replicas'] = replicas
    api = 'apps/v1'
    return {'apiVersion': api, 'kind': kind,
            'metadata': new_meta(name, namespace), 'spec': spec,
            'status': {}}


def _binding(name: str, group: str) -> dict:
    return {'apiVersion': 'rbac.authorization.k8s.io/v1',
            'kind': 'ClusterRoleBinding', 'metadata': new_meta(name),
            'roleRef': {'apiGroup': 'rbac.authorization.k8s.io',
                        'kind': 'ClusterRole', 'name': 'cluster-admin'},
            'subjects': [{'apiGroup': 'rbac.authorization.k8s.io',
                          'kind': 'Group', 'name': group}]}


def bootstrap_rbac() -> list[dict]:
    """The cluster-admin role and who holds it from the start: the
    API server's system:masters, and kubeadm's admin.conf group."""
    role = {'apiVersion': 'rbac.authorization.k8s.io/v1',
            'kind': 'ClusterRole', 'metadata': new_meta('cluster-admin'),
            'rules': [{'apiGroups': ['*'], 'resources': ['*'],
                       'verbs': ['*']},
                      {'nonResourceURLs': ['*'], 'verbs': ['*']}]}
    return [role, _binding('cluster-admin', 'system:masters'),
            _binding('kubeadm:cluster-admins', 'kubeadm:cluster-admins')]

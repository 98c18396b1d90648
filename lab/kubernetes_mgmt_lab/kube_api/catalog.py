"""The API resources the double serves, and its discovery documents.

One table drives discovery (``/api``, ``/apis``, ``/api/v1`` ...), URL
routing and RBAC resource names, so the three never disagree.
"""
from __future__ import annotations

from dataclasses import dataclass

_RW = ('create', 'delete', 'deletecollection', 'get', 'list', 'patch',
       'update', 'watch')


@dataclass(frozen=True)
class ApiKind:
    group: str                 # '' for the core group
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    scale: bool = False        # serves the scale subresource
    verbs: tuple[str, ...] = _RW

    @property
    def group_version(self) -> str:
        return f'{self.group}/{self.version}' if self.group else self.version


def _core(kind: str, plural: str, namespaced: bool = True) -> ApiKind:
    return ApiKind('', 'v1', kind, plural, namespaced)


def _apps(kind: str, plural: str, scale: bool) -> ApiKind:
    return ApiKind('apps', 'v1', kind, plural, scale=scale)


_RBAC = 'rbac.authorization.k8s.io'

KINDS: tuple[ApiKind, ...] = (
    _core('Namespace', 'namespaces', namespaced=False),
    _core('Node', 'nodes', namespaced=False),
    _core('PersistentVolume', 'persistentvolumes', namespaced=False),
    _core('Pod', 'pods'),
    _core('Service', 'services'),
    _core('ConfigMap', 'configmaps'),
    _core('Secret', 'secrets'),
    _core('ServiceAccount', 'serviceaccounts'),
    _core('PersistentVolumeClaim', 'persistentvolumeclaims'),
    _core('Endpoints', 'endpoints'),
    _core('LimitRange', 'limitranges'),
    _core('ResourceQuota', 'resourcequotas'),
    _core('Event', 'events'),
    _apps('Deployment', 'deployments', scale=True),
    _apps('StatefulSet', 'statefulsets', scale=True),
    _apps('ReplicaSet', 'replicasets', scale=True),
    _apps('DaemonSet', 'daemonsets', scale=False),
    ApiKind('batch', 'v1', 'Job', 'jobs'),
    ApiKind('batch', 'v1', 'CronJob', 'cronjobs'),
    ApiKind(_RBAC, 'v1', 'Role', 'roles'),
    ApiKind(_RBAC, 'v1', 'RoleBinding', 'rolebindings'),
    ApiKind(_RBAC, 'v1', 'ClusterRole', 'clusterroles', namespaced=False),
    ApiKind(_RBAC, 'v1', 'ClusterRoleBinding', 'clusterrolebindings',
            namespaced=False),
    ApiKind('networking.k8s.io', 'v1', 'NetworkPolicy', 'networkpolicies'),
    ApiKind('policy', 'v1', 'PodDisruptionBudget', 'poddisruptionbudgets'),
    ApiKind('autoscaling', 'v2', 'HorizontalPodAutoscaler',
            'horizontalpodautoscalers'),
    ApiKind('storage.k8s.io', 'v1', 'StorageClass', 'storageclasses',
            namespaced=False),
    ApiKind('scheduling.k8s.io', 'v1', 'PriorityClass', 'priorityclasses',
            namespaced=False),
    ApiKind('apiextensions.k8s.io', 'v1', 'CustomResourceDefinition',
            'customresourcedefinitions', namespaced=False),
    ApiKind('authorization.k8s.io', 'v1', 'SelfSubjectAccessReview',
            'selfsubjectaccessreviews', namespaced=False,
            verbs=('create',)),
)

_BY_PATH = {(k.group_version, k.plural): k for k in KINDS}

# kubectl resolves ``cm``, ``po``, ``deploy`` ... through discovery.
SHORT_NAMES = {
    'Namespace': ['ns'], 'Node': ['no'], 'PersistentVolume': ['pv'],
    'Pod': ['po'], 'Service': ['svc'], 'ConfigMap': ['cm'],
    'ServiceAccount': ['sa'], 'PersistentVolumeClaim': ['pvc'],
    'Endpoints': ['ep'], 'LimitRange': ['limits'],
    'ResourceQuota': ['quota'], 'Deployment': ['deploy'],
    'StatefulSet': ['sts'], 'ReplicaSet': ['rs'], 'DaemonSet': ['ds'],
    'CronJob': ['cj'], 'NetworkPolicy': ['netpol'],
    'PodDisruptionBudget': ['pdb'], 'HorizontalPodAutoscaler': ['hpa'],
    'StorageClass': ['sc'], 'CustomResourceDefinition': ['crd', 'crds'],
    'Event': ['ev'], 'PriorityClass': ['pc']}

# Pods' eviction subresource: kubectl drain evicts (and so honours
# PodDisruptionBudgets) only when discovery lists it with its group.
EVICTION = 'eviction'
EXEC = 'exec'
POD_SUBRESOURCES = (EVICTION, EXEC)
_POD_RESOURCES = (
    {'name': f'pods/{EVICTION}', 'singularName': '', 'namespaced': True,
     'group': 'policy', 'version': 'v1', 'kind': 'Eviction',
     'verbs': ['create']},
    {'name': f'pods/{EXEC}', 'singularName': '', 'namespaced': True,
     'kind': 'PodExecOptions', 'verbs': ['create', 'get']})


def lookup(group_version: str, plural: str) -> ApiKind | None:
    return _BY_PATH.get((group_version, plural))


def by_kind(kind: str) -> ApiKind:
    for api_kind in KINDS:
        if api_kind.kind == kind:
            return api_kind
    raise KeyError(kind)


def _groups() -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for k in KINDS:
        if k.group:
            versions = groups.setdefault(k.group, [])
            if k.version not in versions:
                versions.append(k.version)
    return groups


def version_info(version: str) -> dict:
    """What ``/version`` answers for a server of ``version`` (vX.Y.Z)."""
    major, minor = version.lstrip('v').split('.')[:2]
    return {'major': major, 'minor': minor, 'gitVersion': version,
            'gitCommit': '0' * 40, 'gitTreeState': 'clean',
            'buildDate': '2024-01-01T00:00:00Z', 'goVersion': 'go1.22.5',
            'compiler': 'gc', 'platform': 'linux/amd64'}


def core_versions(address: str) -> dict:
    return {'kind': 'APIVersions', 'versions': ['v1'],
            'serverAddressByClientCIDRs': [
                {'clientCIDR': '0.0.0.0/0', 'serverAddress': address}]}


def group_list() -> dict:
    groups = []
    for name, versions in _groups().items():
        entries = [{'groupVersion': f'{name}/{v}', 'version': v}
                   for v in versions]
        groups.append({'name': name, 'versions': entries,
                       'preferredVersion': entries[0]})
    return {'kind': 'APIGroupList', 'apiVersion': 'v1', 'groups': groups}


def group(name: str) -> dict | None:
    versions = _groups().get(name)
    if versions is None:
        return None
    entries = [{'groupVersion': f'{name}/{v}', 'version': v}
               for v in versions]
    return {'kind': 'APIGroup', 'apiVersion': 'v1', 'name': name,
            'versions': entries, 'preferredVersion': entries[0]}


def resource_list(group_version: str) -> dict | None:
    resources = []
    for k in KINDS:
        if k.group_version != group_version:
            continue
        resources.append({'name': k.plural, 'singularName': k.kind.lower(),
                          'namespaced': k.namespaced, 'kind': k.kind,
                          'verbs': list(k.verbs),
                          **({'shortNames': SHORT_NAMES[k.kind]}
                             if k.kind in SHORT_NAMES else {})})
        if k.scale:
            resources.append({'name': f'{k.plural}/scale', 'singularName': '',
                              'namespaced': k.namespaced, 'kind': 'Scale',
                              'group': 'autoscaling', 'version': 'v1',
                              'verbs': ['get', 'patch', 'update']})
        if k.kind == 'Pod':
            resources.extend(dict(r) for r in _POD_RESOURCES)
        if k.kind != 'SelfSubjectAccessReview':
            resources.append({'name': f'{k.plural}/status',
                              'singularName': '', 'namespaced': k.namespaced,
                              'kind': k.kind,
                              'verbs': ['get', 'patch', 'update']})
    if not resources:
        return None
    return {'kind': 'APIResourceList', 'apiVersion': 'v1',
            'groupVersion': group_version, 'resources': resources}

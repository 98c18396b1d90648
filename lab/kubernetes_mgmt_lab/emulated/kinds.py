"""The resource kinds kubectl knows here: names, aliases and scope."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    kind: str
    plural: str
    api_version: str
    namespaced: bool = True
    aliases: tuple[str, ...] = ()

    @property
    def group(self) -> str:
        return self.api_version.rpartition('/')[0]

    @property
    def resource(self) -> str:
        """``nodes``, ``clusterrolebindings.rbac.authorization.k8s.io``:
        how kubectl names the type in messages."""
        return f'{self.plural}.{self.group}' if self.group else self.plural

    @property
    def ref(self) -> str:
        """``node``, ``deployment.apps``: the prefix of ``-o name``."""
        name = self.kind.lower()
        return f'{name}.{self.group}' if self.group else name


_RBAC = 'rbac.authorization.k8s.io/v1'
KINDS = [
    Kind('Node', 'nodes', 'v1', False, ('no', 'node')),
    Kind('Pod', 'pods', 'v1', True, ('po', 'pod')),
    Kind('Namespace', 'namespaces', 'v1', False, ('ns', 'namespace')),
    Kind('PersistentVolume', 'persistentvolumes', 'v1', False,
         ('pv', 'persistentvolume')),
    Kind('PersistentVolumeClaim', 'persistentvolumeclaims', 'v1', True,
         ('pvc', 'persistentvolumeclaim')),
    Kind('ServiceAccount', 'serviceaccounts', 'v1', True,
         ('sa', 'serviceaccount')),
    Kind('Secret', 'secrets', 'v1', True, ('secret',)),
    Kind('ConfigMap', 'configmaps', 'v1', True, ('cm', 'configmap')),
    Kind('Service', 'services', 'v1', True, ('svc', 'service')),
    Kind('Event', 'events', 'v1', True, ('ev', 'event')),
    Kind('DaemonSet', 'daemonsets', 'apps/v1', True, ('ds', 'daemonset')),
    Kind('Deployment', 'deployments', 'apps/v1', True,
         ('deploy', 'deployment')),
    Kind('ReplicaSet', 'replicasets', 'apps/v1', True,
         ('rs', 'replicaset')),
    Kind('StatefulSet', 'statefulsets', 'apps/v1', True,
         ('sts', 'statefulset')),
    Kind('PodDisruptionBudget', 'poddisruptionbudgets', 'policy/v1', True,
         ('pdb', 'poddisruptionbudget')),
    Kind('ClusterRole', 'clusterroles', _RBAC, False, ('clusterrole',)),
    Kind('ClusterRoleBinding', 'clusterrolebindings', _RBAC, False,
         ('clusterrolebinding',)),
    Kind('Role', 'roles', _RBAC, True, ('role',)),
    Kind('RoleBinding', 'rolebindings', _RBAC, True, ('rolebinding',)),
    Kind('StorageClass', 'storageclasses', 'storage.k8s.io/v1', False,
         ('sc', 'storageclass')),
    Kind('CustomResourceDefinition', 'customresourcedefinitions',
         'apiextensions.k8s.io/v1', False, ('crd', 'crds')),
    Kind('PriorityClass', 'priorityclasses', 'scheduling.k8s.io/v1',
         False, ('pc', 'priorityclass')),
]
BY_KIND = {k.kind: k for k in KINDS}
# Kinds (from CRDs or elsewhere) that exist only cluster-wide.
CLUSTER_SCOPED = {k.kind for k in KINDS if not k.namespaced} | {
    'APIService', 'MutatingWebhookConfiguration', 'IngressClass',
    'ValidatingWebhookConfiguration', 'CSIDriver', 'RuntimeClass',
    'Installation', 'APIServer', 'IPPool', 'FelixConfiguration',
    'BGPConfiguration', 'ClusterInformation', 'GlobalNetworkPolicy',
    'KubeControllersConfiguration', 'IPAMBlock', 'BlockAffinity'}


def lookup(name: str) -> Kind | None:
    """Resolve ``nodes``, ``no``, ``node``, ``pv``, ``deployments.apps``
    and the like."""
    low = name.lower()
    for kind in KINDS:
        names = {kind.plural, kind.kind.lower(), kind.resource,
                 kind.ref, *kind.aliases}
        if low in names:
            return kind
    return None


def for_object(obj: dict) -> Kind:
    """The Kind of any object (unknown kinds get an ad hoc entry)."""
    kind = obj.get('kind', '')
    if kind in BY_KIND:
        return BY_KIND[kind]
    plural = kind.lower() + ('es' if kind.endswith('s') else 's')
    return Kind(kind, plural, obj.get('apiVersion', 'v1'),
                kind not in CLUSTER_SCOPED)

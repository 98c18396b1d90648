"""Which kinds live outside namespaces, before the cluster is asked.

Request validation runs before any API call, so it needs a static
answer; once connected, API discovery's ``namespaced`` flag decides
(``deploy`` re-checks the namespace choice with it).
"""
from __future__ import annotations

CLUSTER_SCOPED_KINDS = frozenset({
    'APIService', 'CertificateSigningRequest', 'ClusterRole',
    'ClusterRoleBinding', 'ComponentStatus', 'CSIDriver', 'CSINode',
    'CustomResourceDefinition', 'FlowSchema', 'IngressClass',
    'MutatingWebhookConfiguration', 'Namespace', 'Node',
    'PersistentVolume', 'PriorityClass', 'PriorityLevelConfiguration',
    'RuntimeClass', 'StorageClass', 'ValidatingAdmissionPolicy',
    'ValidatingAdmissionPolicyBinding', 'ValidatingWebhookConfiguration',
    'VolumeAttachment',
})

# Objects are created in this order (kinds not listed go last, in file
# order) and deleted in the reverse one: what others refer to exists
# first and goes last.
CREATE_ORDER = (
    'Namespace', 'CustomResourceDefinition', 'PriorityClass',
    'StorageClass', 'PersistentVolume', 'ClusterRole',
    'ClusterRoleBinding', 'ResourceQuota', 'LimitRange', 'ServiceAccount',
    'Secret', 'ConfigMap', 'PersistentVolumeClaim', 'Role', 'RoleBinding',
    'NetworkPolicy', 'Service', 'Pod', 'ReplicaSet', 'Deployment',
    'StatefulSet', 'DaemonSet', 'Job', 'CronJob', 'HorizontalPodAutoscaler',
    'PodDisruptionBudget',
)
_RANK = {kind: rank for rank, kind in enumerate(CREATE_ORDER)}

WORKLOAD_KINDS = frozenset({'Deployment', 'StatefulSet', 'ReplicaSet',
                            'DaemonSet'})
SCALABLE_KINDS = frozenset({'Deployment', 'StatefulSet', 'ReplicaSet'})


def namespaced_statically(kind: str) -> bool:
    return kind not in CLUSTER_SCOPED_KINDS


def create_rank(kind: str) -> int:
    return _RANK.get(kind, len(CREATE_ORDER))

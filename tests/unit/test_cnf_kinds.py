"""Any namespaced kind goes through the same generic path: a CNF made of
a StatefulSet, ReplicaSet, DaemonSet, Job, Secret, PVC, ServiceAccount,
Role and RoleBinding, under a token limited to its namespace."""
from __future__ import annotations

from pathlib import Path

import pytest

from kubernetes_mgmt.cnf.errors import CnfError
from kubernetes_mgmt.errors import ValidationError
from kubernetes_mgmt_lab.kube_api import (
    KubeApiDouble,
    cluster_admin,
    namespace_role,
)
from kubernetes_mgmt_lab.kube_api.lcm import (
    InstantiateVnfRequest,
    LcmRunner,
    runner_for,
)
from kubernetes_mgmt_lab.tacker_shapes import (
    HealVnfRequest,
    ScaleVnfRequest,
    TerminateVnfRequest,
)

DATA = Path(__file__).resolve().parent.parent / 'data' / 'cnf'
KINDS = {'ServiceAccount': ['db'], 'Secret': ['db-credentials'],
         'PersistentVolumeClaim': ['shared'], 'Role': ['db'],
         'RoleBinding': ['db'], 'StatefulSet': ['db'],
         'ReplicaSet': ['cache'], 'DaemonSet': ['agent'],
         'Job': ['migrate']}


def files(*names: str) -> dict:
    return {'lcm-kubernetes-def-files': [f'Files/kubernetes/{n}'
                                         for n in names],
            'namespace': 'ns-w'}


@pytest.fixture
def double():
    with KubeApiDouble(tls=True, nodes=('node-1', 'node-2')) as api:
        api.put('Namespace', {'metadata': {'name': 'ns-w'},
                              'status': {'phase': 'Active'}})
        yield api


def runner(double: KubeApiDouble, token: str) -> LcmRunner:
    return runner_for(double.access_info(token), {'vnfd-cnf': DATA})


def role_runner(double: KubeApiDouble) -> LcmRunner:
    return runner(double, double.add_token(
        'ns-w-token', namespace_role('cnf-driver', 'ns-w')))


def start(lcm: LcmRunner, params: dict):
    instance = lcm.new_instance('vnfd-cnf', additional_params=params)
    lcm.instantiate(instance, InstantiateVnfRequest('simple', params))
    return instance


def test_every_kind_is_created_ready_and_deleted(double):
    lcm = role_runner(double)
    instance = start(lcm, files('workloads.yaml'))
    for kind, names in KINDS.items():
        assert double.names(kind, 'ns-w') == names, kind
    pods = double.names('Pod', 'ns-w')
    assert 'db-0' in pods                                   # StatefulSet
    assert sum(p.startswith('cache-') for p in pods) == 2   # ReplicaSet
    assert sum(p.startswith('agent-') for p in pods) == 2   # one per node
    job = double.objects('Job', 'ns-w')[0]
    assert job['status']['succeeded'] == 1
    claim = double.objects('PersistentVolumeClaim', 'ns-w')[0]
    assert claim['status']['phase'] == 'Bound'
    # Only the StatefulSet has a VDU (VDU2 "db"): one VNFC, its pod.
    vnfcs = instance.instantiated_vnf_info.vnfc_resource_info
    assert [(v.vdu_id, v.compute_resource.resource_id) for v in vnfcs] == [
        ('VDU2', 'db-0')]

    lcm.scale(instance, ScaleVnfRequest('SCALE_OUT', 'db_aspect'))
    assert {'db-0', 'db-1'} <= set(double.names('Pod', 'ns-w'))
    assert len(instance.instantiated_vnf_info.vnfc_resource_info) == 2

    lcm.terminate(instance, TerminateVnfRequest('FORCEFUL'))
    for kind in (*KINDS, 'Pod'):
        assert double.names(kind, 'ns-w') == [], kind


def test_a_statefulset_pod_heals_under_its_own_name(double):
    lcm = role_runner(double)
    instance = start(lcm, files('workloads.yaml'))
    vnfc = instance.instantiated_vnf_info.vnfc_resource_info[0]
    before = double.objects('Pod', 'ns-w')
    uid = next(p['metadata']['uid'] for p in before
               if p['metadata']['name'] == 'db-0')
    lcm.heal(instance, HealVnfRequest([vnfc.id]))
    after = {p['metadata']['name']: p for p in double.objects('Pod', 'ns-w')}
    assert vnfc.compute_resource.resource_id == 'db-0'
    assert after['db-0']['metadata']['uid'] != uid


def test_unserved_kinds_are_refused_before_any_change(double):
    lcm = runner(double, double.add_token('admin', cluster_admin()))
    with pytest.raises(ValidationError) as exc:
        start(lcm, files('web.yaml', 'unknown-kind.yaml'))
    assert "kind 'Widget' of apiVersion 'example.com/v1' is not served" in \
        str(exc.value)
    assert double.mutations() == []


def test_cluster_scoped_objects_need_cluster_rights(double):
    lcm = role_runner(double)
    with pytest.raises(CnfError) as exc:
        start(lcm, files('web.yaml', 'cluster-scoped.yaml'))
    assert 'ClusterRole/web-reader' in str(exc.value)
    assert 'not allowed' in str(exc.value)
    assert double.mutations() == []


def test_cluster_scoped_objects_are_created_and_deleted_by_an_admin(double):
    lcm = runner(double, double.add_token('admin', cluster_admin()))
    instance = start(lcm, files('web.yaml', 'cluster-scoped.yaml'))
    assert double.names('ClusterRole') == ['web-reader']
    # 'standard' is the double's own default class.
    assert double.names('StorageClass') == ['standard', 'web-fast']
    assert double.names('Deployment', 'ns-w') == ['web']
    lcm.terminate(instance, TerminateVnfRequest())
    assert double.names('ClusterRole') == []
    assert double.names('StorageClass') == ['standard']


def test_a_bare_pod_is_healed_by_recreating_it(double):
    lcm = role_runner(double)
    instance = start(lcm, files('toolbox.yaml'))
    vnfc = instance.instantiated_vnf_info.vnfc_resource_info[0]
    assert (vnfc.vdu_id, vnfc.compute_resource.resource_id,
            vnfc.compute_resource.vim_level_resource_type) == (
        'VDU3', 'toolbox', 'Pod')
    uid = double.objects('Pod', 'ns-w')[0]['metadata']['uid']
    lcm.heal(instance, HealVnfRequest([vnfc.id]))
    pod = double.objects('Pod', 'ns-w')[0]
    assert pod['metadata']['name'] == 'toolbox'
    assert pod['metadata']['uid'] != uid
    assert pod['metadata']['labels']['app'] == 'toolbox'
    assert pod['status']['phase'] == 'Running'
    lcm.terminate(instance, TerminateVnfRequest())
    assert double.names('Pod', 'ns-w') == []

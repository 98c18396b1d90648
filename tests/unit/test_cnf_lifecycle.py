"""A CNF's whole life through the kubernetes-namespaced driver, driven
in Tacker's v1 LCM order against the Kubernetes API double: what exists
in which namespace after each step, which errors, and that refused
operations change nothing."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from kubernetes_mgmt.cnf.errors import CnfError, CnfTimeout
from kubernetes_mgmt.cnf.settings import Timings
from kubernetes_mgmt_lab.kube_api import (
    CNF_DRIVER_RULES,
    KubeApiDouble,
    Rule,
    Timing,
    cluster_admin,
    namespace_role,
)
from kubernetes_mgmt_lab.kube_api.lcm import (
    QUICK,
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
WEB = {'lcm-kubernetes-def-files': ['Files/kubernetes/web.yaml']}
CNF_KINDS = ('Deployment', 'Service', 'ConfigMap', 'Pod')


def runner(double: KubeApiDouble, token: str,
           timings: Timings = QUICK) -> LcmRunner:
    return runner_for(double.access_info(token), {'vnfd-cnf': DATA},
                      timings)


def instantiate(lcm: LcmRunner, level: str | None = None, **params):
    request_params = {**WEB, **params}
    instance = lcm.new_instance('vnfd-cnf',
                                additional_params=request_params)
    lcm.instantiate(instance, InstantiateVnfRequest(
        'simple', request_params, instantiation_level_id=level))
    return instance


def add_namespace(double: KubeApiDouble, name: str) -> None:
    double.put('Namespace', {'metadata': {'name': name},
                             'status': {'phase': 'Active'}})


def ready_pods(double: KubeApiDouble, namespace: str) -> list[str]:
    return [p['metadata']['name'] for p in double.objects('Pod', namespace)
            if any(c['type'] == 'Ready' and c['status'] == 'True'
                   for c in p['status'].get('conditions', []))
            and not p['metadata'].get('deletionTimestamp')]


def vnfc_pods(instance) -> list[str]:
    return sorted(v.compute_resource.resource_id
                  for v in instance.instantiated_vnf_info.vnfc_resource_info)


def namespaces_addressed(double: KubeApiDouble) -> set[str]:
    """Every namespace a request's path named."""
    found = set()
    for record in double.requests:
        parts = record.path.split('/')
        if 'namespaces' in parts:
            index = parts.index('namespaces')
            if index + 1 < len(parts):
                found.add(parts[index + 1])
    return found


@pytest.fixture
def double():
    with KubeApiDouble(tls=True) as api:
        yield api


@pytest.fixture(params=['cluster-admin', 'role-in-ns-a'])
def lab(request, double):
    if request.param == 'cluster-admin':
        token = double.add_token('admin-token', cluster_admin())
    else:
        add_namespace(double, 'ns-a')
        token = double.add_token('ns-a-token',
                                 namespace_role('cnf-driver', 'ns-a'))
    return double, runner(double, token)


def test_instantiate_scale_heal_terminate_stay_in_ns_a(lab):
    double, lcm = lab

    instance = instantiate(lcm, namespace='ns-a')
    assert instance.vnf_metadata['namespace'] == 'ns-a'
    assert double.names('Deployment', 'ns-a') == ['web']
    assert double.names('Service', 'ns-a') == ['web']
    assert double.names('ConfigMap', 'ns-a') == ['web-config']
    assert vnfc_pods(instance) == ready_pods(double, 'ns-a')
    assert len(vnfc_pods(instance)) == 1
    assert instance.instantiated_vnf_info.vnfc_resource_info[0].vdu_id == \
        'VDU1'
    # Records hold bare names: the namespace is in vnf_metadata only.
    rows = lcm.store.rows[instance.id]
    assert sorted(r.resource_name for r in rows) == [
        'web', 'web', 'web-config']
    assert {r.resource_type for r in rows} == {
        'apps/v1,Deployment', 'v1,Service', 'v1,ConfigMap'}

    lcm.scale(instance, ScaleVnfRequest('SCALE_OUT', 'web_aspect'))
    assert len(ready_pods(double, 'ns-a')) == 2
    assert vnfc_pods(instance) == sorted(ready_pods(double, 'ns-a'))

    lcm.scale(instance, ScaleVnfRequest('SCALE_IN', 'web_aspect'))
    assert len(ready_pods(double, 'ns-a')) == 1
    assert vnfc_pods(instance) == ready_pods(double, 'ns-a')

    vnfc = instance.instantiated_vnf_info.vnfc_resource_info[0]
    sick = vnfc.compute_resource.resource_id
    lcm.heal(instance, HealVnfRequest(vnfc_instance_id=[vnfc.id]))
    healed = vnfc.compute_resource.resource_id
    assert healed != sick
    assert double.names('Pod', 'ns-a') == [healed]
    assert ready_pods(double, 'ns-a') == [healed]

    lcm.terminate(instance, TerminateVnfRequest('FORCEFUL'))
    assert double.namespaces_in_use(CNF_KINDS) == set()
    assert namespaces_addressed(double) == {'ns-a'}
    assert 'ns-a' in double.names('Namespace')


def test_nothing_is_created_in_another_namespace(lab):
    double, lcm = lab
    instantiate(lcm, namespace='ns-a')
    assert double.namespaces_in_use(CNF_KINDS) == {'ns-a'}
    for namespace in ('default', 'kube-system', 'kube-public'):
        assert double.objects('ConfigMap', namespace) == []


def test_missing_namespace_is_created_for_a_cluster_admin(double):
    lcm = runner(double, double.add_token('admin', cluster_admin()))
    assert 'ns-new' not in double.names('Namespace')
    instantiate(lcm, namespace='ns-new')
    assert 'ns-new' in double.names('Namespace')
    assert double.names('Deployment', 'ns-new') == ['web']


def test_a_token_bound_to_ns_b_fails_clearly_and_changes_nothing(double):
    add_namespace(double, 'ns-a')
    add_namespace(double, 'ns-b')
    lcm = runner(double, double.add_token(
        'ns-b-token', namespace_role('cnf-driver', 'ns-b')))
    before = double.store.snapshot()
    with pytest.raises(CnfError) as exc:
        instantiate(lcm, namespace='ns-a')
    message = str(exc.value)
    assert 'not allowed' in message and "'ns-a'" in message
    assert 'nothing was created' in message
    assert double.mutations() == []
    assert double.store.snapshot() == before


def test_partial_permissions_change_nothing(double):
    add_namespace(double, 'ns-a')
    no_deployments = tuple(r for r in CNF_DRIVER_RULES
                           if 'apps' not in r.api_groups)
    lcm = runner(double, double.add_token('weak', namespace_role(
        'cnf-driver', 'ns-a', no_deployments)))
    with pytest.raises(CnfError, match='Deployment/web'):
        instantiate(lcm, namespace='ns-a')
    assert double.mutations() == []
    assert double.namespaces_in_use(CNF_KINDS) == set()


def test_missing_namespace_the_token_cannot_create(double):
    # The token may read namespace ns-c (it does not exist) but, bound
    # to a Role, can never create a namespace.
    rules = (*CNF_DRIVER_RULES, Rule(('',), ('namespaces',), ('get',)))
    lcm = runner(double, double.add_token('ns-c-token', namespace_role(
        'cnf-driver', 'ns-c', rules)))
    with pytest.raises(CnfError) as exc:
        instantiate(lcm, namespace='ns-c')
    assert "namespace 'ns-c' does not exist and could not be created" in \
        str(exc.value)
    assert 'not allowed' in str(exc.value)
    assert [r.code for r in double.mutations()] == [403]
    assert 'ns-c' not in double.names('Namespace')


def test_missing_namespace_under_a_role_token(double):
    # Reading the namespace is forbidden: the driver assumes it exists,
    # and the dry run then finds out, before anything is created.
    lcm = runner(double, double.add_token(
        'ns-d-token', namespace_role('cnf-driver', 'ns-d')))
    with pytest.raises(CnfError, match='namespaces "ns-d" not found'):
        instantiate(lcm, namespace='ns-d')
    assert double.mutations() == []


@pytest.mark.parametrize('request_, grace', [
    (TerminateVnfRequest('GRACEFUL', 7), 7),
    (TerminateVnfRequest('FORCEFUL'), 0),
])
def test_terminate_passes_the_grace_period(double, request_, grace):
    lcm = runner(double, double.add_token('admin', cluster_admin()))
    instance = instantiate(lcm, namespace='ns-a')
    lcm.terminate(instance, request_)
    deletes = [r for r in double.requests if r.method == 'DELETE']
    assert len(deletes) == 3
    assert {r.body['gracePeriodSeconds'] for r in deletes} == {grace}
    assert {r.body['propagationPolicy'] for r in deletes} == {'Foreground'}
    # Reverse creation order: the Deployment first, its ConfigMap last.
    assert [r.path.rsplit('/', 2)[1] for r in deletes] == [
        'deployments', 'services', 'configmaps']


def test_waits_follow_the_cluster():
    slow = Timing(pod_ready_after=0.3, terminate_after=0.3)
    with KubeApiDouble(tls=True, timing=slow) as api:
        lcm = runner(api, api.add_token('admin', cluster_admin()))
        started = time.monotonic()
        instance = instantiate(lcm, namespace='ns-a')
        assert time.monotonic() - started >= 0.3
        assert len(ready_pods(api, 'ns-a')) == 1
        deployment = api.objects('Deployment', 'ns-a')[0]
        assert deployment['status']['readyReplicas'] == 1
        lcm.terminate(instance, TerminateVnfRequest('GRACEFUL', 1))
        # Pods needed 0.3 s to go: terminate returned only after.
        assert api.namespaces_in_use(CNF_KINDS) == set()


def test_grace_period_survives_a_conductor_restart_within_terminate():
    # Pods take 0.6 s to go, the plain delete deadline is 0.2 s: only
    # the 2 s grace period that delete() asked for lets delete_wait pass.
    # A second driver object stands in for a restarted conductor.
    slow = Timing(terminate_after=0.6)
    short = Timings(ready=10, scale=10, heal=10, delete=0.2,
                    poll_first=0.01, poll_ceiling=0.05, request=10)
    with KubeApiDouble(tls=True, timing=slow) as api:
        lcm = runner(api, api.add_token('admin', cluster_admin()), short)
        instance = instantiate(lcm, namespace='ns-a')
        other = instantiate(lcm, namespace='ns-b')
        kwargs = {'plugin': lcm, 'context': None,
                  'auth_attr': lcm.vim.access_info}
        lcm.driver.delete(vnf_id=None, vnf_instance=instance,
                          terminate_vnf_req=TerminateVnfRequest(
                              'GRACEFUL', 2), **kwargs)
        assert instance.vnf_metadata['termination_grace_seconds'] == '2'
        assert 'termination_grace_seconds' not in other.vnf_metadata

        restarted = runner(api, api.add_token('admin-2', cluster_admin()),
                           short)
        restarted.store.rows = lcm.store.rows
        restarted.driver.delete_wait(vnf_id=None, vnf_instance=instance,
                                     **kwargs)
        assert api.namespaces_in_use(CNF_KINDS) == {'ns-b'}
        assert 'termination_grace_seconds' not in instance.vnf_metadata
        assert instance.vnf_metadata['namespace'] == 'ns-a'


def test_an_edited_grace_period_is_refused_by_name(double):
    lcm = runner(double, double.add_token('admin', cluster_admin()))
    instance = instantiate(lcm, namespace='ns-a')
    instance.vnf_metadata = {**instance.vnf_metadata,
                             'termination_grace_seconds': 'forever'}
    with pytest.raises(CnfError, match=r"vnf_metadata\['termination_grace"
                       r"_seconds'\] is 'forever'"):
        lcm.driver.delete_wait(plugin=lcm, context=None, vnf_id=None,
                               auth_attr=lcm.vim.access_info,
                               vnf_instance=instance)
    # A retried terminate sets it again and completes.
    lcm.terminate(instance, TerminateVnfRequest('GRACEFUL', 1))
    assert double.namespaces_in_use(CNF_KINDS) == set()


def test_readiness_deadline_is_a_clear_error():
    never = Timing(pod_ready_after=60)
    with KubeApiDouble(tls=True, timing=never) as api:
        impatient = Timings(ready=0.3, poll_first=0.01, poll_ceiling=0.05)
        lcm = runner(api, api.add_token('admin', cluster_admin()),
                     impatient)
        with pytest.raises(CnfTimeout) as exc:
            instantiate(lcm, namespace='ns-a')
        assert 'Deployment/web' in str(exc.value)
        assert 'readyReplicas 0/1' in str(exc.value)


def test_instantiation_level_sets_the_replicas(double):
    lcm = runner(double, double.add_token('admin', cluster_admin()))
    instance = instantiate(lcm, level='instantiation_level_2',
                           namespace='ns-a')
    assert len(ready_pods(double, 'ns-a')) == 2
    assert len(vnfc_pods(instance)) == 2


def test_scaling_outside_the_vdu_profile_is_refused(double):
    lcm = runner(double, double.add_token('admin', cluster_admin()))
    instance = instantiate(lcm, namespace='ns-a')
    with pytest.raises(CnfError, match=r'outside the VDU VDU1 profile'):
        lcm.scale(instance, ScaleVnfRequest('SCALE_IN', 'web_aspect'))
    lcm.scale(instance, ScaleVnfRequest('SCALE_OUT', 'web_aspect', 2))
    assert len(ready_pods(double, 'ns-a')) == 3
    with pytest.raises(CnfError, match=r'from 3 to 4 replicas'):
        lcm.scale(instance, ScaleVnfRequest('SCALE_OUT', 'web_aspect'))
    assert len(ready_pods(double, 'ns-a')) == 3


def test_rollback_of_a_scale_out_scales_in_again(double):
    lcm = runner(double, double.add_token('admin', cluster_admin()))
    instance = instantiate(lcm, namespace='ns-a')
    request = ScaleVnfRequest('SCALE_OUT', 'web_aspect')
    lcm.scale(instance, request)
    assert len(ready_pods(double, 'ns-a')) == 2
    lcm.rollback_scale_out(instance, request)
    assert len(ready_pods(double, 'ns-a')) == 1


@pytest.mark.parametrize('operation', ['scale', 'heal', 'terminate'])
def test_an_instance_without_namespace_is_a_clear_error(double, operation):
    lcm = runner(double, double.add_token('admin', cluster_admin()))
    instance = lcm.new_instance('vnfd-cnf', additional_params=WEB)
    calls = {
        'scale': lambda: lcm.scale(instance, ScaleVnfRequest(
            'SCALE_OUT', 'web_aspect')),
        'heal': lambda: lcm.heal(instance, HealVnfRequest([])),
        'terminate': lambda: lcm.terminate(instance, TerminateVnfRequest()),
    }
    with pytest.raises(CnfError, match=r"no vnf_metadata\['namespace'\]"):
        calls[operation]()
    assert double.requests == []


def test_a_retried_instantiation_adopts_its_own_objects(double):
    lcm = runner(double, double.add_token('admin', cluster_admin()))
    instance = instantiate(lcm, namespace='ns-a')
    request = InstantiateVnfRequest('simple', {**WEB, 'namespace': 'ns-a'})
    lcm.instantiate(instance, request)          # as Tacker's retry does
    assert double.names('Deployment', 'ns-a') == ['web']
    assert len(ready_pods(double, 'ns-a')) == 1


def test_names_taken_by_another_cnf_change_nothing(double):
    lcm = runner(double, double.add_token('admin', cluster_admin()))
    first = instantiate(lcm, namespace='ns-a')
    before = double.store.snapshot()
    with pytest.raises(CnfError, match='belongs to something else'):
        instantiate(lcm, namespace='ns-a')
    assert double.store.snapshot() == before
    lcm.terminate(first, TerminateVnfRequest())
    assert double.namespaces_in_use(CNF_KINDS) == set()


def test_cnfs_in_two_namespaces_are_independent(double):
    lcm = runner(double, double.add_token('admin', cluster_admin()))
    first = instantiate(lcm, namespace='ns-a')
    second = instantiate(lcm, namespace='ns-b')
    assert second.vnf_metadata['namespace'] == 'ns-b'
    lcm.scale(second, ScaleVnfRequest('SCALE_OUT', 'web_aspect'))
    lcm.terminate(first, TerminateVnfRequest())
    assert double.namespaces_in_use(CNF_KINDS) == {'ns-b'}
    assert len(ready_pods(double, 'ns-b')) == 2

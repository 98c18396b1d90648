"""The Kubernetes API double, driven by the unchanged ``kubernetes``
client (typed and dynamic): discovery, CRUD, the scale subresource,
workload controllers, deletion with propagation, RBAC and TLS."""
from __future__ import annotations

import json
import socket

import pytest
from kubernetes import client, dynamic

from kubernetes_mgmt.remote.retry import wait_until
from kubernetes_mgmt_lab.kube_api import (
    KubeApiDouble,
    Timing,
    cluster_admin,
    namespace_role,
    rbac,
)


def deployment(name: str, replicas: int = 1) -> dict:
    return {'apiVersion': 'apps/v1', 'kind': 'Deployment',
            'metadata': {'name': name},
            'spec': {'replicas': replicas,
                     'selector': {'matchLabels': {'app': name}},
                     'template': {'metadata': {'labels': {'app': name}},
                                  'spec': {'containers': [
                                      {'name': 'c', 'image': 'x'}]}}}}


def api_client(double: KubeApiDouble, token: str,
               ca_file: str | None = None) -> client.ApiClient:
    config = client.Configuration()
    config.host = double.url
    config.api_key = {'authorization': f'Bearer {token}'}
    if ca_file:
        config.ssl_ca_cert = ca_file
    return client.ApiClient(config)


@pytest.fixture
def double():
    with KubeApiDouble(timing=Timing(pod_ready_after=0.01,
                                     terminate_after=0.2)) as api:
        api.add_token('admin', cluster_admin())
        api.add_token('ns-a', namespace_role('cnf', 'ns-a'))
        api.put('Namespace', {'metadata': {'name': 'ns-a'},
                              'status': {'phase': 'Active'}})
        yield api


@pytest.fixture
def admin(double):
    with api_client(double, 'admin') as api:
        yield api


def status_of(exc: client.ApiException) -> dict:
    return json.loads(exc.body)


def test_discovery_serves_the_dynamic_client(admin, tmp_path):
    dyn = dynamic.DynamicClient(admin, cache_file=str(tmp_path / 'c.json'))
    deployments = dyn.resources.get(api_version='apps/v1', kind='Deployment')
    assert deployments.namespaced
    assert set(deployments.subresources) == {'scale', 'status'}
    namespaces = dyn.resources.get(api_version='v1', kind='Namespace')
    assert not namespaces.namespaced
    for api_version, kind in [('batch/v1', 'Job'),
                              ('rbac.authorization.k8s.io/v1', 'Role'),
                              ('v1', 'PersistentVolumeClaim')]:
        assert dyn.resources.get(api_version=api_version, kind=kind)
    assert client.VersionApi(admin).get_code().git_version.startswith('v1.')


def test_typed_crud_and_scale_subresource(admin, double):
    core, apps = client.CoreV1Api(admin), client.AppsV1Api(admin)
    core.create_namespaced_config_map('ns-a', {'metadata': {'name': 'cm'},
                                               'data': {'a': '1'}})
    core.patch_namespaced_config_map('cm', 'ns-a', {'data': {'b': '2'}})
    assert core.read_namespaced_config_map('cm', 'ns-a').data == {
        'a': '1', 'b': '2'}
    current = core.read_namespaced_config_map('cm', 'ns-a')
    current.data = {'c': '3'}
    core.replace_namespaced_config_map('cm', 'ns-a', current)
    assert core.read_namespaced_config_map('cm', 'ns-a').data == {'c': '3'}

    apps.create_namespaced_deployment('ns-a', deployment('web', 2))
    scale = apps.read_namespaced_deployment_scale('web', 'ns-a')
    assert (scale.spec.replicas, scale.status.selector) == (2, 'app=web')
    apps.patch_namespaced_deployment_scale('web', 'ns-a',
                                           {'spec': {'replicas': 3}})
    pods = core.list_namespaced_pod('ns-a', label_selector='app=web').items
    assert len(pods) == 3
    assert all(p.metadata.name.startswith('web-') for p in pods)
    status = apps.read_namespaced_deployment('web', 'ns-a').status
    assert status.observed_generation == 2


def test_pods_become_ready_and_status_follows(admin, double):
    # The double's own clock, held still until the first read: the pods
    # cannot be Ready before it, however slow the machine.
    now = [0.0]
    double.store.clock = lambda: now[0]
    apps = client.AppsV1Api(admin)
    apps.create_namespaced_deployment('ns-a', deployment('web', 2))
    first = apps.read_namespaced_deployment('web', 'ns-a').status
    assert first.ready_replicas is None          # omitted while zero
    now[0] = 1.0                # past the double's pod_ready_after
    assert wait_until(lambda: all(
        p['status']['phase'] == 'Running'
        for p in double.objects('Pod', 'ns-a')), deadline=5)
    status = apps.read_namespaced_deployment('web', 'ns-a').status
    assert (status.ready_replicas, status.available_replicas,
            status.updated_replicas) == (2, 2, 2)


def test_a_deleted_pod_is_replaced_under_a_new_name(admin, double):
    core = client.CoreV1Api(admin)
    client.AppsV1Api(admin).create_namespaced_deployment(
        'ns-a', deployment('web'))
    old = double.names('Pod', 'ns-a')[0]
    core.delete_namespaced_pod(old, 'ns-a')
    pods = core.list_namespaced_pod('ns-a').items
    leaving = [p.metadata.name for p in pods if p.metadata.deletion_timestamp]
    assert leaving == [old]                      # terminating for a while
    assert len(pods) == 2
    new = [p.metadata.name for p in pods if p.metadata.name != old]
    assert new and new[0] != old


def test_foreground_deletion_waits_for_dependents(admin, double):
    apps = client.AppsV1Api(admin)
    apps.create_namespaced_deployment('ns-a', deployment('web', 2))
    reply = apps.delete_namespaced_deployment(
        'web', 'ns-a', propagation_policy='Foreground',
        _preload_content=False)
    # The reply is the deployment as it stands, held by the finalizer
    # until its pods are gone (a read after it may come too late: the
    # double's pods terminate within milliseconds).
    still = json.loads(reply.data)['metadata']
    assert still['deletionTimestamp']
    assert still['finalizers'] == ['foregroundDeletion']
    assert wait_until(lambda: double.names('Deployment', 'ns-a') == [],
                      deadline=5)
    assert double.names('Pod', 'ns-a') == []
    with pytest.raises(client.ApiException) as exc:
        apps.read_namespaced_deployment('web', 'ns-a')
    assert exc.value.status == 404


def test_errors_are_status_objects(admin):
    core = client.CoreV1Api(admin)
    with pytest.raises(client.ApiException) as exc:
        core.read_namespaced_config_map('nope', 'ns-a')
    assert status_of(exc.value)['reason'] == 'NotFound'
    core.create_namespaced_config_map('ns-a', {'metadata': {'name': 'x'}})
    with pytest.raises(client.ApiException) as exc:
        core.create_namespaced_config_map('ns-a', {'metadata': {'name': 'x'}})
    assert (exc.value.status, status_of(exc.value)['reason']) == (
        409, 'AlreadyExists')
    with pytest.raises(client.ApiException) as exc:
        core.create_namespaced_config_map('ns-zz', {'metadata': {
            'name': 'x'}})
    assert status_of(exc.value)['message'] == 'namespaces "ns-zz" not found'


def test_rbac_limits_a_role_token_to_its_namespace(double):
    with api_client(double, 'ns-a') as api:
        core = client.CoreV1Api(api)
        core.create_namespaced_config_map('ns-a', {'metadata': {'name': 'x'}})
        for call in (lambda: core.create_namespaced_config_map(
                         'default', {'metadata': {'name': 'x'}}),
                     lambda: core.list_namespace(),
                     lambda: core.read_namespace('ns-a')):
            with pytest.raises(client.ApiException) as exc:
                call()
            status = status_of(exc.value)
            assert (exc.value.status, status['reason'], status['kind']) == (
                403, 'Forbidden', 'Status')
            assert 'User "cnf" cannot' in status['message']
        authz = client.AuthorizationV1Api(api)
        review = authz.create_self_subject_access_review(
            {'spec': {'resourceAttributes': {
                'namespace': 'ns-a', 'verb': 'create', 'group': 'apps',
                'resource': 'deployments'}}})
        assert review.status.allowed


def test_unknown_tokens_are_unauthorized(double):
    with api_client(double, 'who-am-i') as api:
        with pytest.raises(client.ApiException) as exc:
            client.CoreV1Api(api).list_namespaced_pod('ns-a')
    assert exc.value.status == 401


def test_dry_run_stores_nothing(admin, double):
    client.CoreV1Api(admin).create_namespaced_config_map(
        'ns-a', {'metadata': {'name': 'x'}}, dry_run='All')
    assert double.names('ConfigMap', 'ns-a') == []
    assert double.mutations() == []


def test_tls_with_its_own_ca(tmp_path):
    with KubeApiDouble(tls=True) as double:
        double.add_token('admin', cluster_admin())
        ca = tmp_path / 'ca.crt'
        ca.write_text(double.ca_pem)
        assert double.url.startswith('https://127.0.0.1:')
        with api_client(double, 'admin', str(ca)) as api:
            names = [n.metadata.name for n in
                     client.CoreV1Api(api).list_namespace().items]
        assert 'default' in names


def test_a_silent_client_does_not_stall_other_tls_clients(tmp_path):
    # A client that connects and never starts TLS (a probe cut short on
    # a busy machine) must not block the API for everyone else.
    with KubeApiDouble(tls=True) as double:
        double.add_token('admin', cluster_admin())
        ca = tmp_path / 'ca.crt'
        ca.write_text(double.ca_pem)
        port = int(double.url.rsplit(':', 1)[1])
        with socket.create_connection(('127.0.0.1', port)):
            with api_client(double, 'admin', str(ca)) as api:
                api.configuration.retries = False
                names = [n.metadata.name for n in client.CoreV1Api(api)
                         .list_namespace(_request_timeout=5).items]
        assert 'default' in names


def test_a_kubelet_certificate_reads_its_own_node_only():
    # As kube-apiserver's Node authorizer: the install script checks with
    # kubelet.conf that a join whose record is missing did register.
    kubelet = rbac.from_certificate({'subject': (
        (('organizationName', 'system:nodes'),),
        (('commonName', 'system:node:worker-1'),))})

    def may(verb: str, name: str | None) -> bool:
        return rbac.allows(kubelet, rbac.Attributes(
            verb=verb, group='', resource='nodes', namespace=None,
            name=name))
    assert may('get', 'worker-1')
    assert not may('get', 'worker-2')
    assert not may('delete', 'worker-1')
    assert not may('list', None)
    stranger = rbac.from_certificate({'subject': (
        (('commonName', 'system:node:worker-1'),),)})
    assert not rbac.allows(stranger, rbac.Attributes(
        verb='get', group='', resource='nodes', namespace=None,
        name='worker-1'))

"""The lab's Kubernetes API serves the Table form kubectl asks for (its
human-readable ``get``), with kube-apiserver's columns and kubectl's
ages; other clients still get the objects. The real kubectl prints
these tables in tests/lab/test_real_kubectl_lab.py."""
from __future__ import annotations

import json
import re
import urllib.request

import pytest

from kubernetes_mgmt_lab.kube_api import KubeApiDouble, cluster_admin
from kubernetes_mgmt_lab.kube_api.tables import age, wanted

# What kubectl get sends (without -o).
KUBECTL_ACCEPT = ('application/json;as=Table;v=v1;g=meta.k8s.io,'
                  'application/json;as=Table;v=v1beta1;g=meta.k8s.io,'
                  'application/json')


@pytest.mark.parametrize('seconds, shown', [
    (-5, '<invalid>'), (-1, '0s'), (0, '0s'), (119, '119s'), (120, '2m'),
    (150, '2m30s'), (599, '9m59s'), (600, '10m'), (3 * 3600, '3h'),
    (3 * 3600 + 300, '3h5m'), (8 * 3600, '8h'), (47 * 3600 + 59, '47h'),
    (48 * 3600, '2d'), (50 * 3600, '2d2h'), (8 * 86400, '8d'),
    (729 * 86400, '729d'), (730 * 86400, '2y'), (731 * 86400, '2y1d'),
    (8 * 365 * 86400, '8y')])
def test_ages_read_as_kubectl_shows_them(seconds, shown):
    assert age(seconds) == shown


@pytest.mark.parametrize('accept, version', [
    (KUBECTL_ACCEPT, 'v1'),
    ('application/json;as=Table;v=v1beta1;g=meta.k8s.io', 'v1beta1'),
    ('application/json', None),
    ('application/json, application/json;as=Table;v=v1;g=meta.k8s.io', None),
    ('application/json;as=Table;v=v9;g=meta.k8s.io', None),
    ('', None)])
def test_a_table_is_served_only_when_asked_for_first(accept, version):
    assert wanted(accept) == version


@pytest.fixture
def double():
    with KubeApiDouble(nodes=()) as api:
        api.add_token('admin', cluster_admin())
        api.put('Namespace', {'metadata': {'name': 'ns-a'},
                              'status': {'phase': 'Active'}})
        yield api


def _get(api: KubeApiDouble, path: str, accept: str) -> dict:
    request = urllib.request.Request(f'{api.url}{path}', headers={  # noqa: S310
        'Authorization': 'Bearer admin', 'Accept': accept})
    with urllib.request.urlopen(request, timeout=10) as reply:  # noqa: S310
        return json.load(reply)


def _rows(table: dict) -> list[dict[str, object]]:
    names = [c['name'] for c in table['columnDefinitions']]
    return [dict(zip(names, row['cells'], strict=True))
            for row in table['rows']]


NODE = {'metadata': {'name': 'cp-1', 'labels': {
            'node-role.kubernetes.io/control-plane': ''}},
        'spec': {'unschedulable': True},
        'status': {'conditions': [{'type': 'Ready', 'status': 'True'}],
                   'addresses': [{'type': 'InternalIP',
                                  'address': '10.0.0.5'}],
                   'nodeInfo': {'kubeletVersion': 'v1.30.2'}}}


def test_nodes_as_kubectl_gets_them(double):
    double.put('Node', NODE)
    double.put('Node', {'metadata': {'name': 'bare'}})
    table = _get(double, '/api/v1/nodes', KUBECTL_ACCEPT)
    assert (table['kind'], table['apiVersion']) == ('Table',
                                                    'meta.k8s.io/v1')
    assert [(c['name'], c['priority']) for c in table['columnDefinitions']
            ] == [('Name', 0), ('Status', 0), ('Roles', 0), ('Age', 0),
                  ('Version', 0), ('Internal-IP', 1), ('External-IP', 1),
                  ('OS-Image', 1), ('Kernel-Version', 1),
                  ('Container-Runtime', 1)]
    bare, cp = _rows(table)                    # by name
    assert re.fullmatch(r'[0-9]+[smhdy][0-9smhd]*', cp['Age'])
    del cp['Age'], bare['Age']
    assert cp == {'Name': 'cp-1', 'Status': 'Ready,SchedulingDisabled',
                  'Roles': 'control-plane', 'Version': 'v1.30.2',
                  'Internal-IP': '10.0.0.5', 'External-IP': '<none>',
                  'OS-Image': '<unknown>', 'Kernel-Version': '<unknown>',
                  'Container-Runtime': '<unknown>'}
    assert (bare['Status'], bare['Roles']) == ('Unknown', '<none>')
    # kubectl reads namespaces and labels from the row's object.
    assert table['rows'][1]['object']['kind'] == 'PartialObjectMetadata'
    assert table['rows'][1]['object']['metadata']['labels'] == \
        NODE['metadata']['labels']


def test_one_object_and_include_object(double):
    double.put('Node', NODE)
    one = _get(double, '/api/v1/nodes/cp-1?includeObject=Object',
               KUBECTL_ACCEPT)
    assert [row['object']['spec'] for row in one['rows']] == [NODE['spec']]
    bare = _get(double, '/api/v1/nodes?includeObject=None', KUBECTL_ACCEPT)
    assert 'object' not in bare['rows'][0]


def test_pods_show_readiness_status_and_restarts(double):
    ready = {'type': 'Ready', 'status': 'True'}
    for name, status in (
            ('up', {'phase': 'Running', 'conditions': [ready],
                    'podIP': '10.244.0.7'}),
            ('done', {'phase': 'Succeeded'}),
            ('pulling', {'phase': 'Pending', 'containerStatuses': [
                {'ready': False, 'restartCount': 2,
                 'state': {'waiting': {'reason': 'ImagePullBackOff'}}},
                {'ready': True, 'restartCount': 1, 'state': {}}]})):
        double.put('Pod', {
            'metadata': {'name': name, 'namespace': 'ns-a'},
            'spec': {'nodeName': 'w-1', 'containers': [
                {'name': 'a'}, {'name': 'b'}]}, 'status': status})
    rows = _rows(_get(double, '/api/v1/namespaces/ns-a/pods',
                      KUBECTL_ACCEPT))
    assert [(r['Name'], r['Ready'], r['Status'], r['Restarts'], r['IP'],
             r['Node']) for r in rows] == [
        ('done', '0/2', 'Completed', '0', '<none>', 'w-1'),
        ('pulling', '1/2', 'ImagePullBackOff', '3', '<none>', 'w-1'),
        ('up', '2/2', 'Running', '0', '10.244.0.7', 'w-1')]


def test_volumes_and_namespaces(double):
    double.put('PersistentVolume', {
        'metadata': {'name': 'pv-1'},
        'spec': {'capacity': {'storage': '1Gi'},
                 'accessModes': ['ReadWriteMany', 'ReadWriteOnce'],
                 'persistentVolumeReclaimPolicy': 'Retain',
                 'claimRef': {'namespace': 'ns-a', 'name': 'data'},
                 'nfs': {'server': '10.0.0.9', 'path': '/srv/1'}}})
    pv, = _rows(_get(double, '/api/v1/persistentvolumes', KUBECTL_ACCEPT))
    del pv['Age']
    assert pv == {'Name': 'pv-1', 'Capacity': '1Gi', 'Access Modes':
                  'RWX,RWO', 'Reclaim Policy': 'Retain',
                  'Status': 'Released', 'Claim': 'ns-a/data',
                  'StorageClass': '', 'VolumeAttributesClass': '<unset>',
                  'Reason': '', 'VolumeMode': '<unset>'}
    namespaces = _rows(_get(double, '/api/v1/namespaces', KUBECTL_ACCEPT))
    assert {'Name': 'ns-a', 'Status': 'Active'}.items() <= \
        next(n for n in namespaces if n['Name'] == 'ns-a').items()


def test_other_clients_still_get_the_objects(double):
    double.put('Node', NODE)
    listing = _get(double, '/api/v1/nodes', 'application/json')
    assert listing['kind'] == 'NodeList'
    assert [n['metadata']['name'] for n in listing['items']] == ['cp-1']

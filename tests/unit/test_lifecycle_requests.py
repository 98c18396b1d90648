"""Checks of scale and heal requests that run before any host is touched,
Tacker's requests read by the shim as the operations' typed requests, and
the exact etcd member matching (no lab needed)."""
from __future__ import annotations

import json

import pytest

from kubernetes_mgmt.cluster.etcd import EtcdMember, parse_members
from kubernetes_mgmt.errors import MgmtDriverError, ValidationError
from kubernetes_mgmt.operations import heal, scale
from kubernetes_mgmt.params.validate import parse_cluster_params
from kubernetes_mgmt.shim import requests, tacker_objects
from kubernetes_mgmt.shim.v1_hooks import Lifecycle
from kubernetes_mgmt.state.instance_state import DriverState, NodeRecord
from kubernetes_mgmt_lab import tacker_shapes

REQUEST = {'k8s_cluster_installation_param': {
    'script_path': 'Scripts/install_k8s_cluster.sh',
    'master_node': {'aspect_id': 'master_instance',
                    'ssh_cp_name': 'masterNode_CP1',
                    'nic_cp_name': 'masterNode_CP1',
                    'cluster_cp_name': 'vip_CP',
                    'username': 'ubuntu', 'password': 'secret-pw'},
    'worker_node': {'aspect_id': 'worker_instance',
                    'ssh_cp_name': 'workerNode_CP2',
                    'nic_cp_name': 'workerNode_CP2',
                    'username': 'ubuntu', 'password': 'secret-pw'}}}


def params(**worker):
    body = json.loads(json.dumps(REQUEST))
    body['k8s_cluster_installation_param']['worker_node'].update(worker)
    for key, value in worker.items():
        if value is None:
            del body['k8s_cluster_installation_param']['worker_node'][key]
    return parse_cluster_params(body)


def tacker_scale_request(kind, aspect):
    return tacker_shapes.ScaleVnfRequest(type=kind, aspect_id=aspect)


def scale_request(kind, aspect):
    """Tacker's request as the shim hands it to the operations."""
    return requests.scale_request(tacker_scale_request(kind, aspect))


# -- scale ------------------------------------------------------------------

def test_worker_aspect_scales_both_ways():
    for kind in ('SCALE_OUT', 'SCALE_IN'):
        assert scale.check_request(scale_request(kind, 'worker_instance'),
                                   params()) == kind


def test_master_aspect_is_refused_clearly():
    with pytest.raises(ValidationError) as info:
        scale.check_request(scale_request('SCALE_IN', 'master_instance'),
                            params())
    text = str(info.value)
    assert "aspectId: 'master_instance' is the master aspect" in text
    assert "only 'worker_instance' scales" in text


def test_unknown_aspect_and_type_are_refused():
    with pytest.raises(ValidationError) as info:
        scale.check_request(scale_request('SCALE_UP', 'db_instance'),
                            params())
    assert [p.path for p in info.value.problems] == ['type', 'aspectId']
    assert "its workers scale with 'worker_instance'" in str(info.value)


def test_workers_without_aspect_cannot_scale():
    with pytest.raises(ValidationError, match='form no scaling group'):
        scale.check_request(scale_request('SCALE_OUT', 'worker_instance'),
                            params(aspect_id=None))


def test_request_bodies_work_as_well_as_objects():
    body = {'type': 'SCALE_OUT', 'aspectId': 'worker_instance'}
    assert scale.check_request(requests.scale_request(body),
                               params()) == 'SCALE_OUT'
    assert tacker_objects.vnfc_instance_ids(
        {'vnfcInstanceId': ['a', 'b']}) == ['a', 'b']


# -- heal targets ---------------------------------------------------------

def instance(nodes: dict[str, tuple[str, str]]):
    """An instance whose VNFC ``v-<server>`` runs on each server."""
    inst = tacker_shapes.VnfInstance(
        id='inst-1', instantiated_vnf_info=tacker_shapes.InstantiatedVnfInfo(
            instance_id='stack-1'))
    inst.instantiated_vnf_info.vnfc_resource_info = [
        tacker_shapes.VnfcResourceInfo(
            id=f'v-{server}', vdu_id='masterNode' if role == 'master'
            else 'workerNode',
            compute_resource=tacker_shapes.ResourceHandle(server))
        for server, (role, _) in nodes.items()]
    state = DriverState()
    for index, (server, (role, name)) in enumerate(nodes.items()):
        state.remember_node(server, NodeRecord(name, role,
                                               f'10.0.0.{index + 10}'))
    return inst, state


def targets(inst, vnfc_ids, state):
    """The heal targets of Tacker's instance, read by the shim."""
    return heal.targets(requests.operation_request(inst), vnfc_ids, state)


def test_vnfcs_map_to_their_nodes():
    inst, state = instance({'s1': ('master', 'master-a'),
                            's2': ('master', 'master-b'),
                            's3': ('worker', 'worker-c')})
    found = targets(inst, ['v-s3', 'v-s1', 'v-s3'], state)
    assert [(t.vnfc_id, t.name, t.role) for t in found] == [
        ('v-s3', 'worker-c', 'worker'), ('v-s1', 'master-a', 'master')]


def test_unknown_vnfc_is_refused_naming_the_known_ones():
    inst, state = instance({'s1': ('master', 'master-a')})
    with pytest.raises(ValidationError) as info:
        targets(inst, ['nope'], state)
    assert "vnfcInstanceId[0]: 'nope' is not a VNFC" in str(info.value)
    assert 'v-s1' in str(info.value)


def test_only_master_of_a_simple_cluster_is_refused():
    inst, state = instance({'s1': ('master', 'master-a'),
                            's2': ('worker', 'worker-b')})
    with pytest.raises(ValidationError, match='only master of this '
                       'single-master cluster'):
        targets(inst, ['v-s1'], state)
    assert targets(inst, ['v-s2'], state)[0].name == 'worker-b'


def test_every_master_at_once_is_refused():
    inst, state = instance({'s1': ('master', 'm-a'), 's2': ('master', 'm-b'),
                            's3': ('master', 'm-c')})
    assert len(targets(inst, ['v-s1', 'v-s2'], state)) == 2
    with pytest.raises(ValidationError, match='all 3 masters'):
        targets(inst, ['v-s1', 'v-s2', 'v-s3'], state)


def test_repeated_heal_start_finds_the_noted_node():
    inst, state = instance({'s1': ('master', 'm-a'),
                            's2': ('worker', 'w-b')})
    state.forget_node('s2')
    state.healing['v-s2'] = {'server_id': 's2', 'name': 'w-b',
                             'role': 'worker', 'ip': '10.0.0.11'}
    assert targets(inst, ['v-s2'], state)[0].name == 'w-b'


# -- etcd -------------------------------------------------------------------

MEMBER_LIST = json.dumps({'header': {'cluster_id': 1}, 'members': [
    {'ID': 11002357956697334847, 'name': 'master-a',
     'peerURLs': ['https://10.0.0.11:2380'],
     'clientURLs': ['https://10.0.0.11:2379']},
    {'ID': 12, 'name': 'master-ab',
     'peerURLs': ['https://10.0.0.111:2380']},
    {'ID': 'ff', 'name': '', 'peerURLs': ['https://10.0.0.12:2380']}]})


def test_member_ids_survive_json_and_print_as_hex():
    members = parse_members(MEMBER_LIST)
    assert members[0].id == 11002357956697334847
    assert members[0].hex_id == f'{11002357956697334847:x}'
    assert members[2].id == 255 and members[2].hex_id == 'ff'


def test_members_match_exactly_never_by_substring():
    a, ab, unstarted = parse_members(MEMBER_LIST)
    assert a.is_node('master-a', '10.0.0.11')
    # 'master-a' is a prefix of 'master-ab', 10.0.0.11 of 10.0.0.111
    assert not ab.is_node('master-a', '10.0.0.11')
    assert unstarted.is_node('master-x', '10.0.0.12')
    assert not EtcdMember(1, '', ('https://10.0.0.1:2380',)).is_node(
        '', '10.0.0.12')


def stored_instance():
    inst = tacker_shapes.VnfInstance(
        id='inst-2', instantiated_vnf_info=tacker_shapes.InstantiatedVnfInfo(
            instance_id='stack-2', additional_params=json.loads(
                json.dumps(REQUEST))))
    return inst


def test_rollback_of_a_refused_master_scale_out_has_nothing_to_undo():
    # scale_end refused it before any VM was touched; Tacker's rollback
    # must go on to delete the VMs. No Heat, no SSH is needed for that.
    inst = stored_instance()
    hooks = Lifecycle()
    assert hooks.scale_start(
        None, inst, tacker_scale_request('SCALE_OUT', 'master_instance'),
        None, None, scale_name_list=['abc']) is None
    with pytest.raises(ValidationError, match='is the master aspect'):
        hooks.scale_start(
            None, inst, tacker_scale_request('SCALE_IN', 'master_instance'),
            None, None, scale_name_list=['abc'])
    assert inst.saves == 0 and not inst.vnf_metadata


def test_operations_need_the_stored_request():
    inst = stored_instance()
    inst.instantiated_vnf_info.additional_params = {}
    with pytest.raises(MgmtDriverError,
                       match='no stored instantiate parameters'):
        Lifecycle().scale_end(
            None, inst, tacker_scale_request('SCALE_OUT', 'worker_instance'),
            None, None, scale_out_id_list=['x'])


@pytest.mark.parametrize('hook, request_', [
    ('scale_start', tacker_shapes.ScaleVnfRequest(
        type='SCALE_IN', aspect_id='worker_instance',
        additional_params={'private_registries': []})),
    ('scale_end', tacker_shapes.ScaleVnfRequest(
        type='SCALE_OUT', aspect_id='worker_instance',
        additional_params={'private_registries': []})),
    ('heal_start', tacker_shapes.HealVnfRequest(
        vnfc_instance_id=['vnfc-1'],
        additional_params={'private_registries': []}))])
def test_v1_refuses_new_registries_it_could_not_keep(hook, request_):
    inst = stored_instance()
    with pytest.raises(ValidationError) as info:
        getattr(Lifecycle(), hook)(None, inst, request_, None, None)
    (problem,) = info.value.problems
    assert problem.path == 'additionalParams.private_registries'
    assert "v1 API keeps the registries of instantiate" in problem.message
    assert inst.saves == 0 and not inst.vnf_metadata

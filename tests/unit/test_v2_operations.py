"""The v2 operations as the v1 hooks' inputs: what a scale-in removes,
what a scale-out adds, which request the hooks see, which operations
have work. Nothing here reaches Heat, SSH or Tacker."""
from __future__ import annotations

import copy
import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from kubernetes_mgmt.errors import ValidationError
from kubernetes_mgmt.operations import scale
from kubernetes_mgmt.params.schema import USER_DATA_CLASS_KEY, USER_DATA_KEY
from kubernetes_mgmt.params.validate import parse_cluster_params
from kubernetes_mgmt.shim import instance_store
from kubernetes_mgmt.shim.v2 import entry, operations
from kubernetes_mgmt.shim.v2.instance import V2Instance
from kubernetes_mgmt.shim.v2.operations import Call
from kubernetes_mgmt.state import instance_state
from kubernetes_mgmt.state.instance_state import DriverState, NodeRecord
from kubernetes_mgmt.topology.hosts import Host, Role, Topology

REPO = Path(__file__).resolve().parents[2]
INSTANCE_ID = 'inst-7'
STACK_ID = 'top-stack-id'
# (VDU, index, server): a master, four workers, the storage server.
VNFCS = (('masterNode', 0, 'srv-m0'), ('workerNode', 0, 'srv-w0'),
         ('workerNode', 1, 'srv-w1'), ('workerNode', 2, 'srv-w2'),
         ('workerNode', 10, 'srv-w10'), ('storage_server', 0, 'srv-s0'))


def _vnfc(vdu: str, index: int, server: str) -> dict:
    return {'id': server, 'vduId': vdu,
            'computeResource': {'vimConnectionId': 'openstack',
                                'resourceId': server,
                                'vimLevelResourceType': 'OS::Nova::Server'},
            'metadata': {'creation_time': '2024-05-01T10:00:00Z',
                         'stack_id': f'vnf-{INSTANCE_ID}-{vdu}-{index}-q1/'
                                     f'nested-{vdu}-{index}',
                         'parent_stack_id': f'vnf-{INSTANCE_ID}/{STACK_ID}',
                         'parent_resource_name': f'{vdu}-{index}',
                         'vdu_idx': index}}


def v2_instance(vnfcs=VNFCS) -> dict:
    return {
        'id': INSTANCE_ID, 'vnfdId': 'vnfd-1',
        'instantiationState': 'INSTANTIATED',
        'vimConnectionInfo': {'openstack': {
            'vimId': 'os-vim', 'vimType': 'ETSINFV.OPENSTACK_KEYSTONE.V_3',
            'interfaceInfo': {'endpoint': 'http://keystone/v3'},
            'accessInfo': {'username': 'nfv', 'password': 'os-secret',
                           'project': 'nfv', 'projectDomain': 'Default',
                           'userDomain': 'Default',
                           'region': 'RegionOne'}}},
        'instantiatedVnfInfo': {
            'flavourId': 'simple',
            'vnfcResourceInfo': [_vnfc(*v) for v in vnfcs],
            'vnfcInfo': [{'id': f'{vdu}-{server}', 'vduId': vdu,
                          'vnfcResourceInfoId': server,
                          'vnfcState': 'STARTED'}
                         for vdu, _, server in vnfcs],
            'metadata': {'stack_id': STACK_ID}},
        'metadata': {'owner': 'team-a'},
    }


def _call(operation='scale_start', request=None, instance=None,
          grant_request=None) -> Call:
    return Call(operation=operation, request=request or {},
                instance=instance or V2Instance(v2_instance()),
                grant_request=grant_request, grant=None)



# -- the request the hooks see ----------------------------------------------

def test_driver_request_strips_only_the_user_data_keys():
    request = {
        'flavourId': 'simple', 'instantiationLevelId': 'instantiation_level_1',
        'extVirtualLinks': [{'id': 'net0'}],
        'additionalParams': {
            USER_DATA_KEY: './UserData/userdata_standard.py',
            USER_DATA_CLASS_KEY: 'StandardUserData',
            'k8s_cluster_installation_param': {'vim_name': 'k8s'},
            'nfv': {'VDU': {'workerNode': {'computeFlavourId': 'm1'}}}}}
    before = copy.deepcopy(request)
    out = operations.driver_request(request)
    assert out == {
        'flavourId': 'simple', 'instantiationLevelId': 'instantiation_level_1',
        'extVirtualLinks': [{'id': 'net0'}],
        'additionalParams': {
            'k8s_cluster_installation_param': {'vim_name': 'k8s'},
            'nfv': {'VDU': {'workerNode': {'computeFlavourId': 'm1'}}}}}
    assert request == before


def test_driver_request_without_additional_params():
    out = operations.driver_request({'type': 'SCALE_IN',
                                     'aspectId': 'worker_instance'})
    assert out == {'type': 'SCALE_IN', 'aspectId': 'worker_instance',
                   'additionalParams': {}}


def _v2_instantiate_request() -> dict:
    """The complex sample as a v2 request: Tacker's standard user data,
    node groups without aspect ids (one nested stack per VDU)."""
    body = json.loads((REPO / 'samples/requests/'
                       'complex_kubernetes_param_file.json').read_text())
    body = json.loads(json.dumps(body).replace('REPLACE_WITH_', 'x'))
    additional = body['additionalParams']
    additional[USER_DATA_KEY] = './UserData/userdata_standard.py'
    additional[USER_DATA_CLASS_KEY] = 'StandardUserData'
    for group in ('master_node', 'worker_node'):
        del additional['k8s_cluster_installation_param'][group]['aspect_id']
    return body


def test_instantiate_start_accepts_a_v2_request_with_user_data():
    request = _v2_instantiate_request()
    # The v1 rule (user data sizes each group by its aspect) refuses it...
    with pytest.raises(ValidationError, match='aspect_id'):
        parse_cluster_params(request['additionalParams'])
    # ...it does not hold under v2, where Tacker's user data does that.
    operations.run(_call('instantiate_start', request))


def test_instantiate_start_refuses_a_bad_request_before_any_vm():
    request = _v2_instantiate_request()
    param = request['additionalParams']['k8s_cluster_installation_param']
    del param['worker_node']['ssh_cp_name']
    with pytest.raises(ValidationError) as caught:
        operations.run(_call('instantiate_start', request))
    assert 'worker_node' in str(caught.value)
    assert 'ssh_cp_name' in str(caught.value)


# -- what has work ------------------------------------------------------------

@pytest.mark.parametrize('operation', [
    'instantiate_start', 'instantiate_end', 'instantiate_rollback_start',
    'terminate_start', 'scale_start', 'scale_end', 'scale_rollback_start',
    'heal_start', 'heal_end', 'change_current_package_start',
    'change_current_package_rollback_start'])
def test_operations_with_work(operation):
    assert operations.has_work(operation)
    assert operation in operations.OPERATIONS


@pytest.mark.parametrize('operation', [
    'modify_information_start', 'modify_information_end',
    'change_external_connectivity_start',
    'change_external_connectivity_end', 'change_current_package_end',
    'change_current_package_rollback_end', 'terminate_end',
    'instantiate_rollback_end', 'scale_rollback_end',
    'operate_start', 'no_such_operation'])
def test_operations_without_work_do_nothing(operation):
    request = {'vnfInstanceName': 'x', 'additionalParams': {
        USER_DATA_KEY: './UserData/u.py', USER_DATA_CLASS_KEY: 'U'}}
    call = _call(operation, copy.deepcopy(request))
    assert not operations.has_work(operation)
    operations.run(call)
    assert call.request == request
    assert call.instance.to_dict() == v2_instance()


@pytest.mark.parametrize('operation, scale_type', [
    ('scale_start', 'SCALE_OUT'),         # a scale-out joins at the end
    ('scale_end', 'SCALE_IN'),            # a scale-in left at the start
    ('scale_rollback_start', 'SCALE_IN'),  # only a scale-out is undone
])
def test_scale_steps_without_work_touch_nothing(operation, scale_type):
    # Without stored parameters or state, any hook would fail at once.
    call = _call(operation, {'type': scale_type,
                             'aspectId': 'worker_instance',
                             'numberOfSteps': 1})
    operations.run(call)
    assert call.instance.to_dict() == v2_instance()


# -- scale-in: the members removed -----------------------------------------

def _remove(*servers: str, kind: str = 'COMPUTE') -> list[dict]:
    return [{'id': f'res-{s}', 'type': kind,
             'resourceTemplateId': 'workerNode',
             'resource': {'vimConnectionId': 'openstack',
                          'resourceId': s,
                          'vimLevelResourceType': 'OS::Nova::Server'}}
            for s in servers]


def test_removed_members_of_a_scale_in():
    grant_request = {
        'vnfInstanceId': INSTANCE_ID, 'operation': 'SCALE',
        'removeResources': [
            *_remove('srv-w10', 'srv-w2'),
            # Ports and volumes of those VMs: not members.
            *_remove('srv-w1', kind='LINKPORT'),
            *_remove('srv-w0', kind='STORAGE')]}
    call = _call(grant_request=grant_request)
    # In the instance's order.
    assert operations._removed_members(call) == ['workerNode-2',
                                                 'workerNode-10']


def test_removed_members_without_parent_resource_name():
    data = v2_instance()
    for vnfc in data['instantiatedVnfInfo']['vnfcResourceInfo']:
        del vnfc['metadata']['parent_resource_name']
    call = _call(instance=V2Instance(data), grant_request={
        'removeResources': _remove('srv-w1')})
    assert operations._removed_members(call) == ['workerNode-1']


@pytest.mark.parametrize('grant_request', [
    None, {}, {'removeResources': []},
    {'removeResources': _remove('srv-unknown')}])
def test_nothing_removed(grant_request):
    call = _call(grant_request=grant_request)
    assert operations._removed_members(call) == []


# -- scale-out: the new members ---------------------------------------------

def _known(instance: V2Instance, *servers: str,
           storage: str | None = 'srv-s0') -> V2Instance:
    """``instance`` as Tacker hands it to the script once the driver
    stored these nodes (and the storage server) in it."""
    state = DriverState(stack_id=STACK_ID, first_master='srv-m0',
                        storage_server=storage)
    for i, server in enumerate(servers):
        state.remember_node(server, NodeRecord(f'node{i}', 'worker',
                                               f'10.0.0.{20 + i}'))
    instance_state.save(instance, state)
    return V2Instance(instance.to_dict())


def test_new_member_stacks_are_the_servers_no_node_knows(state_key):
    instance = _known(V2Instance(v2_instance()), 'srv-m0', 'srv-w0',
                      'srv-w1')
    call = _call('scale_end', instance=instance)
    assert operations._new_member_stacks(call) == [
        'nested-workerNode-2', 'nested-workerNode-10']


def _failed_scale_out(before: V2Instance) -> dict:
    """The inputs of the retry (or rollback) of a scale-out whose
    scale_end failed: Tacker hands the instance as it was before, and the
    failed attempt's error handling data. scale_out remembers the new
    workers in the state before it touches any host ("a rollback finds
    them"), and the state is saved when it fails."""
    failed = V2Instance(before.to_dict())
    state = instance_state.load(failed)
    state.remember_node('srv-w2', NodeRecord('worker-2', 'worker',
                                             '10.0.0.32'))
    state.remember_node('srv-w10', NodeRecord('worker-10', 'worker',
                                              '10.0.0.40'))
    instance_state.save(failed, state)
    return {'operation': 'scale_end', 'vnf_instance': before.to_dict(),
            'user_script_err_handling_data':
                entry.result(failed, 1)['user_script_err_handling_data']}


def _sample_params() -> dict:
    """The complex sample's instantiate parameters, as stored."""
    request = json.loads((REPO / 'samples/requests/'
                          'complex_kubernetes_param_file.json').read_text())
    return json.loads(json.dumps(request['additionalParams'])
                      .replace('REPLACE_WITH_', 'x'))


def _as_main_adapts(inputs: dict) -> V2Instance:
    instance = V2Instance(inputs['vnf_instance'])
    instance.adopt_state(entry.carried_state(inputs))
    return instance


def test_the_retry_of_a_failed_scale_out_joins_the_new_workers(state_key):
    # "on a retry the nodes a failed attempt joined count as new again
    # (and their steps find their work done)": the retry must join
    # workerNode-2 and workerNode-10, which the failed attempt only
    # remembered (or joined in part).
    before = _known(V2Instance(v2_instance()), 'srv-m0', 'srv-w0',
                    'srv-w1')
    retry = _as_main_adapts(_failed_scale_out(before))
    call = _call('scale_end', {'type': 'SCALE_OUT',
                               'aspectId': 'worker_instance'},
                 instance=retry)
    assert operations._new_member_stacks(call) == [
        'nested-workerNode-2', 'nested-workerNode-10']


def test_a_retry_s_start_script_hands_no_adopted_state_to_its_end(
        state_key):
    """Tacker merges the result of the retry's scale_start into the
    instance scale_end gets, and hands both the failed attempt's state:
    scale_end must still find the new workers new."""
    before = _known(V2Instance(v2_instance()), 'srv-m0', 'srv-w0',
                    'srv-w1')
    failed = _failed_scale_out(before)
    start = _as_main_adapts(failed)
    operations.run(_call('scale_start', {'type': 'SCALE_OUT',
                                         'aspectId': 'worker_instance'},
                         instance=start))
    handed = entry.result(start, 0)['vnf_instance']
    assert handed['metadata'] == before.to_dict()['metadata']
    end = _as_main_adapts({**failed, 'vnf_instance': handed})
    call = _call('scale_end', {'type': 'SCALE_OUT',
                               'aspectId': 'worker_instance'},
                 instance=end)
    assert operations._new_member_stacks(call) == [
        'nested-workerNode-2', 'nested-workerNode-10']


def test_the_rollback_of_a_failed_scale_out_removes_the_new_workers(
        state_key, monkeypatch):
    # Heat (not here) lists the workers of the scaled-out stack.
    workers = tuple(
        Host(Role.WORKER, server, 'workerNode', f'10.0.0.{30 + i}',
             f'10.0.0.{30 + i}', member_name=f'workerNode-{index}')
        for i, (vdu, index, server) in enumerate(VNFCS)
        if vdu == 'workerNode')
    masters = (Host(Role.MASTER, 'srv-m0', 'masterNode', '10.0.0.10',
                    '10.0.0.10', member_name='masterNode-0'),)
    monkeypatch.setattr(instance_store, 'heat_client_for',
                        lambda instance, context: 'heat')

    def read_topology(heat, stack_id, cluster_params):
        assert (heat, stack_id) == ('heat', STACK_ID)
        assert cluster_params.worker.ssh_cp_name == 'workerNode_CP2'
        return Topology(STACK_ID, masters, workers, cluster_ip='10.0.0.10')

    monkeypatch.setattr(scale, 'read_topology', read_topology)
    before = V2Instance(v2_instance())
    before.store_params(_sample_params())
    before = _known(before, 'srv-m0', 'srv-w0', 'srv-w1')
    rollback = _as_main_adapts(_failed_scale_out(before))
    call = _call('scale_rollback_start', {'type': 'SCALE_OUT',
                                          'aspectId': 'worker_instance'},
                 instance=rollback)
    # The members the failed scale-out added leave before Heat deletes
    # their VMs; the workers from before stay.
    assert _leaving_in_rollback(call) == ['workerNode-2', 'workerNode-10']


def test_the_rollback_leaves_the_workers_from_before(state_key,
                                                     monkeypatch):
    monkeypatch.setattr(instance_store, 'heat_client_for',
                        lambda instance, context: 'heat')
    workers = (Host(Role.WORKER, 'srv-w0', 'workerNode', '10.0.0.30',
                    '10.0.0.30', member_name='workerNode-0'),
               Host(Role.WORKER, 'srv-w9', 'workerNode', '10.0.0.39',
                    '10.0.0.39', member_name='workerNode-9'))
    monkeypatch.setattr(
        scale, 'read_topology', lambda heat, stack_id, params:
        Topology(STACK_ID, (), workers, cluster_ip='10.0.0.10'))
    instance = V2Instance(v2_instance())
    instance.store_params(_sample_params())
    instance = _known(instance, 'srv-m0', 'srv-w0')
    call = _call('scale_rollback_start', {'type': 'SCALE_OUT'},
                 instance=instance)
    assert _leaving_in_rollback(call) == ['workerNode-9']


def _leaving_in_rollback(call) -> list[str]:
    """The members scale_rollback_start removes: those of the stack that
    are no node of the state Tacker kept."""
    return scale.members_outside(call.day2_request(), call.store,
                                 operations._nodes_kept_by_tacker(call))


def test_without_state_every_vnfc_is_new(state_key):
    call = _call(instance=V2Instance(v2_instance()))
    assert operations._new_member_stacks(call) == [
        f'nested-{vdu}-{index}' for vdu, index, _ in VNFCS]


def test_a_vnfc_without_stack_id_is_skipped(state_key):
    data = v2_instance()
    worker = data['instantiatedVnfInfo']['vnfcResourceInfo'][3]
    assert worker['id'] == 'srv-w2'
    del worker['metadata']['stack_id']
    instance = _known(V2Instance(data), 'srv-m0', 'srv-w0', 'srv-w1')
    assert operations._new_member_stacks(_call(instance=instance)) == [
        'nested-workerNode-10']


def test_a_tampered_state_refuses_the_scale_out(state_key):
    data = _known(V2Instance(v2_instance()), 'srv-m0', 'srv-w0',
                  'srv-w1').to_dict()
    stored = json.loads(data['metadata'][instance_state.METADATA_KEY])
    stored['state']['nodes']['srv-w2'] = {'name': 'x', 'role': 'worker',
                                          'ip': '10.0.0.99'}
    data['metadata'][instance_state.METADATA_KEY] = json.dumps(stored)
    instance = V2Instance(data)
    with pytest.raises(instance_state.TamperedState, match='srv-w2'):
        operations._new_member_stacks(_call(instance=instance))


def test_instantiate_start_refuses_a_minor_its_package_does_not_name(
        tmp_path):
    # Tacker hands the script the instance's package (tmp_csar_dir).
    sample = REPO / 'samples/vnf_package_v2'
    for name in ('TOSCA-Metadata', 'Definitions'):
        shutil.copytree(sample / name, tmp_path / name)
    for path in (tmp_path / 'Definitions').glob('*.yaml'):
        path.write_text(path.read_text().replace("'1.37'", "'1.36'"))
    request = _v2_instantiate_request()
    param = request['additionalParams']['k8s_cluster_installation_param']
    param['kubernetes_version'] = '1.37'
    instance = V2Instance(v2_instance())
    before = copy.deepcopy(instance.vnf_metadata)
    call = dataclasses.replace(_call('instantiate_start', request, instance),
                               csar_dir=str(tmp_path))
    with pytest.raises(ValidationError) as caught:
        operations.run(call)
    assert [(p.path, p.message.split(',')[0]) for p in
            caught.value.problems] == [
        ('additionalParams.k8s_cluster_installation_param.kubernetes_version',
         '1.37 is not 1.36')]
    assert instance.vnf_metadata == before      # no key for the VMs yet
    param['kubernetes_version'] = '1.36'
    operations.run(dataclasses.replace(call, request=request))
    assert instance.vnf_metadata != before

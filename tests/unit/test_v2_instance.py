"""A v2 VNF instance (``VnfInstanceV2.to_dict()``) seen by the v1 hooks:
what they read, and what they write back into the dict Tacker keeps."""
from __future__ import annotations

import copy
import json

import pytest

from kubernetes_mgmt.shim import tacker_objects
from kubernetes_mgmt.shim.v2 import sealed
from kubernetes_mgmt.shim.v2.instance import PARAMS_KEY, VIM_KEY, V2Instance
from kubernetes_mgmt.shim.vim_connection import (
    add_vim_connection,
    remove_vim_connection,
)
from kubernetes_mgmt.state import instance_state
from kubernetes_mgmt.state.instance_state import DriverState, NodeRecord
from kubernetes_mgmt.vim.registration import VimRecord

INSTANCE_ID = 'd6f8ad4e-6c3b-4d5c-9f4f-1b2a3c4d5e6f'
STACK_ID = '5e3a1a2b-0c0d-4e5f-8a9b-0c1d2e3f4a5b'
OS_PASSWORD = 'os-vim-password'
CA = '-----BEGIN CERTIFICATE-----\nMIIC5zCCAc+gAwIBAgIBADANBgkq\n' \
     '-----END CERTIFICATE-----\n'
VNFCS = (('masterNode', 0, 'srv-m0'), ('workerNode', 0, 'srv-w0'),
         ('workerNode', 1, 'srv-w1'))


def v2_instance() -> dict:
    """An instantiated instance as Tacker's VnfInstanceV2.to_dict()."""
    resources, infos = [], []
    for vdu, index, server in VNFCS:
        resources.append({
            'id': server, 'vduId': vdu,
            'computeResource': {
                'vimConnectionId': 'openstack', 'resourceId': server,
                'vimLevelResourceType': 'OS::Nova::Server'},
            'vnfcCpInfo': [{'id': f'{vdu}_CP1-{server}',
                            'cpdId': f'{vdu}_CP1'}],
            'metadata': {
                'creation_time': '2024-05-01T10:00:00Z',
                'stack_id': f'vnf-{INSTANCE_ID}-{vdu}-{index}-x1/'
                            f'nested-{server}',
                'parent_stack_id': f'vnf-{INSTANCE_ID}/{STACK_ID}',
                'parent_resource_name': f'{vdu}-{index}',
                'flavor': 'm1.medium', f'image-{vdu}': 'ubuntu-22.04',
                'vdu_idx': index}})
        infos.append({'id': f'{vdu}-{server}', 'vduId': vdu,
                      'vnfcResourceInfoId': server,
                      'vnfcState': 'STARTED'})
    return {
        'id': INSTANCE_ID,
        'vnfInstanceName': 'k8s-cluster',
        'vnfdId': 'b1bb0ce7-ebca-4fa7-95ed-4840d70a1177',
        'vnfProvider': 'Company', 'vnfProductName': 'Sample VNF',
        'vnfSoftwareVersion': '1.0', 'vnfdVersion': '1.0',
        'instantiationState': 'INSTANTIATED',
        'vimConnectionInfo': {'openstack': {
            'vimId': 'os-vim-id',
            'vimType': 'ETSINFV.OPENSTACK_KEYSTONE.V_3',
            'interfaceInfo': {'endpoint': 'http://keystone:5000/v3'},
            'accessInfo': {'username': 'nfv_user',
                           'password': OS_PASSWORD, 'project': 'nfv',
                           'projectDomain': 'Default',
                           'userDomain': 'Default',
                           'region': 'RegionOne'}}},
        'instantiatedVnfInfo': {
            'flavourId': 'simple', 'vnfState': 'STARTED',
            'vnfcResourceInfo': resources, 'vnfcInfo': infos,
            'metadata': {'stack_id': STACK_ID}},
        'metadata': {'VDU_VNFc_mapping': {'workerNode': ['srv-w0',
                                                        'srv-w1']},
                     'owner': 'team-a'},
        '_links': {'self': {'href': f'http://tacker/vnflcm/v2/'
                                    f'vnf_instances/{INSTANCE_ID}'}},
    }



RECORD = VimRecord(id='k8s-vim-id', name='kubernetes_vim',
                   auth_url='https://10.0.0.100:6443')


# -- what the hooks read ------------------------------------------------------

def test_v1_view_of_the_instance():
    instance = V2Instance(v2_instance())
    info = instance.instantiated_vnf_info
    assert instance.id == INSTANCE_ID
    assert instance.vnfd_id == 'b1bb0ce7-ebca-4fa7-95ed-4840d70a1177'
    assert info.instance_id == STACK_ID
    assert info.flavour_id == 'simple'
    assert tacker_objects.stack_id(instance) == STACK_ID
    assert info.vnfc_resource_info == [
        {'id': f'{vdu}-{server}', 'vdu_id': vdu,
         'compute_resource': {'resource_id': server}}
        for vdu, _, server in VNFCS]


def test_vnfcs_are_named_by_the_ids_a_v2_heal_request_uses():
    vnfcs = tacker_objects.vnfc_resources(V2Instance(v2_instance()))
    assert sorted(vnfcs) == ['masterNode-srv-m0', 'workerNode-srv-w0',
                             'workerNode-srv-w1']
    one = vnfcs['workerNode-srv-w1']
    assert (one.vdu_id, one.server_id) == ('workerNode', 'srv-w1')


def test_a_vnfc_is_matched_to_its_own_server_not_by_position():
    data = v2_instance()
    info = data['instantiatedVnfInfo']
    info['vnfcResourceInfo'].reverse()
    vnfcs = tacker_objects.vnfc_resources(V2Instance(data))
    assert {k: v.server_id for k, v in vnfcs.items()} == {
        'masterNode-srv-m0': 'srv-m0', 'workerNode-srv-w0': 'srv-w0',
        'workerNode-srv-w1': 'srv-w1'}


def test_an_instance_not_instantiated_reads_as_empty():
    instance = V2Instance({'id': INSTANCE_ID, 'vnfdId': 'd',
                           'instantiationState': 'NOT_INSTANTIATED'})
    assert instance.instantiated_vnf_info.instance_id is None
    assert instance.instantiated_vnf_info.vnfc_resource_info == []
    assert instance.vnfc_resources() == []
    assert instance.vnf_metadata == {}
    assert instance.vim_connection_info == []


# -- metadata -------------------------------------------------------------

def test_metadata_written_by_the_hooks_lands_in_metadata():
    instance = V2Instance(v2_instance())
    metadata = instance.vnf_metadata
    metadata['extra'] = 'value'
    assert 'extra' not in instance.vnf_metadata   # a copy until set
    instance.vnf_metadata = metadata
    out = instance.to_dict()
    assert out['metadata']['extra'] == 'value'
    assert out['metadata']['VDU_VNFc_mapping'] == {
        'workerNode': ['srv-w0', 'srv-w1']}
    assert out['metadata']['owner'] == 'team-a'


def test_driver_state_survives_the_round_trip_through_tacker(state_key):
    state = DriverState(first_master='srv-m0', stack_id=STACK_ID,
                        vim_id='k8s-vim-id')
    state.remember_node('srv-w0', NodeRecord('worker0', 'worker',
                                             '10.0.0.20'))
    instance = V2Instance(v2_instance())
    instance_state.save(instance, state)
    returned = instance.to_dict()
    assert isinstance(returned['metadata'][instance_state.METADATA_KEY],
                      str)
    assert returned['metadata']['VDU_VNFc_mapping'] == \
        v2_instance()['metadata']['VDU_VNFc_mapping']
    # The next operation gets the instance as Tacker kept it.
    assert instance_state.load(V2Instance(returned)) == state


def test_state_of_another_instance_does_not_load(state_key):
    one = V2Instance(v2_instance())
    instance_state.save(one, DriverState(vim_id='k8s-vim-id'))
    other = v2_instance()
    other['id'] = 'another-instance'
    other['metadata'] = one.to_dict()['metadata']
    with pytest.raises(instance_state.TamperedState, match='vim_id'):
        instance_state.load(V2Instance(other))


def test_adopt_state_takes_the_state_of_a_failed_attempt(state_key):
    failed = V2Instance(v2_instance())
    state = DriverState(first_master='srv-m0')
    instance_state.save(failed, state)
    carried = failed.vnf_metadata[instance_state.METADATA_KEY]
    retry = V2Instance(v2_instance())     # Tacker kept no change
    retry.adopt_state(carried)
    assert instance_state.load(retry) == state
    assert retry.to_dict()['metadata']['owner'] == 'team-a'


@pytest.mark.parametrize('carried', [None, ''])
def test_adopt_state_without_one_changes_nothing(carried):
    instance = V2Instance(v2_instance())
    instance.adopt_state(carried)
    assert instance.to_dict() == v2_instance()


# -- VIM connections ----------------------------------------------------------

def test_only_the_openstack_vim_until_a_cluster_is_registered():
    connections = V2Instance(v2_instance()).vim_connection_info
    assert len(connections) == 1
    vim = connections[0]
    assert vim.vim_id == 'os-vim-id'
    assert vim.vim_type == 'ETSINFV.OPENSTACK_KEYSTONE.V_3'
    assert vim.access_info['password'] == OS_PASSWORD
    assert vim.access_info['region'] == 'RegionOne'
    assert vim.interface_info == {'endpoint': 'http://keystone:5000/v3'}
    assert VIM_KEY not in V2Instance(v2_instance()).to_dict()['metadata']


def test_the_registered_cluster_vim_goes_to_metadata():
    instance = V2Instance(v2_instance())
    assert add_vim_connection(instance, RECORD, ca_cert=CA) is True
    types = [c.vim_type for c in instance.vim_connection_info]
    assert types == ['ETSINFV.OPENSTACK_KEYSTONE.V_3', 'kubernetes']
    out = instance.to_dict()
    assert out['metadata'][VIM_KEY] == {
        'vimId': 'k8s-vim-id', 'vimType': 'kubernetes',
        'endpoint': 'https://10.0.0.100:6443', 'sslCaCert': CA}
    # Tacker's v2 code assumes one VIM: its own entry stays as it was.
    assert out['vimConnectionInfo'] == v2_instance()['vimConnectionInfo']
    assert out['metadata']['VDU_VNFc_mapping'] == \
        v2_instance()['metadata']['VDU_VNFc_mapping']


def test_the_cluster_vim_is_read_back_by_the_next_operation():
    first = V2Instance(v2_instance())
    add_vim_connection(first, RECORD, ca_cert=CA)
    later = V2Instance(first.to_dict())
    cluster = [c for c in later.vim_connection_info
               if c.vim_type == 'kubernetes']
    assert len(cluster) == 1
    assert cluster[0].vim_id == 'k8s-vim-id'
    assert cluster[0].access_info == {'auth_url': RECORD.auth_url}
    assert cluster[0].interface_info == {'ssl_ca_cert': CA}
    # Adding it again (a retried instantiate) does not duplicate it.
    assert add_vim_connection(later, RECORD, ca_cert=CA) is False
    assert len(later.vim_connection_info) == 2


def test_a_cluster_vim_without_ca_is_kept_without_one():
    instance = V2Instance(v2_instance())
    add_vim_connection(instance, RECORD)
    stored = instance.to_dict()['metadata'][VIM_KEY]
    assert stored['vimId'] == 'k8s-vim-id'
    assert not stored['sslCaCert']
    later = V2Instance(instance.to_dict())
    assert later.cluster_vims()[0].interface_info == {}


def test_removing_the_cluster_vim_drops_it_from_metadata():
    registered = V2Instance(v2_instance())
    add_vim_connection(registered, RECORD, ca_cert=CA)
    instance = V2Instance(registered.to_dict())
    assert remove_vim_connection(instance, 'k8s-vim-id') is True
    out = instance.to_dict()
    assert VIM_KEY not in out['metadata']
    assert out['vimConnectionInfo'] == v2_instance()['vimConnectionInfo']
    assert [c.vim_id for c in instance.vim_connection_info] == \
        ['os-vim-id']
    assert remove_vim_connection(instance, 'k8s-vim-id') is False


def test_removing_the_openstack_vim_id_is_not_possible_through_hooks():
    # The hooks remove their cluster's VIM by id; the OpenStack VIM Tacker
    # put there stays in vimConnectionInfo whatever they hand back.
    instance = V2Instance(v2_instance())
    remove_vim_connection(instance, 'os-vim-id')
    assert instance.to_dict()['vimConnectionInfo'] == \
        v2_instance()['vimConnectionInfo']


def test_an_invalid_cluster_vim_in_metadata_is_ignored():
    data = v2_instance()
    data['metadata'][VIM_KEY] = {'endpoint': 'https://x:6443'}   # no id
    instance = V2Instance(data)
    assert [c.vim_id for c in instance.vim_connection_info] == \
        ['os-vim-id']
    assert VIM_KEY not in instance.to_dict()['metadata']


# -- instantiate parameters ---------------------------------------------------

PARAMS = {'k8s_cluster_installation_param': {
    'vim_name': 'kubernetes_vim',
    'master_node': {'ssh_cp_name': 'masterNode_CP1', 'username': 'ubuntu',
                    'password': 'vm-secret-password'}}}


def test_instantiate_parameters_are_kept_sealed(state_key):
    instance = V2Instance(v2_instance())
    assert instance.stored_params() == {}
    instance.store_params(PARAMS)
    text = instance.to_dict()['metadata'][PARAMS_KEY]
    assert text.startswith(sealed.PREFIX)
    assert 'vm-secret-password' not in text
    later = V2Instance(instance.to_dict())
    assert later.stored_params() == PARAMS
    assert later.instantiated_vnf_info.additional_params == PARAMS
    assert tacker_objects.stored_additional_params(later) == PARAMS


def test_parameters_copied_to_another_instance_do_not_open(state_key):
    instance = V2Instance(v2_instance())
    instance.store_params(PARAMS)
    other = v2_instance()
    other['id'] = 'another-instance'
    other['metadata'][PARAMS_KEY] = instance.vnf_metadata[PARAMS_KEY]
    with pytest.raises(sealed.SealError) as caught:
        V2Instance(other).stored_params()
    assert PARAMS_KEY in str(caught.value)
    assert 'another-instance' in str(caught.value)


def test_forget_params_removes_them(state_key):
    instance = V2Instance(v2_instance())
    instance.store_params(PARAMS)
    instance.forget_params()
    assert PARAMS_KEY not in instance.to_dict()['metadata']
    assert instance.stored_params() == {}
    instance.forget_params()        # twice: nothing to forget
    assert instance.to_dict()['metadata']['owner'] == 'team-a'


# -- the input is Tacker's ---------------------------------------------------

def test_the_input_dict_is_not_changed(state_key):
    data = v2_instance()
    before = copy.deepcopy(data)
    instance = V2Instance(data)
    instance_state.save(instance, DriverState(vim_id='k8s-vim-id'))
    instance.store_params(PARAMS)
    add_vim_connection(instance, RECORD, ca_cert=CA)
    metadata = instance.vnf_metadata
    metadata['owner'] = 'changed'
    instance.vnf_metadata = metadata
    out = instance.to_dict()
    out['metadata']['owner'] = 'changed again'
    out['vimConnectionInfo']['openstack']['vimId'] = 'x'
    assert data == before
    assert instance.to_dict()['vimConnectionInfo'] == \
        before['vimConnectionInfo']


def test_everything_handed_back_is_plain_json():
    # Tacker rebuilds a VnfInstanceV2 from what the script returns.
    instance = V2Instance(v2_instance())
    add_vim_connection(instance, RECORD, ca_cert=CA)
    out = instance.to_dict()
    assert json.loads(json.dumps(out)) == out

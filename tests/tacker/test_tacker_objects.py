"""The plugin's adapters on real ``tacker.objects`` (no lab needed).

Tacker's versioned objects coerce every assignment to the field's type
and track changes per field; ``VnfInstance.save`` writes only changed
fields. These checks pin what the adapters do with them.
"""
import uuid
from unittest import mock

from kubernetes_mgmt.shim import tacker_objects
from kubernetes_mgmt.shim import vim_connection as connection
from kubernetes_mgmt.state import instance_state
from kubernetes_mgmt.state.instance_state import DriverState, NodeRecord
from kubernetes_mgmt.vim.registration import VimRecord


def _instance(tacker_conf, context):
    from tacker import objects

    instance = objects.VnfInstance(
        context=context, id=str(uuid.uuid4()), vnf_metadata={'a': 'b'},
        vim_connection_info=[objects.VimConnectionInfo(
            id=str(uuid.uuid4()), vim_id=str(uuid.uuid4()),
            vim_type='openstack')])
    instance.obj_reset_changes()     # as loaded from the database
    return instance


def test_vim_connection_is_a_real_object_and_tracked(tacker_conf,
                                                     tacker_context):
    from tacker import objects

    instance = _instance(tacker_conf, tacker_context)
    record = VimRecord(id=str(uuid.uuid4()), name='k8s',
                       auth_url='https://10.0.0.5:6443')
    assert connection.add_vim_connection(instance, record)
    assert 'vim_connection_info' in instance.obj_what_changed()
    added = instance.vim_connection_info[-1]
    assert type(added) is objects.VimConnectionInfo
    assert (added.vim_type, added.vim_id) == ('kubernetes', record.id)
    assert added.to_dict()['access_info'] == {'auth_url': record.auth_url}
    # Idempotent, and the OpenStack VIM stays first.
    assert not connection.add_vim_connection(instance, record)
    assert len(instance.vim_connection_info) == 2
    instance.obj_reset_changes()
    assert connection.remove_vim_connection(instance, record.id)
    assert 'vim_connection_info' in instance.obj_what_changed()
    assert [c.vim_type for c in instance.vim_connection_info] == \
        ['openstack']


def test_driver_state_fits_vnf_metadata(tacker_conf, tacker_context):
    from tacker import objects

    instance = _instance(tacker_conf, tacker_context)
    state = DriverState(first_master='srv-1', host_keys={'10.0.0.5': 'k'})
    state.remember_node('srv-1', NodeRecord('m0', 'master', '10.0.0.5'))
    # save() is the database write, which cannot run here.
    with mock.patch.object(objects.VnfInstance, 'save') as save:
        instance_state.save(instance, state)
        assert save.call_count == 1
        assert instance.obj_what_changed() == {'vnf_metadata'}
        assert instance_state.load(instance) == state
        assert instance.vnf_metadata['a'] == 'b'
        instance_state.forget(instance)
        assert save.call_count == 2
    # Forgotten: an empty state of the next generation, still strings.
    assert instance.vnf_metadata['a'] == 'b'
    assert not instance_state.holds_state(instance.vnf_metadata)
    assert all(isinstance(v, str) for v in instance.vnf_metadata.values())


def test_accessors_read_real_requests_and_instances(
        tacker_conf, tacker_context, tacker_request):
    from tacker import objects

    body = {'flavourId': 'simple', 'additionalParams': {
        'k8s_cluster_installation_param': {'vim_name': 'x'},
        'lcm-operation-user-data': './UserData/k8s_cluster_user_data.py'}}
    request = tacker_request('InstantiateVnfRequest', body)
    # additionalParams keys are kept as sent (not snake_cased).
    assert tacker_objects.additional_params(request) == \
        body['additionalParams']
    instance = _instance(tacker_conf, tacker_context)
    instance.instantiated_vnf_info = objects.InstantiatedVnfInfo(
        flavour_id='simple', vnf_instance_id=instance.id,
        instance_id='stack-1',
        additional_params=request.additional_params)
    assert tacker_objects.stack_id(instance) == 'stack-1'
    assert tacker_objects.stored_additional_params(instance) == \
        body['additionalParams']
    assert tacker_objects.instance_id(instance) == instance.id

"""The driver's hooks with REAL ``tacker.objects``, against the lab.

Everything Tacker hands the driver is built by Tacker's own code: the
request objects as the v1 API controller builds them from the request
samples (then through the RPC serialisation), the VNF instance's
``vim_connection_info`` and ``instantiated_vnf_info`` with Tacker's
vnflcm utils, the VNF package unpacked by ``load_csar_data``, and every
hook is called the way ``VnfLcmDriver`` calls it: ``_load_vnf_interface``
(with its hash check) picks the driver, the DriverManager invokes it with
Tacker's keyword arguments.

Two database accesses cannot run here (no database) and are replaced:
``VnfInstance.save`` (a write; recorded, so we can check the driver saved)
and the VNFD-id -> package query (a read; answered with the row the
conductor inserted on upload). Real: SSH, Keystone and Heat (the lab's
OpenStack services, started in this environment too), the install
script, HAProxy/keepalived. Emulated: the compute and network APIs below
Heat, the Kubernetes binaries.
"""
import copy
import uuid
from unittest import mock

import pytest

from kubernetes_mgmt import instance_state
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt_lab import driving
from kubernetes_mgmt_lab.emulated import ClusterView
from kubernetes_mgmt_lab.file_registry import FileVimRegistry
from kubernetes_mgmt_lab.testing import throwaway_lab, unavailable_reason

pytestmark = pytest.mark.lab

DRIVER = 'mgmt-drivers-kubernetes'


@pytest.fixture(scope='module')
def lab(site):
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with throwaway_lab(1, 1, site=site) as the_lab:
        yield the_lab


def _instantiate_body(lab, request_body):
    """simple_kubernetes_param_file.json, logging in to the lab's VMs."""
    body = request_body('simple_kubernetes_param_file.json',
                        REPLACE_WITH_A_NEW_UUID=str(uuid.uuid4()),
                        REPLACE_WITH_OPENSTACK_VIM_ID=str(uuid.uuid4()),
                        REPLACE_WITH_NETWORK_ID=str(uuid.uuid4()))
    param = body['additionalParams']['k8s_cluster_installation_param']
    ours = driving.request_body(lab)['additionalParams'][
        'k8s_cluster_installation_param']
    param['vim_name'] = ours['vim_name']
    for role in ('master_node', 'worker_node'):
        param[role]['username'] = lab.state.username
        param[role]['password'] = lab.state.password
    return body


def _new_instance(context, onboarded, request, stack_id):
    """The VNF instance as it is when Tacker calls instantiate_end."""
    from tacker import objects
    from tacker.objects import fields
    from tacker.vnflcm import utils as vnflcm_utils

    vnf = onboarded.vnf_data
    instance = objects.VnfInstance(
        context=context, id=str(uuid.uuid4()), vnf_instance_name='k8s',
        vnf_instance_description='', vnfd_id=onboarded.vnfd_id,
        vnf_provider=vnf['provider'], vnf_product_name=vnf['product_name'],
        vnf_software_version=vnf['software_version'],
        vnfd_version=vnf['descriptor_version'],
        vnf_pkg_id=onboarded.package_uuid, tenant_id=context.project_id,
        instantiation_state=fields.VnfInstanceState.NOT_INSTANTIATED,
        vnf_metadata={'owner': 'operator'}, vim_connection_info=[])
    # VnfLcmDriver.instantiate_vnf: the request's VIMs.
    instance.vim_connection_info = \
        vnflcm_utils._get_vim_connection_info_from_vnf_req(instance,
                                                           request)
    # Conductor._instantiate_grant: instantiated_vnf_info from the VNFD.
    instance.instantiated_vnf_info = objects.InstantiatedVnfInfo(
        flavour_id=request.flavour_id,
        instantiation_level_id=request.instantiation_level_id,
        vnf_instance_id=instance.id)
    instance.instantiated_vnf_info.reinitialize()
    vnfd_dict = vnflcm_utils._get_vnfd_dict(context, instance.vnfd_id,
                                            request.flavour_id)
    vnflcm_utils._build_instantiated_vnf_info(vnfd_dict, request, instance,
                                              '')
    # The OpenStack infra driver: the Heat stack it created.
    instance.instantiated_vnf_info.instance_id = stack_id
    return instance, vnfd_dict


def _vnf_dict(instance, stack_id):
    """The legacy vnf dict Tacker deep-copies into the ``vnf`` kwarg."""
    return {'id': instance.id, 'name': instance.vnf_instance_name,
            'vnfd_id': instance.vnfd_id, 'instance_id': stack_id,
            'status': 'PENDING_CREATE', 'before_error_point': 0,
            'attributes': {}, 'grant': None}


def _hook(lcm_driver, context, instance, vnfd_dict, hook, **kwargs):
    """Call ``hook`` as VnfLcmDriver does."""
    lcm_driver._mgmt_manager.invoke(
        lcm_driver._load_vnf_interface(context, hook, instance, vnfd_dict),
        hook, context=context, vnf_instance=instance, grant=None,
        grant_request=None, **kwargs)


@pytest.fixture(scope='module')
def instantiated(lab, onboarded, vnfd_query, lcm_driver, tacker_context,
                 tacker_request, request_body):
    from tacker import objects

    body = _instantiate_body(lab, request_body)
    request = tacker_request('InstantiateVnfRequest', body)
    # The lab's config, but the package is the one Tacker unpacked, found
    # through vnf_instance.vnfd_id as inside tacker-conductor.
    with driving.driver_options(lab, vnf_package_source='tacker'), \
            vnfd_query():
        assert CONF.kubernetes_mgmt.vnf_package_source == 'tacker'
        instance, vnfd_dict = _new_instance(tacker_context, onboarded,
                                            request, lab.state.stack_id)
        with mock.patch.object(objects.VnfInstance, 'save',
                               autospec=True) as save:
            _hook(lcm_driver, tacker_context, instance, vnfd_dict,
                  'instantiate_end', instantiate_vnf_request=request,
                  vnf=copy.deepcopy(_vnf_dict(instance,
                                              lab.state.stack_id)))
    return lab, instance, vnfd_dict, save


def test_instantiate_end_builds_and_registers_the_cluster(instantiated,
                                                          tacker_context):
    from tacker import objects

    lab, instance, _, save = instantiated
    assert save.call_count >= 1
    assert all(call.args == (instance,) for call in save.call_args_list)

    view = ClusterView(lab.state.cluster_dir)
    nodes = view.nodes()
    assert len(nodes) == len(lab.state.hosts) == 2
    for node in nodes:
        assert any(c['type'] == 'Ready' and c['status'] == 'True'
                   for c in node['status']['conditions'])

    master = next(h for h in lab.state.hosts if h.role == 'master')
    auth_url = f'https://{master.ip}:6443'
    param = instance.instantiated_vnf_info.additional_params[
        'k8s_cluster_installation_param']
    vim = FileVimRegistry(lab.vim_registry_file).find(tacker_context,
                                                      param['vim_name'])
    assert vim is not None and vim.auth_url == auth_url

    kube = [c for c in instance.vim_connection_info
            if c.vim_type == 'kubernetes']
    assert len(kube) == 1
    assert type(kube[0]) is objects.VimConnectionInfo
    assert kube[0].vim_id == vim.id
    assert kube[0].access_info == {'auth_url': auth_url}
    # The OpenStack VIM of the request is still the first entry.
    assert instance.vim_connection_info[0].vim_type == 'openstack'


def test_instance_still_serialises_as_tacker_stores_it(lab, instantiated):
    """What the driver wrote fits Tacker's field types: the object goes
    through obj_to_primitive/obj_from_primitive (RPC, DB) unchanged."""
    from tacker import objects

    _, instance, _, _ = instantiated
    assert all(isinstance(v, str) for v in instance.vnf_metadata.values())
    assert instance.vnf_metadata['owner'] == 'operator'
    again = objects.VnfInstance.obj_from_primitive(
        instance.obj_to_primitive(), instance._context)
    assert again.vnf_metadata == instance.vnf_metadata
    assert [c.to_dict() for c in again.vim_connection_info] == \
        [c.to_dict() for c in instance.vim_connection_info]
    state = driving.stored_state(lab, again)
    assert state.vim_id == instance.vim_connection_info[-1].vim_id
    assert len(state.nodes) == 2


def test_lifecycle_hooks_take_tackers_objects_and_kwargs(
        instantiated, lcm_driver, tacker_context, tacker_request,
        request_body, vnfd_query):
    """scale, heal and terminate with real request objects, the keyword
    arguments VnfLcmDriver passes, and Tacker's own VnfcResourceInfo /
    ResourceHandle objects, around the lab's Heat stack updates."""
    from tacker import objects

    lab, instance, vnfd_dict, _ = instantiated
    view = ClusterView(lab.state.cluster_dir)
    # What Tacker's OpenStack infra driver records after the stack was
    # created: each VNFC's server (the lab refreshes it like the
    # conductor after every stack update).
    driving.refresh_vnfc_resources(lab, instance)
    vnfc = instance.instantiated_vnf_info.vnfc_resource_info
    assert all(type(v) is objects.VnfcResourceInfo for v in vnfc)
    scale_in = tacker_request('ScaleVnfRequest', request_body(
        'scale_in_worker_instance.json'))
    scale_out = tacker_request('ScaleVnfRequest', request_body(
        'scale_out_worker_instance.json'))
    heal_all = tacker_request('HealVnfRequest', request_body(
        'heal_vnf_request.json'))
    terminate = tacker_request('TerminateVnfRequest', request_body(
        'terminate_vnf_request.json'))
    assert scale_in.type == 'SCALE_IN' and scale_out.type == 'SCALE_OUT'

    def hook(name, **kwargs):
        _hook(lcm_driver, tacker_context, instance, vnfd_dict, name,
              **copy.deepcopy(kwargs))

    def vnf():
        return _vnf_dict(instance,
                         instance.instantiated_vnf_info.instance_id)

    with driving.driver_options(lab, vnf_package_source='tacker'), \
            vnfd_query(), \
            mock.patch.object(objects.VnfInstance, 'save',
                              autospec=True) as save:
        new = driving.add_workers(lab, instance, 1)
        hook('scale_end', scale_vnf_request=scale_out,
             scale_out_id_list=[h.member_stack_id for h in new], vnf=vnf())
        assert len(view.node_names()) == 3

        names = driving.scale_in_members(lab, 1)
        hook('scale_start', scale_vnf_request=scale_in,
             scale_name_list=names, scale_out_id_list=[], vnf=vnf())
        driving.remove_workers(lab, instance, names)
        # A failed SCALE_OUT being rolled back: only scale_name_list.
        hook('scale_start', scale_vnf_request=scale_out, scale_name_list=[])
        assert len(view.node_names()) == 2

        worker = next(h for h in lab.state.hosts if h.role == 'worker')
        heal_vnfc = tacker_request('HealVnfRequest', request_body(
            'heal_vnfc_request.json',
            REPLACE_WITH_VNFC_INSTANCE_ID=driving.vnfc_of(instance,
                                                          worker)))
        hook('heal_start', heal_vnf_request=heal_vnfc)
        driving.rebuild_vnfcs(lab, instance, heal_vnfc.vnfc_instance_id)
        hook('heal_end', heal_vnf_request=heal_vnfc, vnf=vnf())
        assert lab.host_at(worker.ip).server_id != worker.server_id

        old_vim = driving.stored_state(lab, instance).vim_id
        hook('heal_start', heal_vnf_request=heal_all)
        driving.respawn(lab, instance)
        hook('heal_end', heal_vnf_request=heal_all, vnf=vnf())
        new_vim = driving.stored_state(lab, instance).vim_id
        assert new_vim and new_vim != old_vim
        assert [c.vim_id for c in instance.vim_connection_info
                if c.vim_type == 'kubernetes'] == [new_vim]
        assert len(view.node_names()) == 2
        assert all(view.node_ready(n) for n in view.node_names())

        hook('terminate_start', terminate_vnf_request=terminate, vnf=vnf())
        hook('terminate_end', terminate_vnf_request=terminate)
        # An instantiate being rolled back: no request.
        hook('terminate_end', terminate_vnf_request=None)
    # terminate_end dropped what the driver stored and the VIM, and saved
    # that.
    assert save.call_count >= 1
    assert instance_state.METADATA_KEY not in instance.vnf_metadata
    assert instance.vnf_metadata == {'owner': 'operator'}
    assert FileVimRegistry(lab.vim_registry_file).records() == []
    assert [c.vim_type for c in instance.vim_connection_info] == \
        ['openstack']

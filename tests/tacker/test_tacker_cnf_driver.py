"""The kubernetes-namespaced infra driver with Tacker 16's own code.

Tacker's DriverManager (and plain stevedore) load it from
``tacker.tacker.vnfm.drivers``; its methods take every keyword argument
Tacker's built-in Kubernetes driver takes; and a CNF runs its whole life
on Tacker's real objects (requests built from REST bodies the way the
v1 API does, VimConnectionInfo, VnfInstance, VnfResource,
VnfcResourceInfo) with Tacker's own VNF package and VNFD lookups,
against the Kubernetes API double. Only Tacker's database calls are
answered from memory.
"""
from __future__ import annotations

import datetime
import inspect
import shutil
import uuid
from pathlib import Path
from unittest import mock

import pytest
import stevedore
from tacker import objects
from tacker.common import driver_manager
from tacker.objects import fields as tacker_fields
from tacker.objects import vnf_package_vnfd
from tacker.vnfm.infra_drivers import abstract_driver, scale_driver
from tacker.vnfm.infra_drivers.kubernetes import kubernetes_driver

from kubernetes_mgmt.cnf import driver as cnf_driver
from kubernetes_mgmt.cnf import vnfd as vnfd_policies
from kubernetes_mgmt.cnf.driver import KubernetesNamespacedDriver
from kubernetes_mgmt_lab.kube_api import KubeApiDouble, namespace_role

DATA = Path(__file__).resolve().parent.parent / 'data' / 'cnf'
GROUP = 'tacker.tacker.vnfm.drivers'
NAME = 'kubernetes-namespaced'
# What Tacker's VnfLcmDriver (v1 LCM) invokes on an infra driver.
LCM_CALLS = (
    'pre_instantiation_vnf', 'instantiate_vnf', 'create_wait',
    'update_stack_wait', 'post_vnf_instantiation', 'scale', 'scale_wait',
    'get_scale_ids', 'get_scale_in_ids', 'scale_resource_update',
    'scale_in_reverse', 'scale_out_initial', 'scale_update_wait',
    'get_rollback_ids', 'heal_vnf', 'heal_vnf_wait', 'post_heal_vnf',
    'delete', 'delete_wait', 'delete_vnf_instance_resource', 'sync_db',
    'change_ext_conn_vnf', 'change_ext_conn_vnf_wait',
    'post_change_ext_conn_vnf')


def test_stevedore_loads_the_driver_by_name():
    manager = stevedore.driver.DriverManager(GROUP, NAME,
                                             invoke_on_load=True)
    assert type(manager.driver) is KubernetesNamespacedDriver
    assert manager.driver.get_type() == 'kubernetes'
    assert manager.driver.get_name() == NAME


def test_tackers_driver_manager_serves_kubernetes_vims_with_it(tacker_conf):
    # As tacker-conductor does with vnflcm_infra_driver = openstack,
    # kubernetes-namespaced: drivers are keyed by get_type().
    manager = driver_manager.DriverManager(GROUP, ['noop', NAME])
    assert 'kubernetes' in manager
    assert type(manager['kubernetes']) is KubernetesNamespacedDriver
    assert manager.invoke('kubernetes', 'get_scale_ids', plugin=None,
                          context=None, vnf_dict={}, auth_attr={},
                          region_name=None) == []


def test_every_abstract_infra_driver_method_exists():
    for base in (abstract_driver.VnfAbstractDriver,
                 scale_driver.VnfScaleAbstractDriver):
        for name in base.__abstractmethods__:
            assert callable(getattr(KubernetesNamespacedDriver, name)), name


def _undecorated(function, name: str):
    """Tacker's ``log.log`` wraps methods without functools.wraps: the
    method is the function of that name in the wrapper's closure."""
    for cell in function.__closure__ or ():
        inner = cell.cell_contents
        if inspect.isfunction(inner) and inner.__name__ == name:
            return _undecorated(inner, name)
    return function


@pytest.mark.parametrize('method', [m for m in LCM_CALLS
                                    if m != 'update_stack_wait'])
def test_methods_accept_tackers_keyword_arguments(method):
    """Every parameter Tacker's own Kubernetes driver declares (and so
    every keyword VnfLcmDriver passes) is accepted by name."""
    reference = inspect.signature(_undecorated(
        getattr(kubernetes_driver.Kubernetes, method), method))
    ours = inspect.signature(getattr(KubernetesNamespacedDriver, method))
    assert 'args' not in reference.parameters
    for name in reference.parameters:
        assert name in ours.parameters, f'{method}: {name}'


def test_update_stack_wait_takes_what_vnflcm_passes():
    # Tacker's Kubernetes driver lacks it; VnfLcmDriver._instantiate_vnf
    # calls it when a retry resumes after the VIM was changed.
    inspect.signature(KubernetesNamespacedDriver.update_stack_wait).bind(
        None, plugin=None, context=None, vnf_dict={}, stack_id='x',
        auth_attr={})


def test_error_point_is_tackers():
    assert cnf_driver.POST_VIM_CONTROL == \
        tacker_fields.ErrorPoint.POST_VIM_CONTROL


def test_unsupported_operations_say_so():
    driver = KubernetesNamespacedDriver()
    with pytest.raises(NotImplementedError, match='not supported'):
        driver.change_ext_conn_vnf(context=None, vnf_instance=None,
                                   vnf_dict={}, vim_connection_info=None,
                                   change_ext_conn_req=None)


# -- a whole life on Tacker's objects -----------------------------------

@pytest.fixture
def cnf_package(csar_path, tacker_context):
    """The test CNF unpacked where Tacker unpacks packages, and Tacker's
    VNFD-id lookup answering with its row."""
    package_uuid = str(uuid.uuid4())
    vnfd_id = str(uuid.uuid4())
    shutil.copytree(DATA, csar_path / package_uuid)
    row = {'id': str(uuid.uuid4()), 'package_uuid': package_uuid,
           'vnfd_id': vnfd_id, 'vnf_provider': 'test',
           'vnf_product_name': 'cnf', 'vnf_software_version': '1.0',
           'vnfd_version': '1.0',
           'created_at': datetime.datetime(2026, 1, 1),
           'updated_at': None, 'deleted_at': None, 'deleted': False}
    with mock.patch.object(vnf_package_vnfd, '_vnf_package_vnfd_get_by_id',
                           lambda context, wanted: row):
        yield vnfd_id


@pytest.fixture
def tacker_db(tacker_conf):
    """Tacker's database calls of the driver's objects, from memory."""
    rows: dict[str, list] = {}
    instances: dict[str, objects.VnfInstance] = {}

    def create(resource):
        rows.setdefault(resource.vnf_instance_id, []).append(resource)

    def by_instance(cls, context, vnf_instance_id):
        return objects.VnfResourceList(
            objects=list(rows.get(vnf_instance_id, [])))

    with mock.patch.object(objects.VnfResource, 'create', create), \
            mock.patch.object(objects.VnfResourceList,
                              'get_by_vnf_instance_id',
                              classmethod(by_instance)), \
            mock.patch.object(objects.VnfInstance, 'get_by_id',
                              classmethod(lambda cls, ctx, i, **kw:
                                          instances[i])), \
            mock.patch.object(objects.VnfInstance, 'save',
                              lambda self: None):
        yield rows, instances


@pytest.fixture
def kube():
    with KubeApiDouble(tls=True) as double:
        double.put('Namespace', {'metadata': {'name': 'ns-a'},
                                 'status': {'phase': 'Active'}})
        yield double


def test_cnf_life_on_tackers_objects(kube, cnf_package, tacker_db,
                                     tacker_context, tacker_request):
    rows, instances = tacker_db
    token = kube.add_token('ns-a-token', namespace_role('cnf', 'ns-a'))
    driver = driver_manager.DriverManager(GROUP, [NAME])['kubernetes']
    vim = objects.VimConnectionInfo.obj_from_primitive(
        {'id': str(uuid.uuid4()), 'vim_id': str(uuid.uuid4()),
         'vim_type': 'kubernetes', 'access_info': kube.access_info(token),
         'tenant_id': tacker_context.project_id, 'extra': {}},
        tacker_context)
    params = {'lcm-kubernetes-def-files': ['Files/kubernetes/web.yaml'],
              'namespace': 'ns-a'}
    request = tacker_request('InstantiateVnfRequest', {
        'flavourId': 'simple', 'additionalParams': params})
    instance = objects.VnfInstance(
        context=tacker_context, id=str(uuid.uuid4()), vnfd_id=cnf_package,
        tenant_id=tacker_context.project_id, vnf_metadata={},
        vim_connection_info=[])
    instance.instantiated_vnf_info = objects.InstantiatedVnfInfo(
        flavour_id='simple', vnf_instance_id=instance.id,
        additional_params=params, vnfc_resource_info=[])
    instances[instance.id] = instance

    # VnfLcmDriver._instantiate_vnf
    from tacker.vnflcm import utils as vnflcm_utils
    package = vnflcm_utils._get_vnf_package_path(tacker_context, cnf_package)
    resources = driver.pre_instantiation_vnf(
        context=tacker_context, vnf_instance=instance,
        vim_connection_info=vim, vnf_software_images={},
        instantiate_vnf_req=request, vnf_package_path=package)
    for group in resources.values():
        for resource in group:
            resource.create()
    vnf_dict = {'attributes': {}, 'before_error_point': 0}
    instance_id = driver.instantiate_vnf(
        context=tacker_context, plugin=None, vnf_instance=instance,
        vnfd_dict=vnf_dict, grant_response=resources,
        vim_connection_info=vim, vnf_package_path=package,
        instantiate_vnf_req=request)
    instance.instantiated_vnf_info.instance_id = instance_id
    driver.create_wait(plugin=None, context=tacker_context,
                       vnf_dict=vnf_dict, vnf_id=vnf_dict['instance_id'],
                       auth_attr=vim.access_info)
    driver.post_vnf_instantiation(
        context=tacker_context, vnf_instance=instance,
        vim_connection_info=vim, instantiate_vnf_req=request)

    assert instance.vnf_metadata['namespace'] == 'ns-a'
    assert vnf_dict['current_error_point'] == \
        tacker_fields.ErrorPoint.POST_VIM_CONTROL
    assert sorted(r.resource_name for r in rows[instance.id]) == [
        'web', 'web', 'web-config']
    vnfcs = instance.instantiated_vnf_info.vnfc_resource_info
    assert [v.vdu_id for v in vnfcs] == ['VDU1']
    assert [v.compute_resource.resource_id for v in vnfcs] == \
        kube.names('Pod', 'ns-a')
    # Survives the trip to and from the database's JSON.
    objects.InstantiatedVnfInfo.obj_from_primitive(
        instance.instantiated_vnf_info.obj_to_primitive(), tacker_context)

    # VnfLcmDriver._scale_vnf for a Kubernetes VIM
    scale = tacker_request('ScaleVnfRequest', {
        'type': 'SCALE_OUT', 'aspectId': 'web_aspect', 'numberOfSteps': 1})
    vnfd = vnflcm_utils._get_vnfd_dict(tacker_context, cnf_package, 'simple')
    policy = {'instance_id': instance_id, 'name': 'web_aspect',
              'vnf': {}, 'action': 'out', 'vnf_instance_id': instance.id,
              'vdu_defs': vnfd_policies.aspect_vdu_defs(vnfd, 'web_aspect'),
              'delta_num': vnfd_policies.aspect_delta(vnfd, 'web_aspect')}
    event = driver.scale(context=tacker_context, plugin=None,
                         auth_attr=vim.access_info, policy=policy,
                         region_name=None)
    driver.scale_wait(context=tacker_context, plugin=None,
                      auth_attr=vim.access_info, policy=policy,
                      region_name=None, last_event_id=event)
    driver.scale_resource_update(
        context=tacker_context, vnf_instance=instance, vnf_info={},
        scale_vnf_request=scale, vim_connection_info=vim)
    assert len(kube.names('Pod', 'ns-a')) == 2
    assert len(instance.instantiated_vnf_info.vnfc_resource_info) == 2

    # VnfLcmDriver._heal_vnf
    target = instance.instantiated_vnf_info.vnfc_resource_info[0]
    sick = target.compute_resource.resource_id
    heal = tacker_request('HealVnfRequest', {'vnfcInstanceId': [target.id]})
    # VnfLcmDriver._heal_vnf, then the conductor's
    # _update_instantiated_vnf_info: post_heal_vnf runs twice.
    for step in ('heal_vnf', 'heal_vnf_wait', 'post_heal_vnf',
                 'post_heal_vnf'):
        getattr(driver, step)(context=tacker_context, vnf_instance=instance,
                              vim_connection_info=vim,
                              heal_vnf_request=heal)
    assert target.compute_resource.resource_id != sick
    assert sick not in kube.names('Pod', 'ns-a')
    assert sorted(v.compute_resource.resource_id for v in
                  instance.instantiated_vnf_info.vnfc_resource_info) == \
        kube.names('Pod', 'ns-a')

    # VnfLcmDriver._delete_vnf_instance_resources
    heal_requests = len(kube.requests)
    terminate = tacker_request('TerminateVnfRequest', {
        'terminationType': 'GRACEFUL', 'gracefulTerminationTimeout': 5})
    driver.delete(plugin=None, context=tacker_context, vnf_id=instance_id,
                  auth_attr=vim.access_info, vnf_instance=instance,
                  terminate_vnf_req=terminate)
    driver.delete_wait(plugin=None, context=tacker_context,
                       vnf_id=instance_id, auth_attr=vim.access_info,
                       vnf_instance=instance)
    for resource in objects.VnfResourceList.get_by_vnf_instance_id(
            tacker_context, instance.id):
        driver.delete_vnf_instance_resource(
            context=tacker_context, vnf_instance=instance,
            vim_connection_info=vim, vnf_resource=resource)
    for kind in ('Deployment', 'Service', 'ConfigMap', 'Pod'):
        assert kube.names(kind, 'ns-a') == [], kind
    deletes = [r for r in kube.requests[heal_requests:]
               if r.method == 'DELETE']
    assert len(deletes) == 3
    assert {r.body['gracePeriodSeconds'] for r in deletes} == {5}

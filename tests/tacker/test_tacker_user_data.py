"""Tacker's OpenStack infra driver runs our user data on the BaseHOT.

The code path is Tacker 16's own, from ``OpenStack.pre_instantiation_vnf``
(images to Glance) through ``OpenStack.instantiate_vnf`` -> ``create``:
with ``lcm-operation-user-data`` in additionalParams, ``create`` loads
``BaseHOT/<flavour>`` and its nested templates
(``vnflcm_utils.get_base_nest_hot_dict``), imports
``UserData/k8s_cluster_user_data.py`` from the unpacked package, runs
``KubernetesClusterUserData.instantiate`` in its ThreadPoolExecutor with
``USER_DATA_TIMEOUT`` (Tacker 16 has no subprocess runner) and sends the
template, nested files and returned parameters to Heat. Only the clouds
are replaced: Glance (computes the image's SHA-512, which Tacker compares
with the VNFD) and Heat (records the stack Tacker would create).
"""
import copy
import hashlib
import types
import uuid
from unittest import mock

import pytest
import yaml

# flavour -> VDU -> VMs at the default instantiation level
EXPECTED_CAPACITY = {'simple': {'masterNode': 1, 'workerNode': 2},
                     'complex': {'masterNode': 3, 'workerNode': 2}}
NETWORK = 'c3a7e0e4-4f4b-4b8e-9d55-3f6c0c1e7d11'


class FakeGlance:
    """Glance as Tacker's GlanceClient sees it: images become active and
    carry the SHA-512 of the uploaded file."""

    def __init__(self, vim_connection_info):
        self.images = {}

    def create(self, name, **data):
        image = types.SimpleNamespace(id=str(uuid.uuid4()), name=name,
                                      status='active', hash_algo='sha512',
                                      **data)
        with open(data['filename'], 'rb') as f:
            image.hash_value = hashlib.sha512(f.read()).hexdigest()
        self.images[image.id] = image
        return image

    def get(self, image_id):
        return self.images[image_id]


class FakeHeat:
    """What Tacker's HeatClient is asked to create."""

    created: list = []

    def __init__(self, auth_attr, region_name=None):
        pass

    def find_stack(self, **filters):
        return None

    def create(self, fields):
        FakeHeat.created.append(fields)
        return {'stack': {'id': str(uuid.uuid4())}}


def _nfv_paths(node):
    """Every ``get_param: [nfv, ...]`` path in a template."""
    if isinstance(node, dict):
        param = node.get('get_param')
        if isinstance(param, list) and param and param[0] == 'nfv':
            yield tuple(param)
        for value in node.values():
            yield from _nfv_paths(value)
    elif isinstance(node, list):
        for value in node:
            yield from _nfv_paths(value)


def _resolve(params, path):
    value = params
    for key in path:
        assert isinstance(value, dict) and key in value, (
            f'HOT parameter {"/".join(path)} is not in what the user data '
            f'returned: {params}')
        value = value[key]
    return value


@pytest.fixture
def stack(vnfd_in_db, tacker_context, tacker_request, request_body):
    """Instantiate a flavour through Tacker's OpenStack infra driver;
    returns (flavour_id -> what Heat was asked to create, Glance ids)."""
    from tacker import objects
    from tacker.objects import fields
    from tacker.vnflcm import utils as vnflcm_utils
    from tacker.vnfm.infra_drivers.openstack import openstack

    def run(flavour_id):
        body = request_body(
            f'{flavour_id}_kubernetes_param_file.json',
            REPLACE_WITH_A_NEW_UUID=str(uuid.uuid4()),
            REPLACE_WITH_OPENSTACK_VIM_ID=str(uuid.uuid4()),
            REPLACE_WITH_NETWORK_ID=NETWORK,
            REPLACE_WITH_VM_PASSWORD='not-used-here')
        request = tacker_request('InstantiateVnfRequest', body)
        instance = objects.VnfInstance(
            context=tacker_context, id=str(uuid.uuid4()),
            vnf_instance_name='k8s', vnfd_id=vnfd_in_db.vnfd_id,
            tenant_id=tacker_context.project_id,
            instantiation_state=fields.VnfInstanceState.NOT_INSTANTIATED)
        vim = objects.VimConnectionInfo(
            id=request.vim_connection_info[0].id,
            vim_id=request.vim_connection_info[0].vim_id,
            vim_type='openstack', access_info={'region': 'RegionOne'})
        # As VnfLcmDriver._instantiate_vnf prepares it.
        vnfd_dict = vnflcm_utils._get_vnfd_dict(
            tacker_context, instance.vnfd_id, flavour_id)
        images = vnflcm_utils._create_grant_request(
            vnfd_dict, vnfd_in_db.package_uuid)
        driver = openstack.OpenStack()
        glance = FakeGlance(vim)
        with mock.patch.object(openstack.gc, 'GlanceClient',
                               return_value=glance):
            grant = driver.pre_instantiation_vnf(
                tacker_context, instance, vim, images, request,
                str(vnfd_in_db.root))
        # The legacy vnf dict: the VNFD of every flavour as the conductor
        # stores it on upload (conductor_server._onboard_vnfd).
        vnf_dict = {
            'id': instance.id, 'name': instance.vnf_instance_name,
            'vnfd_id': instance.vnfd_id, 'status': 'PENDING_CREATE',
            'before_error_point': fields.ErrorPoint.INITIAL,
            'attributes': {},
            'vnfd': {'attributes': {
                f'vnfd_{f}': yaml.dump(flavour['tpl_dict'],
                                       default_flow_style=False)
                for f, flavour in vnfd_in_db.flavours.items()}}}
        final = vnflcm_utils._make_final_vnf_dict(
            copy.deepcopy(vnfd_dict), instance.id,
            instance.vnf_instance_name,
            vnflcm_utils._get_param_data(vnfd_dict, request), vnf_dict)
        FakeHeat.created.clear()
        with mock.patch.object(openstack.hc, 'HeatClient', FakeHeat):
            driver.instantiate_vnf(
                tacker_context, instance, final, vim, request, grant,
                plugin=None, vnf_package_path=str(vnfd_in_db.root))
        assert len(FakeHeat.created) == 1
        glance_ids = {node: resources[0].resource_identifier
                      for node, resources in grant.items()}
        return FakeHeat.created[0], glance_ids
    return run


@pytest.mark.parametrize('flavour_id', sorted(EXPECTED_CAPACITY))
def test_user_data_names_every_resource_the_templates_need(stack,
                                                           flavour_id):
    created, glance_ids = stack(flavour_id)
    template = yaml.safe_load(created['template'])
    nested = {name: yaml.safe_load(text)
              for name, text in created.get('files', {}).items()}
    params = created['parameters']
    assert isinstance(params, dict)

    # Every parameter the top template declares without a default.
    for name, spec in (template.get('parameters') or {}).items():
        assert 'default' in spec or name in params, name

    # Every nfv path any template reads resolves.
    paths = set(_nfv_paths(template))
    for hot in nested.values():
        paths |= set(_nfv_paths(hot))
    assert paths, 'the BaseHOT reads no nfv parameter'
    for path in sorted(paths):
        _resolve(params, path)

    # And the values are the ones Tacker and the request gave.
    vdus = params['nfv']['VDU']
    assert set(glance_ids) == set(EXPECTED_CAPACITY[flavour_id])
    for vdu, count in EXPECTED_CAPACITY[flavour_id].items():
        assert vdus[vdu]['image'] == glance_ids[vdu]
        assert vdus[vdu]['flavor'] == 'm1.medium'
        assert vdus[vdu]['desired_capacity'] == count
    for cp in params['nfv']['CP'].values():
        assert cp['network'] == NETWORK


@pytest.mark.parametrize('flavour_id', sorted(EXPECTED_CAPACITY))
def test_nested_templates_get_every_parameter(stack, flavour_id):
    """Heat would reject a group member whose template parameter the
    group's resource properties leave out."""
    created, _ = stack(flavour_id)
    template = yaml.safe_load(created['template'])
    nested = {name: yaml.safe_load(text)
              for name, text in created.get('files', {}).items()}
    groups = {name: r for name, r in template['resources'].items()
              if r['type'] == 'OS::Heat::AutoScalingGroup'}
    assert set(groups) == {'master_instance', 'worker_instance'}
    for name, group in groups.items():
        member = group['properties']['resource']
        hot = nested[member['type']]
        given = set(member.get('properties') or {})
        for param, spec in (hot.get('parameters') or {}).items():
            assert 'default' in spec or param in given, (name, param)

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

Cases: every flavour with its request sample; simple with a storage server
(simple_kubernetes_pv_param_file.json, also in the older camelCase
spelling of additionalParams) and without one; podaffinity's server group.
"""
import copy
import hashlib
import types
import uuid
from types import SimpleNamespace
from unittest import mock

import pytest
import yaml

# flavour -> VDU -> VMs at the default instantiation level
EXPECTED_CAPACITY = {'simple': {'masterNode': 1, 'workerNode': 2},
                     'complex': {'masterNode': 3, 'workerNode': 2},
                     'podaffinity': {'masterNode': 3, 'workerNode': 2}}
# Request sample -> (flavour, with a storage server)
REQUESTS = {'simple_kubernetes_param_file.json': ('simple', False),
            'simple_kubernetes_pv_param_file.json': ('simple', True),
            'complex_kubernetes_param_file.json': ('complex', False),
            'podaffinity_kubernetes_param_file.json': ('podaffinity', False)}
PV_REQUEST = 'simple_kubernetes_pv_param_file.json'
NETWORK = 'c3a7e0e4-4f4b-4b8e-9d55-3f6c0c1e7d11'
STORAGE_PARAM = 'storage_server_enabled'
STORAGE_CP = 'storage_server_CP'
STORAGE_RESOURCES = {'storage_server', 'storage_server_volume', STORAGE_CP,
                     'storage_security_group'}


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


def _condition(definition, params, declared):
    """The value of a Heat condition of the forms the BaseHOT uses."""
    if isinstance(definition, bool):
        return definition
    if 'get_param' in definition:
        name = definition['get_param']
        return params.get(name, declared[name].get('default'))
    if 'equals' in definition:
        left, right = (_condition(v, params, declared)
                       if isinstance(v, dict) else v
                       for v in definition['equals'])
        return left == right
    if 'not' in definition:
        return not _condition(definition['not'], params, declared)
    raise AssertionError(f'condition form not handled here: {definition}')


def _created(template, params):
    """The resources Heat creates with ``params``: those without a
    condition or whose condition is true."""
    declared = template.get('parameters') or {}
    conditions = {name: _condition(d, params, declared)
                  for name, d in (template.get('conditions') or {}).items()}
    return {name: r for name, r in template['resources'].items()
            if conditions.get(r.get('condition'), True)}


def _collect(value, key):
    """Every value of ``key`` in a template snippet."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k == key:
                yield v
            yield from _collect(v, key)
    elif isinstance(value, list):
        for v in value:
            yield from _collect(v, key)


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

    def run(name, camel_case=False, unlinked=(), driver_first=False):
        body = request_body(
            name,
            REPLACE_WITH_A_NEW_UUID=str(uuid.uuid4()),
            REPLACE_WITH_OPENSTACK_VIM_ID=str(uuid.uuid4()),
            REPLACE_WITH_NETWORK_ID=NETWORK,
            REPLACE_WITH_VM_PASSWORD='not-used-here',
            REPLACE_WITH_NODE_NETWORK_CIDR='10.10.0.0/24')
        if camel_case:      # how requests of older guides spell it
            additional = body['additionalParams']
            param = additional.pop('k8s_cluster_installation_param')
            param['storageServer'] = param.pop('storage_server')
            additional['k8sClusterInstallationParam'] = param
        for link in body['extVirtualLinks']:
            link['extCps'] = [cp for cp in link['extCps']
                              if cp['cpdId'] not in unlinked]
        body['extVirtualLinks'] = [link for link in body['extVirtualLinks']
                                   if link['extCps']]
        flavour_id = body['flavourId']
        request = tacker_request('InstantiateVnfRequest', body)
        instance = objects.VnfInstance(
            context=tacker_context, id=str(uuid.uuid4()),
            vnf_instance_name='k8s', vnfd_id=vnfd_in_db.vnfd_id,
            tenant_id=tacker_context.project_id,
            instantiation_state=fields.VnfInstanceState.NOT_INSTANTIATED)
        if driver_first:    # the driver's instantiate_start, as routed
            from kubernetes_mgmt.kubernetes_mgmt import KubernetesMgmtDriver

            # As the conductor's _instantiate_grant does first: the
            # instance's info, with its own copy of the additionalParams.
            instance.instantiated_vnf_info = objects.InstantiatedVnfInfo(
                flavour_id=flavour_id, vnf_instance_id=instance.id)
            instance.instantiated_vnf_info.reinitialize()
            vnflcm_utils._build_instantiated_vnf_info(
                vnflcm_utils._get_vnfd_dict(tacker_context,
                                            instance.vnfd_id, flavour_id),
                request, instance, '')
            KubernetesMgmtDriver().instantiate_start(
                context=tacker_context, vnf_instance=instance,
                instantiate_vnf_request=request, grant=None,
                grant_request=None)
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
        run.last = SimpleNamespace(instance=instance, request=request,
                                   vnf_dict=vnf_dict, flavour_id=flavour_id)
        return FakeHeat.created[0], glance_ids
    return run


@pytest.mark.parametrize('name', sorted(REQUESTS))
def test_user_data_names_every_resource_the_templates_need(stack, name):
    flavour_id, _ = REQUESTS[name]
    created, glance_ids = stack(name)
    template = yaml.safe_load(created['template'])
    nested = {name: yaml.safe_load(text)
              for name, text in created.get('files', {}).items()}
    params = created['parameters']
    assert isinstance(params, dict)

    # Every parameter the top template declares without a default.
    for param, spec in (template.get('parameters') or {}).items():
        assert 'default' in spec or param in params, param

    # Every nfv path that a resource Heat creates reads resolves.
    paths = set(_nfv_paths(_created(template, params)))
    for hot in nested.values():
        paths |= set(_nfv_paths(hot))
    assert paths, 'the BaseHOT reads no nfv parameter'
    for path in sorted(paths):
        _resolve(params, path)

    # And the values are the ones Tacker and the request gave.
    vdus = params['nfv']['VDU']
    images = set(EXPECTED_CAPACITY[flavour_id])
    if flavour_id == 'simple':      # Glance gets the storage image anyway
        images.add('storage_server')
    assert set(glance_ids) == images
    for vdu, count in EXPECTED_CAPACITY[flavour_id].items():
        assert vdus[vdu]['image'] == glance_ids[vdu]
        assert vdus[vdu]['flavor'] == 'm1.medium'
        assert vdus[vdu]['desired_capacity'] == count
    for cp in params['nfv']['CP'].values():
        assert cp['network'] == NETWORK


@pytest.mark.parametrize('camel_case', [False, True])
def test_simple_with_a_storage_server(stack, camel_case):
    created, glance_ids = stack(PV_REQUEST, camel_case=camel_case)
    template = yaml.safe_load(created['template'])
    params = created['parameters']
    assert params[STORAGE_PARAM] is True
    assert STORAGE_RESOURCES <= set(_created(template, params))
    # The storage port's network is the request's (a required one).
    assert params['nfv']['CP'][STORAGE_CP] == {'network': NETWORK}
    server = params['nfv']['VDU']['storage_server']
    assert server == {'flavor': 'm1.small',
                      'image': glance_ids['storage_server']}
    # The VNFD's 10 GB, in whole GiB.
    assert params['nfv']['VDU']['storage_server_volume'] == {'size': 10}


def test_simple_without_a_storage_server(stack):
    created, _ = stack('simple_kubernetes_param_file.json')
    template = yaml.safe_load(created['template'])
    params = created['parameters']
    assert params[STORAGE_PARAM] is False
    created_resources = _created(template, params)
    assert not STORAGE_RESOURCES & set(created_resources)
    assert {'master_instance', 'worker_instance'} <= set(created_resources)
    # The request connects no storage port, and none is asked for.
    assert STORAGE_CP not in params['nfv']['CP']
    read_by_created = set(_nfv_paths(created_resources))
    assert ('nfv', 'CP', STORAGE_CP, 'network') not in read_by_created


def test_simple_with_a_storage_server_needs_its_network(stack):
    # Tacker lets the user data's exception fail the instantiation.
    with pytest.raises(ValueError, match='extVirtualLinks of the '
                       'Instantiate request must connect the ports '
                       f'{STORAGE_CP} '):
        stack(PV_REQUEST, unlinked=(STORAGE_CP,))


def test_podaffinity_workers_share_the_anti_affinity_group(stack):
    created, _ = stack('podaffinity_kubernetes_param_file.json')
    template = yaml.safe_load(created['template'])
    nested = {name: yaml.safe_load(text)
              for name, text in created['files'].items()}
    group = template['resources']['worker_anti_affinity_group']
    assert group['type'] == 'OS::Nova::ServerGroup'
    assert group['properties']['policies'] == ['anti-affinity']
    # Its id reaches every worker's scheduler hints; no master's.
    member = template['resources']['worker_instance']['properties'][
        'resource']
    assert member['properties']['server_group'] == {
        'get_resource': 'worker_anti_affinity_group'}
    worker = nested[member['type']]['resources']['workerNode']
    assert worker['properties']['scheduler_hints'] == {
        'group': {'get_param': 'server_group'}}
    master_type = template['resources']['master_instance']['properties'][
        'resource']['type']
    assert not list(_collect(nested[master_type], 'scheduler_hints'))
    # Three masters behind the VIP, as in complex.
    assert template['resources']['vip_CP']['type'] == 'OS::Neutron::Port'
    assert created['parameters']['nfv']['VDU']['masterNode'][
        'desired_capacity'] == 3


@pytest.mark.parametrize('name', sorted(REQUESTS))
def test_nested_templates_get_every_parameter(stack, name):
    """Heat would reject a group member whose template parameter the
    group's resource properties leave out."""
    created, _ = stack(name)
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


@pytest.mark.parametrize('name', sorted(REQUESTS))
def test_every_vm_gets_the_user_data_with_the_drivers_key(stack, name):
    """instantiate_start's additionalParams entry reaches Heat through
    Tacker's user data path, and every server of the flavour takes it."""
    from kubernetes_mgmt.remote import identity, user_data

    created, _ = stack(name, driver_first=True)
    text = created['parameters'][user_data.PARAMETER]
    key_line = next(u for u in yaml.safe_load(text)['users']
                    if isinstance(u, dict))['ssh_authorized_keys'][0]
    instance_id = key_line.rsplit('@', 1)[1]
    assert key_line == identity.public_line(
        identity.login_key(instance_id), instance_id)
    template = yaml.safe_load(created['template'])
    nested = {n: yaml.safe_load(t)
              for n, t in created.get('files', {}).items()}
    servers = 0
    for resource in template['resources'].values():
        props = resource.get('properties') or {}
        if resource['type'] == 'OS::Heat::AutoScalingGroup':
            member = props['resource']
            assert member['properties']['user_data'] == {
                'get_param': user_data.PARAMETER}
            for inner in nested[member['type']]['resources'].values():
                if inner['type'] == 'OS::Nova::Server':
                    servers += 1
                    assert inner['properties']['user_data'] == {
                        'get_param': 'user_data'}
                    assert inner['properties']['user_data_format'] == 'RAW'
        elif resource['type'] == 'OS::Nova::Server':
            servers += 1
            assert props['user_data'] == {'get_param': user_data.PARAMETER}
    assert servers >= 2


def test_a_heal_gives_heat_the_user_data_instantiate_gave(stack,
                                                          tacker_context):
    """Tacker keeps instantiate's stack parameters as the repr of their
    dict and reads them back with yaml.safe_load on a VNFC heal (and a
    scale rollback), which mangles every newline of the user data; a
    changed user data makes Heat replace every server of the stack. The
    package's user data puts back what the request stored."""
    from tacker import objects
    from tacker.vnfm.infra_drivers.openstack import openstack

    from kubernetes_mgmt.remote import user_data

    created, _ = stack('complex_kubernetes_param_file.json',
                       driver_first=True)
    last = stack.last
    sent = created['parameters'][user_data.PARAMETER]
    # As VnfLcmDriver keeps them (vnf attributes 'stack_param') and
    # vnflcm utils' get_stack_param reads them on a heal.
    reread = yaml.safe_load(str(created['parameters']))
    assert reread[user_data.PARAMETER] != sent
    # What Tacker keeps with the instance (its copy, made before the
    # driver's instantiate_start).
    stored = last.instance.instantiated_vnf_info.additional_params
    assert stored[user_data.PARAMETER] == sent
    info = objects.InstantiatedVnfInfo(
        flavour_id=last.flavour_id, vnfc_resource_info=[],
        additional_params=dict(stored))
    vnf = {'vnfd_id': last.instance.vnfd_id,
           'vnfd': last.vnf_dict['vnfd']}
    # The heal method reads the instance's Glance images from Tacker's
    # database, which this suite has none of: the instance has none.
    with mock.patch.object(objects.VnfResourceList,
                           'get_by_vnf_instance_id', return_value=[]):
        params = openstack.OpenStack()._stack_param_update(
            tacker_context, info, vnf, last.instance,
            objects.HealVnfRequest(vnfc_instance_id=[]), reread,
            info.additional_params, request_type='heal')
    assert params[user_data.PARAMETER] == sent

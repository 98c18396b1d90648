"""The sample VNF package and request samples, read as Tacker reads them."""
from __future__ import annotations

import ast
import importlib.util
import json
import sys
import types
from types import SimpleNamespace

import pytest
import yaml

from kubernetes_mgmt.lab.manager import default_layouts
from kubernetes_mgmt.lab.state import LabState
from kubernetes_mgmt.params.validate import parse_instantiate_request
from kubernetes_mgmt.vnf_package import layout

SAMPLE = layout.sample_package_dir()
REQUESTS = layout.request_samples_dir()
FLAVOURS = ('simple', 'complex')
HOOKS = ('instantiate_end', 'scale_start', 'scale_end', 'heal_start',
         'heal_end', 'terminate_start', 'terminate_end')
GROUPED = [g for g in default_layouts() if g.group]
VIP_PORT = LabState.__dataclass_fields__['vip_port'].default
# Ports the cluster needs (MISSION R-PKG): (protocol, first, last).
CLUSTER_PORTS = {('tcp', 22, 22), ('tcp', 6443, 6443),
                 ('tcp', 2379, 2380), ('tcp', 10250, 10255),
                 ('tcp', 30000, 32767)}


def load_yaml(relative: str) -> dict:
    return yaml.safe_load((SAMPLE / relative).read_text())


def flavour_vnfd(flavour: str) -> dict:
    return load_yaml(f'Definitions/kubernetes_mgmt_df_{flavour}.yaml')


def policies(flavour: str) -> dict:
    found = {}
    for entry in flavour_vnfd(flavour)['topology_template']['policies']:
        found.update(entry)
    return found


def top_hot(flavour: str) -> dict:
    [top] = (SAMPLE / 'BaseHOT' / flavour).glob('*.yaml')
    return yaml.safe_load(top.read_text())


def nested_hot(flavour: str, name: str) -> dict:
    return load_yaml(f'BaseHOT/{flavour}/nested/{name}')


def request(name: str) -> dict:
    return json.loads((REQUESTS / name).read_text())


# -- requests ---------------------------------------------------------------

@pytest.mark.parametrize('flavour', FLAVOURS)
def test_instantiate_samples_validate(flavour):
    body = request(f'{flavour}_kubernetes_param_file.json')
    params = parse_instantiate_request(body)
    assert body['flavourId'] == flavour
    assert params.master.aspect_id == 'master_instance'
    assert params.worker.aspect_id == 'worker_instance'
    assert params.script_path == 'Scripts/install_k8s_cluster.sh'
    expected_cp = 'vip_CP' if flavour == 'complex' else 'masterNode_CP1'
    assert params.master.cluster_cp_name == expected_cp
    user_data = body['additionalParams']['lcm-operation-user-data']
    assert (SAMPLE / user_data).is_file()
    linked = {cp['cpdId'] for link in body['extVirtualLinks']
              for cp in link['extCps']}
    assert linked == {'masterNode_CP1', 'workerNode_CP2'}


@pytest.mark.parametrize('name, kind', [
    ('scale_out_worker_instance.json', 'SCALE_OUT'),
    ('scale_in_worker_instance.json', 'SCALE_IN')])
def test_scale_samples(name, kind):
    body = request(name)
    assert body == {'type': kind, 'aspectId': 'worker_instance',
                    'numberOfSteps': 1}
    for flavour in FLAVOURS:
        aspects = policies(flavour)['scaling_aspects']['properties'][
            'aspects']
        assert aspects['worker_instance']['max_scale_level'] >= 1


def test_heal_samples():
    vnfc = request('heal_vnfc_request.json')      # SOL002: some VNFCs
    assert isinstance(vnfc['vnfcInstanceId'], list) and vnfc['cause']
    whole = request('heal_vnf_request.json')      # SOL003: the whole VNF
    assert 'vnfcInstanceId' not in whole and whole['cause']


def test_terminate_sample():
    body = request('terminate_vnf_request.json')
    assert body['terminationType'] in ('GRACEFUL', 'FORCEFUL')


# -- VNFD -------------------------------------------------------------------

@pytest.mark.parametrize('flavour', FLAVOURS)
def test_flavour_routes_hooks_to_the_driver(flavour):
    vnfd = flavour_vnfd(flavour)
    topology = vnfd['topology_template']
    assert topology['substitution_mappings']['properties'] == {
        'flavour_id': flavour}
    vnf = topology['node_templates']['VNF']
    lcm = vnf['interfaces']['Vnflcm']
    assert set(lcm) == set(HOOKS)
    assert {h['implementation'] for h in lcm.values()} == {
        layout.DRIVER_NAME}
    assert vnf['artifacts'][layout.DRIVER_NAME] == {
        'description': vnf['artifacts'][layout.DRIVER_NAME]['description'],
        'type': 'tosca.artifacts.Implementation.Python',
        'file': layout.DRIVER_FILE}


def test_types_and_top_vnfd_agree():
    types_file = load_yaml('Definitions/kubernetes_mgmt_types.yaml')
    [(type_name, node_type)] = types_file['node_types'].items()
    props = node_type['properties']
    assert props['flavour_id']['constraints'] == [
        {'valid_values': list(FLAVOURS)}]
    assert node_type['interfaces']['Vnflcm']['type'] == \
        'tosca.interfaces.nfv.Vnflcm'
    top = load_yaml('Definitions/kubernetes_mgmt_top.vnfd.yaml')
    assert set(top['imports']) >= {
        'etsi_nfv_sol001_common_types.yaml',
        'etsi_nfv_sol001_vnfd_types.yaml', 'kubernetes_mgmt_types.yaml',
        *(f'kubernetes_mgmt_df_{f}.yaml' for f in FLAVOURS)}
    vnf = top['topology_template']['node_templates']['VNF']
    assert vnf['type'] == type_name
    for key in ('descriptor_id', 'descriptor_version', 'provider',
                'product_name', 'software_version'):
        assert vnf['properties'][key] == props[key]['default']
    meta_text = (SAMPLE / layout.TOSCA_META).read_text()
    assert 'Entry-Definitions: Definitions/kubernetes_mgmt_top.vnfd.yaml' \
        in meta_text


@pytest.mark.parametrize('flavour, masters', [('simple', 1), ('complex', 3)])
def test_scaling_policies(flavour, masters):
    found = policies(flavour)
    aspects = found['scaling_aspects']['properties']['aspects']
    assert aspects['master_instance']['max_scale_level'] == 0
    assert found['masterNode_initial_delta']['properties'][
        'initial_delta']['number_of_instances'] == masters
    levels = found['instantiation_levels']['properties']['levels']
    for level in levels.values():     # Tacker looks every aspect up
        assert set(level['scale_info']) == set(aspects)


# -- BaseHOT against the VNFD and the lab's Heat double ---------------------

@pytest.mark.parametrize('flavour', FLAVOURS)
def test_base_hot_has_the_lab_layout(flavour):
    top = top_hot(flavour)
    assert top['parameters']['nfv']['type'] == 'json'
    resources = top['resources']
    for group in GROUPED:
        asg = resources[group.group]
        assert asg['type'] == 'OS::Heat::AutoScalingGroup'
        member = asg['properties']['resource']
        assert member['type'] == f'nested_{group.role}.yaml'
        nested = nested_hot(flavour, member['type'])['resources']
        assert nested[group.server]['type'] == 'OS::Nova::Server'
        for port in group.ports:
            assert nested[port]['type'] == 'OS::Neutron::Port'
        assert asg['properties']['desired_capacity'] == {
            'get_param': ['nfv', 'VDU', group.server, 'desired_capacity']}
        for key in ('flavor', 'image'):
            assert member['properties'][key] == {
                'get_param': ['nfv', 'VDU', group.server, key]}


@pytest.mark.parametrize('flavour', FLAVOURS)
def test_group_sizes_follow_the_vnfd(flavour):
    found = policies(flavour)
    aspects = found['scaling_aspects']['properties']['aspects']
    resources = top_hot(flavour)['resources']
    for group in GROUPED:
        initial = found[f'{group.server}_initial_delta']['properties'][
            'initial_delta']['number_of_instances']
        delta = found[f'{group.server}_scaling_aspect_deltas'][
            'properties']['deltas']['delta_1']['number_of_instances']
        top_level = aspects[group.group]['max_scale_level']
        props = resources[group.group]['properties']
        assert (props['min_size'], props['max_size']) == (
            initial, initial + delta * top_level)
        if top_level:       # Tacker signals <aspect>_scale_out / _scale_in
            for action, sign in (('out', 1), ('in', -1)):
                policy = resources[f'{group.group}_scale_{action}']
                assert policy['type'] == 'OS::Heat::ScalingPolicy'
                assert policy['properties']['scaling_adjustment'] == \
                    sign * delta
                assert policy['properties']['auto_scaling_group_id'] == {
                    'get_resource': group.group}


def test_complex_has_the_vip_on_the_master_ports():
    resources = top_hot('complex')['resources']
    assert resources[VIP_PORT]['type'] == 'OS::Neutron::Port'
    member = resources['master_instance']['properties']['resource']
    assert member['properties']['vip_address'] == {
        'get_attr': [VIP_PORT, 'fixed_ips', 0, 'ip_address']}
    port = nested_hot('complex', 'nested_master.yaml')['resources'][
        'masterNode_CP1']
    assert port['properties']['allowed_address_pairs'] == [
        {'ip_address': {'get_param': 'vip_address'}}]
    assert VIP_PORT not in top_hot('simple')['resources']


@pytest.mark.parametrize('flavour', FLAVOURS)
def test_security_group_opens_the_cluster_ports(flavour):
    rules = top_hot(flavour)['resources']['cluster_security_group'][
        'properties']['rules']
    ranges = {(r.get('protocol'), r.get('port_range_min'),
               r.get('port_range_max')) for r in rules}
    assert CLUSTER_PORTS <= ranges
    assert {'remote_mode': 'remote_group_id'} in rules
    ha = {('tcp', 16443, 16443), ('112', None, None)}
    assert (ha <= ranges) == (flavour == 'complex')


# -- the user data ----------------------------------------------------------

def test_user_data_defines_the_class_tacker_calls():
    tree = ast.parse((SAMPLE / 'UserData/k8s_cluster_user_data.py')
                     .read_text())
    [cls] = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert cls.name == 'KubernetesClusterUserData'
    [method] = [n for n in cls.body if isinstance(n, ast.FunctionDef)]
    assert method.name == 'instantiate'
    assert [d.id for d in method.decorator_list] == ['staticmethod']
    assert [a.arg for a in method.args.args] == [
        'base_hot_dict', 'vnfd_dict', 'inst_req_info', 'grant_info']


@pytest.fixture
def user_data(monkeypatch):
    """The user data module with Tacker's modules replaced by stand-ins."""
    names = ('tacker', 'tacker.vnfm', 'tacker.vnfm.lcm_user_data',
             'tacker.vnfm.lcm_user_data.abstract_user_data',
             'tacker.vnfm.lcm_user_data.utils')
    for name in names:
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    sys.modules[names[3]].AbstractUserData = object
    sys.modules[names[2]].utils = sys.modules[names[4]]
    # No __pycache__ inside the sample tree.
    monkeypatch.setattr(sys, 'dont_write_bytecode', True)
    path = SAMPLE / 'UserData/k8s_cluster_user_data.py'
    spec = importlib.util.spec_from_file_location('k8s_user_data', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ext_links(*cpd_ids: str) -> SimpleNamespace:
    return SimpleNamespace(ext_virtual_links=[SimpleNamespace(
        resource_id='net-1',
        ext_cps=[SimpleNamespace(cpd_id=c) for c in cpd_ids])])


def test_user_data_networks_from_ext_virtual_links(user_data):
    params = {'nfv': {'CP': {'masterNode_CP1': {}, 'workerNode_CP2': {}}}}
    assert user_data._networks(
        ext_links('masterNode_CP1', 'workerNode_CP2', 'other'), params) == {
        'masterNode_CP1': {'network': 'net-1'},
        'workerNode_CP2': {'network': 'net-1'},
        'other': {'network': 'net-1'}}


def test_user_data_names_an_unconnected_port(user_data):
    params = {'nfv': {'CP': {'masterNode_CP1': {}, 'workerNode_CP2': {}}}}
    with pytest.raises(ValueError, match='must connect the ports '
                                         'workerNode_CP2 '):
        user_data._networks(ext_links('masterNode_CP1'), params)


@pytest.mark.parametrize('flavour', FLAVOURS)
def test_user_data_maps_aspects_to_vdus(user_data, flavour):
    vnfd = flavour_vnfd(flavour)
    assert user_data._aspect_vdus(vnfd, 'master_instance') == ['masterNode']
    assert user_data._aspect_vdus(vnfd, 'worker_instance') == ['workerNode']

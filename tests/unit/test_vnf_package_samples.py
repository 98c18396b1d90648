"""The sample VNF package and request samples, read as Tacker reads them."""
from __future__ import annotations

import ast
import copy
import importlib.util
import json
import re
import sys
import types
from types import SimpleNamespace

import pytest
import yaml

from kubernetes_mgmt.cli import main
from kubernetes_mgmt.params.validate import parse_instantiate_request
from kubernetes_mgmt.vnf_package import layout, manifests
from kubernetes_mgmt_lab.manager import default_layouts
from kubernetes_mgmt_lab.state import LabState

SAMPLE = layout.sample_package_dir()
REQUESTS = layout.request_samples_dir()
FLAVOURS = ('simple', 'complex', 'podaffinity')
HA = ('complex', 'podaffinity')       # three masters behind vip_CP
HOOKS = ('instantiate_start', 'instantiate_end', 'scale_start',
         'scale_end', 'heal_start', 'heal_end', 'terminate_start',
         'terminate_end')
GROUPED = [g for g in default_layouts() if g.group]
VIP_PORT = LabState.__dataclass_fields__['vip_port'].default
# Ports the cluster needs (MISSION R-PKG): (protocol, first, last).
CLUSTER_PORTS = {('tcp', 22, 22), ('tcp', 6443, 6443),
                 ('tcp', 2379, 2380), ('tcp', 10250, 10255),
                 ('tcp', 30000, 32767)}
# The storage server of flavour simple (lab layout 'storage').
[STORAGE] = [g for g in default_layouts() if g.role == 'storage']
[STORAGE_CP] = STORAGE.ports
[STORAGE_VOLUME] = STORAGE.volumes
STORAGE_RESOURCES = {STORAGE.server, STORAGE_CP, STORAGE_VOLUME,
                     'storage_security_group'}
PV_REQUEST = 'simple_kubernetes_pv_param_file.json'
NFS_PLACEHOLDER = '0.0.0.0'  # noqa: S104 (an address in a manifest)


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


# The site's node network, which the PV sample leaves to its user.
NODE_NETWORK = 'REPLACE_WITH_NODE_NETWORK_CIDR'


def request(name: str) -> dict:
    """A request sample, the node network filled in."""
    text = (REQUESTS / name).read_text()
    return json.loads(text.replace(NODE_NETWORK, '10.10.0.0/24'))


# -- requests ---------------------------------------------------------------

@pytest.mark.parametrize('flavour', FLAVOURS)
def test_instantiate_samples_validate(flavour):
    body = request(f'{flavour}_kubernetes_param_file.json')
    params = parse_instantiate_request(body)
    assert body['flavourId'] == flavour
    assert params.master.aspect_id == 'master_instance'
    assert params.worker.aspect_id == 'worker_instance'
    assert params.script_path == 'Scripts/install_k8s_cluster.sh'
    expected_cp = VIP_PORT if flavour in HA else 'masterNode_CP1'
    assert params.master.cluster_cp_name == expected_cp
    user_data = body['additionalParams']['lcm-operation-user-data']
    assert (SAMPLE / user_data).is_file()
    linked = {cp['cpdId'] for link in body['extVirtualLinks']
              for cp in link['extCps']}
    assert linked == {'masterNode_CP1', 'workerNode_CP2'}
    assert params.storage_server is None and not params.pv_registrations


def test_every_request_sample_passes_validate_request_once_filled_in(
        capsys, tmp_path):
    names = sorted(p.name for p in REQUESTS.glob('*_param_file.json'))
    assert names == ['complex_kubernetes_param_file.json',
                     'podaffinity_kubernetes_param_file.json',
                     'simple_kubernetes_param_file.json', PV_REQUEST]
    for path in sorted(REQUESTS.glob('*.json')):
        # As shipped: the placeholders, and nothing else, are reported.
        status = main(['validate-request', str(path)])
        out, err = capsys.readouterr()
        holders = re.findall(r'REPLACE_WITH_\w+', path.read_text())
        assert status == (1 if holders else 0), path.name
        assert all("still holds the sample's placeholder" in line
                   for line in err.splitlines()), err
        assert len(err.splitlines()) == len(holders)
        # Filled in, it is valid.
        filled = tmp_path / path.name
        filled.write_text(re.sub(
            r'REPLACE_WITH_\w+', 'Filled-In-1',
            path.read_text().replace(NODE_NETWORK, '10.10.0.0/24')))
        assert main(['validate-request', str(filled)]) == 0, path.name
        out, err = capsys.readouterr()
        assert err == '' and f'{filled}: valid' in out


def test_pv_sample_validates_and_connects_the_storage_server():
    body = request(PV_REQUEST)
    params = parse_instantiate_request(body)
    assert body['flavourId'] == 'simple'
    storage = params.storage_server
    assert storage.ssh_cp_name == STORAGE_CP
    assert [v.volume_resource_id for v in storage.volumes] == [
        STORAGE_VOLUME]
    exports = [e.export_dir for e in storage.exports]
    assert exports == [f'/volume/nfs/pv{i}' for i in (1, 2, 3)]
    assert [pv.pv_manifest_file_path for pv in params.pv_registrations] == [
        f'Files/kubernetes/nfs-pv{i}.yaml' for i in (1, 2, 3)]
    assert {pv.nfs_server_cp for pv in params.pv_registrations} == {
        STORAGE_CP}
    linked = {cp['cpdId'] for link in body['extVirtualLinks']
              for cp in link['extCps']}
    assert linked == {'masterNode_CP1', 'workerNode_CP2', STORAGE_CP}
    # Apart from the storage server, the simple sample.
    simple = request('simple_kubernetes_param_file.json')
    param = body['additionalParams']['k8s_cluster_installation_param']
    assert param['master_node'] == simple['additionalParams'][
        'k8s_cluster_installation_param']['master_node']


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


@pytest.mark.parametrize('flavour, masters', [('simple', 1), ('complex', 3),
                                              ('podaffinity', 3)])
def test_scaling_policies(flavour, masters):
    found = policies(flavour)
    aspects = found['scaling_aspects']['properties']['aspects']
    assert aspects['master_instance']['max_scale_level'] == 0
    assert found['masterNode_initial_delta']['properties'][
        'initial_delta']['number_of_instances'] == masters
    levels = found['instantiation_levels']['properties']['levels']
    for level in levels.values():     # Tacker looks every aspect up
        assert set(level['scale_info']) == set(aspects)


# -- BaseHOT against the VNFD and the lab's host layouts --------------------

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


@pytest.mark.parametrize('flavour', HA)
def test_ha_flavours_have_the_vip_on_the_master_ports(flavour):
    resources = top_hot(flavour)['resources']
    assert resources[VIP_PORT]['type'] == 'OS::Neutron::Port'
    member = resources['master_instance']['properties']['resource']
    assert member['properties']['vip_address'] == {
        'get_attr': [VIP_PORT, 'fixed_ips', 0, 'ip_address']}
    port = nested_hot(flavour, 'nested_master.yaml')['resources'][
        'masterNode_CP1']
    assert port['properties']['allowed_address_pairs'] == [
        {'ip_address': {'get_param': 'vip_address'}}]
    assert VIP_PORT not in top_hot('simple')['resources']


def test_podaffinity_is_complex_with_workers_in_an_anti_affinity_group():
    top, complex_top = top_hot('podaffinity'), top_hot('complex')
    resources = top['resources']
    group = resources.pop('worker_anti_affinity_group')
    assert group['type'] == 'OS::Nova::ServerGroup'
    assert group['properties']['policies'] == ['anti-affinity']
    member = resources['worker_instance']['properties']['resource']
    assert member['properties'].pop('server_group') == {
        'get_resource': 'worker_anti_affinity_group'}
    # Everything else as in complex: masters, VIP, security group, scaling.
    assert resources == complex_top['resources']
    assert top['parameters'] == complex_top['parameters']
    assert nested_hot('podaffinity', 'nested_master.yaml') == \
        nested_hot('complex', 'nested_master.yaml')
    worker = nested_hot('podaffinity', 'nested_worker.yaml')
    assert worker['parameters']['server_group'] == {
        'type': 'string', 'description': worker['parameters'][
            'server_group']['description']}
    server = worker['resources']['workerNode']['properties']
    assert server.pop('scheduler_hints') == {
        'group': {'get_param': 'server_group'}}
    assert 'scheduler_hints' not in nested_hot(
        'complex', 'nested_worker.yaml')['resources']['workerNode'][
            'properties']
    for flavour in ('simple', 'complex'):
        assert not any(r['type'] == 'OS::Nova::ServerGroup'
                       for r in top_hot(flavour)['resources'].values())


def test_podaffinity_vnfd_is_complex_plus_the_anti_affinity_rule():
    found = policies('podaffinity')
    rule = found.pop('worker_anti_affinity_rule')
    assert rule == {'type': 'tosca.policies.nfv.AntiAffinityRule',
                    'targets': ['workerNode'],
                    'properties': {'scope': 'nfvi_node'}}
    assert found == policies('complex')
    nodes = flavour_vnfd('podaffinity')['topology_template'][
        'node_templates']
    assert set(nodes) == set(flavour_vnfd('complex')['topology_template'][
        'node_templates'])


@pytest.mark.parametrize('flavour', FLAVOURS)
def test_security_group_opens_the_cluster_ports(flavour):
    rules = top_hot(flavour)['resources']['cluster_security_group'][
        'properties']['rules']
    ranges = {(r.get('protocol'), r.get('port_range_min'),
               r.get('port_range_max')) for r in rules}
    assert CLUSTER_PORTS <= ranges
    assert {'remote_mode': 'remote_group_id'} in rules
    ha = {('tcp', 16443, 16443), ('112', None, None)}
    assert (ha <= ranges) == (flavour in HA)


# -- the storage server (flavour simple) ------------------------------------

def test_simple_vnfd_has_the_storage_server():
    vnfd = flavour_vnfd('simple')
    topology = vnfd['topology_template']
    nodes = topology['node_templates']
    server = nodes[STORAGE.server]
    assert server['type'] == 'tosca.nodes.nfv.Vdu.Compute'
    assert server['requirements'] == [{'virtual_storage': STORAGE_VOLUME}]
    assert server['properties']['vdu_profile'] == {
        'min_number_of_instances': 0, 'max_number_of_instances': 1}
    assert server['artifacts']['sw_image']['type'] == \
        'tosca.artifacts.nfv.SwImage'
    volume = nodes[STORAGE_VOLUME]
    assert volume['type'] == 'tosca.nodes.nfv.Vdu.VirtualBlockStorage'
    assert volume['properties']['virtual_block_storage_data'][
        'size_of_storage'] == '10 GB'
    port = nodes[STORAGE_CP]
    assert port['type'] == 'tosca.nodes.nfv.VduCp'
    assert port['requirements'] == [{'virtual_binding': STORAGE.server}]
    assert topology['substitution_mappings']['requirements'][
        'virtual_link_storage'] == [STORAGE_CP, 'virtual_link']
    # Not scalable: in no aspect.
    found = policies('simple')
    for policy in found.values():
        if policy['type'] == 'tosca.policies.nfv.VduScalingAspectDeltas':
            assert STORAGE.server not in policy['targets']
    assert found['storage_server_initial_delta']['targets'] == [
        STORAGE.server]
    for flavour in HA:
        assert STORAGE.server not in flavour_vnfd(flavour)[
            'topology_template']['node_templates']


def test_simple_base_hot_creates_the_storage_server_on_request():
    top = top_hot('simple')
    assert top['parameters']['storage_server_enabled']['type'] == 'boolean'
    assert top['parameters']['storage_server_enabled']['default'] is False
    assert top['conditions'] == {'with_storage_server': {'equals': [
        {'get_param': 'storage_server_enabled'}, True]}}
    resources = top['resources']
    conditional = {name for name, r in resources.items()
                   if r.get('condition') == 'with_storage_server'}
    assert conditional == STORAGE_RESOURCES
    assert resources[STORAGE_VOLUME]['type'] == 'OS::Cinder::Volume'
    assert resources[STORAGE_VOLUME]['properties']['size'] == {
        'get_param': ['nfv', 'VDU', STORAGE_VOLUME, 'size']}
    port = resources[STORAGE_CP]
    assert port['type'] == 'OS::Neutron::Port'
    assert port['properties']['network'] == {
        'get_param': ['nfv', 'CP', STORAGE_CP, 'network']}
    server = resources[STORAGE.server]
    assert server['type'] == 'OS::Nova::Server'
    props = server['properties']
    assert props['block_device_mapping_v2'] == [{
        'device_name': 'vdb', 'volume_id': {'get_resource': STORAGE_VOLUME},
        'boot_index': -1}]
    assert props['networks'] == [{'port': {'get_resource': STORAGE_CP}}]
    for key in ('flavor', 'image'):
        assert props[key] == {'get_param': ['nfv', 'VDU', STORAGE.server,
                                            key]}
    for flavour in HA:
        assert not STORAGE_RESOURCES & set(top_hot(flavour)['resources'])


def test_storage_server_accepts_nfs_from_the_cluster_only():
    resources = top_hot('simple')['resources']
    rules = resources['storage_security_group']['properties']['rules']
    from_cluster = {'remote_mode': 'remote_group_id',
                    'remote_group_id': {'get_resource':
                                        'cluster_security_group'}}
    found = {(r['protocol'], r['port_range_min'], r['port_range_max']):
             {k: v for k, v in r.items() if k.startswith('remote')}
             for r in rules}
    assert found == {
        ('tcp', 22, 22): {'remote_ip_prefix': '0.0.0.0/0'},
        ('tcp', 2049, 2049): from_cluster,
        ('tcp', 111, 111): from_cluster,
        ('udp', 111, 111): from_cluster}
    assert resources[STORAGE_CP]['properties']['security_groups'] == [
        {'get_resource': 'storage_security_group'}]


def pv_manifests() -> list:
    return sorted((SAMPLE / layout.MANIFESTS).glob('*.yaml'))


def test_pv_manifests_are_single_nfs_persistent_volumes():
    files = pv_manifests()
    assert [f.name for f in files] == ['nfs-pv1.yaml', 'nfs-pv2.yaml',
                                       'nfs-pv3.yaml']
    for index, path in enumerate(files, start=1):
        [pv] = list(yaml.safe_load_all(path.read_text()))
        assert (pv['apiVersion'], pv['kind']) == ('v1', 'PersistentVolume')
        assert pv['metadata']['name'] == f'nfs-pv{index}'
        spec = pv['spec']
        # The driver writes the storage server's IP over the placeholder.
        assert spec['nfs'] == {'server': NFS_PLACEHOLDER,
                               'path': f'/volume/nfs/pv{index}'}
        assert spec['persistentVolumeReclaimPolicy'] == 'Retain'
        assert spec['storageClassName'] == ''
        assert spec['capacity']['storage'].endswith('Gi')
        assert set(spec['accessModes']) <= {'ReadWriteOnce',
                                            'ReadWriteMany'}
        assert manifests.pv_problems(path.name, path.read_text()) == []


def test_pv_request_registers_every_manifest_on_an_export():
    body = request(PV_REQUEST)
    param = body['additionalParams']['k8s_cluster_installation_param']
    exports = [e['export_dir'] for e in
               param['storage_server']['nfs_server_setup_params']]
    registered = [p['pv_manifest_file_path']
                  for p in param['pv_registration_params']]
    assert registered == [f'{layout.MANIFESTS}/{f.name}'
                          for f in pv_manifests()]
    for name in registered:
        assert manifests.pv_problems(
            name, (SAMPLE / name).read_text(), exports) == []


@pytest.mark.parametrize('text, problem', [
    ('kind: [', 'is not valid YAML'),
    ('apiVersion: v1\nkind: PersistentVolume\n---\napiVersion: v1\n'
     'kind: PersistentVolume\n', 'holds 2 documents; a PV manifest holds '
     'exactly one PersistentVolume'),
    ('apiVersion: v1\nkind: Service\n', 'is a Service (v1), not a v1 '
     'PersistentVolume'),
    ('apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\n'
     'spec:\n  hostPath: {path: /x}\n',
     "PersistentVolume 'pv' has no NFS source"),
    ('apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: Big}\n'
     'spec:\n  nfs: {server: 0.0.0.0, path: /volume/nfs/pv1}\n',
     "metadata.name must be a DNS-1123 subdomain, got 'Big'"),
    ('apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\n'
     'spec:\n  nfs: {server: 0.0.0.0, path: volume/nfs/pv1}\n',
     "spec.nfs.path of PersistentVolume 'pv' must be an absolute path"),
    ('apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\n'
     'spec:\n  nfs: {server: 0.0.0.0, path: /volume/nfs/other}\n',
     "spec.nfs.path '/volume/nfs/other' is not exported by the storage "
     'server (its nfs_server_setup_params export /volume/nfs/pv1)'),
])
def test_pv_problems(text, problem):
    [found] = manifests.pv_problems('pv.yaml', text, ['/volume/nfs/pv1'])
    assert problem in found


def test_pv_below_an_export_is_fine():
    text = ('apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: '
            'pv.a-1}\nspec:\n  nfs: {server: 0.0.0.0, path: '
            '/volume/nfs/a/b}\n')
    assert manifests.pv_problems('pv.yaml', text, ['/volume/nfs']) == []
    assert manifests.pv_problems('pv.yaml', text, ['/volume/nf']) != []


# -- the user data ----------------------------------------------------------

def test_user_data_defines_the_class_tacker_calls():
    tree = ast.parse((SAMPLE / 'UserData/k8s_cluster_user_data.py')
                     .read_text())
    [cls] = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert cls.name == 'KubernetesClusterUserData'
    methods = {n.name: n for n in cls.body
               if isinstance(n, ast.FunctionDef)}
    # Tacker 16 calls instantiate positionally at instantiate (and whole
    # heal), heal with these seven arguments at a VNFC heal, scale with
    # seven when it undoes a scale-out (scale_in_reverse).
    assert {name: [a.arg for a in m.args.args]
            for name, m in methods.items()} == {
        'instantiate': ['base_hot_dict', 'vnfd_dict', 'inst_req_info',
                        'grant_info'],
        'heal': ['base_hot_dict', 'vnfd_dict', 'heal_vnf_request',
                 'vnf_instance', 'inst_vnf_info', 'param',
                 'vnfc_resource_info'],
        'scale': ['base_hot_dict', 'vnfd_dict', 'scale_vnf_request',
                  'vnf_instance', 'inst_vnf_info', 'param', 'res_num']}
    for method in methods.values():
        assert [d.id for d in method.decorator_list] == ['staticmethod']


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


# -- the user data: storage server and volume sizes -------------------------

def additional(params: dict) -> SimpleNamespace:
    return SimpleNamespace(additional_params=params)


@pytest.mark.parametrize('params, wanted', [
    ({}, False),
    ({'k8s_cluster_installation_param': {'script_path': 'x'}}, False),
    ({'k8s_cluster_installation_param': {'storage_server': None}}, False),
    ({'k8s_cluster_installation_param': {'storage_server': {}}}, True),
    ({'k8s_cluster_installation_param': {
        'storage_server': {'ssh_cp_name': STORAGE_CP}}}, True),
    ({'k8sClusterInstallationParam': {
        'storageServer': {'sshCpName': STORAGE_CP}}}, True),
])
def test_user_data_sees_the_storage_server(user_data, params, wanted):
    top = top_hot('simple')
    assert user_data._storage_server_wanted(top, additional(params)) is \
        wanted
    # Flavours without the HOT parameter: no decision to take.
    assert user_data._storage_server_wanted(top_hot('complex'),
                                            additional(params)) is None


def test_user_data_needs_no_storage_network_without_storage(user_data):
    top = top_hot('simple')
    assert user_data._storage_only_cps(top, False) == {STORAGE_CP}
    assert user_data._storage_only_cps(top, True) == set()
    assert user_data._storage_only_cps(top_hot('complex'), None) == set()

    def cps():
        return {'nfv': {'CP': {'masterNode_CP1': {}, 'workerNode_CP2': {},
                               STORAGE_CP: {}}}}
    params = cps()
    networks = user_data._networks(
        ext_links('masterNode_CP1', 'workerNode_CP2'), params,
        optional={STORAGE_CP})
    assert set(params['nfv']['CP']) == {'masterNode_CP1', 'workerNode_CP2'}
    assert STORAGE_CP not in networks
    # Connected anyway: kept (Heat does not create the port).
    params = cps()
    user_data._networks(ext_links('masterNode_CP1', 'workerNode_CP2',
                                  STORAGE_CP), params, optional={STORAGE_CP})
    assert STORAGE_CP in params['nfv']['CP']
    # With a storage server the port must be connected.
    with pytest.raises(ValueError, match=f'ports {STORAGE_CP} '):
        user_data._networks(ext_links('masterNode_CP1', 'workerNode_CP2'),
                            cps())


@pytest.mark.parametrize('size, gib', [
    ('10 GB', 10), ('10 GiB', 10), ('1.5 GiB', 2), ('100 MB', 1),
    ('1 TB', 932), ('2048 MiB', 2), ('0 B', 1)])
def test_user_data_volume_size_in_gib(user_data, size, gib):
    assert user_data._gib(size, 'vol') == gib


@pytest.mark.parametrize('size', [None, '10', 'ten GB', '10 parsecs'])
def test_user_data_volume_size_must_have_a_unit(user_data, size):
    with pytest.raises(ValueError, match='gives vol no virtual_block_'):
        user_data._gib(size, 'vol')


def test_user_data_sets_the_volume_size_from_the_vnfd(user_data):
    params = {'nfv': {'VDU': {
        STORAGE_VOLUME: {'flavor': None, 'image': None},
        STORAGE.server: {'flavor': 'm1.small', 'image': 'img'}}}}
    user_data._set_volume_sizes(params, flavour_vnfd('simple'))
    assert params['nfv']['VDU'] == {
        STORAGE_VOLUME: {'size': 10},
        STORAGE.server: {'flavor': 'm1.small', 'image': 'img'}}


@pytest.mark.parametrize('storage', [True, False])
def test_user_data_decides_storage_server_enabled(user_data, monkeypatch,
                                                  storage):
    """instantiate with Tacker's helpers replaced by the simplest ones:
    the HOT parameter follows the request, not a stray additionalParams
    value of the same name."""
    utils = user_data.utils
    monkeypatch.setattr(utils, 'create_initial_param_dict', lambda hot: {
        'nfv': {'VDU': {}, 'CP': {'masterNode_CP1': {}, STORAGE_CP: {}}}},
        raising=False)
    monkeypatch.setattr(utils, 'create_final_param_dict',
                        lambda params, *_: params, raising=False)
    monkeypatch.setattr(utils, 'create_vdu_flavor_capability_name_dict',
                        lambda vnfd: {}, raising=False)
    monkeypatch.setattr(utils, 'create_vdu_image_dict', lambda grant: {},
                        raising=False)
    monkeypatch.setattr(utils, 'create_desired_capacity_dict',
                        lambda *_: {}, raising=False)
    monkeypatch.setattr(utils, 'get_diff_base_hot_param_from_api',
                        lambda hot, req: {'storage_server_enabled': True,
                                          'other': 1}, raising=False)
    param = {'script_path': 'x'}
    if storage:
        param['storage_server'] = {'ssh_cp_name': STORAGE_CP}
    request = SimpleNamespace(
        additional_params={'k8s_cluster_installation_param': param},
        ext_virtual_links=ext_links(
            'masterNode_CP1', *([STORAGE_CP] if storage else []))
        .ext_virtual_links)
    params = user_data.KubernetesClusterUserData.instantiate(
        {'heat_template': top_hot('simple')}, flavour_vnfd('simple'),
        request, None)
    assert params['storage_server_enabled'] is storage
    assert params['other'] == 1
    assert (STORAGE_CP in params['nfv']['CP']) is storage


def test_user_data_keeps_a_port_an_unconditional_resource_uses(user_data):
    top = copy.deepcopy(top_hot('simple'))
    top['resources']['extra_port'] = {
        'type': 'OS::Neutron::Port',
        'properties': {'network': {'get_param': [
            'nfv', 'CP', STORAGE_CP, 'network']}}}
    assert user_data._storage_only_cps(top, False) == set()


def test_no_top_template_says_the_word_tacker_takes_for_a_dict():
    """Tacker 16's v1 HeatClient.create checks ``'password' in
    fields['template']`` on the template *text* and then indexes that
    text like a dict: a top-level BaseHOT with the word anywhere, even in
    a description, fails every instantiate ("string indices must be
    integers")."""
    tops = sorted(SAMPLE.glob('BaseHOT/*/*.yaml'))
    assert len(tops) == 3
    for path in tops:
        assert 'password' not in path.read_text(encoding='utf-8'), path

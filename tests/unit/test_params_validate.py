"""Validation of InstantiateVnfRequest bodies and their additionalParams."""
from __future__ import annotations

import copy
import json
import re
import socket
from pathlib import Path

import paramiko
import pytest

from kubernetes_mgmt import redact
from kubernetes_mgmt.errors import ValidationError
from kubernetes_mgmt.params import cluster_params as model
from kubernetes_mgmt.params.validate import (
    parse_cluster_params,
    parse_instantiate_request,
)

DATA = Path(__file__).resolve().parent.parent / 'data' / 'requests'
SAMPLES = ('simple', 'complex', 'podaffinity', 'storage')
DELETE = object()

AP = 'additionalParams'
K = f'{AP}.k8s_cluster_installation_param'
M = f'{K}.master_node'
W = f'{K}.worker_node'
P = f'{K}.proxy'
S = f'{K}.storage_server'
VOL = f'{S}.cinder_volume_setup_params'
NFS = f'{S}.nfs_server_setup_params'
PV = f'{K}.pv_registration_params'




def load(name: str) -> dict:
    path = DATA / f'{name}_kubernetes_param_file.json'
    return json.loads(path.read_text(encoding='utf-8'))


def _tokens(path: str) -> list[str | int]:
    return [int(index) if index else key for key, index
            in re.findall(r'([^.\[\]]+)|\[(\d+)\]', path)]


def mutate(body: dict, path: str, value: object) -> dict:
    """Set (or with DELETE remove) the field at a dotted JSON path."""
    *parents, last = _tokens(path)
    node = body
    for part in parents:
        node = node[part]
    if value is DELETE:
        del node[last]
    else:
        node[last] = value
    return body


def problems_of(body: dict) -> list:
    with pytest.raises(ValidationError) as info:
        parse_instantiate_request(body)
    return info.value.problems


# -- the user guide samples --------------------------------------------------

@pytest.mark.parametrize('name', SAMPLES)
def test_user_guide_samples_are_valid(name):
    params = parse_instantiate_request(load(name))
    assert isinstance(params, model.ClusterParams)
    assert params.script_path == 'Scripts/install_k8s_cluster.sh'
    assert params.master.aspect_id == 'master_instance'
    assert params.worker == model.NodeGroupParams(
        ssh_cp_name='workerNode_CP2', nic_cp_name='workerNode_CP2',
        username='ubuntu', password='ubuntu', aspect_id='worker_instance')
    assert params.proxy == model.ProxyParams(
        http_proxy='http://user1:password1@host1:port1',
        https_proxy='https://user2:password2@host2:port2',
        no_proxy='192.168.246.0/24,10.0.0.1',
        k8s_node_cidr='10.10.0.0/24')


def test_simple_sample_master():
    params = parse_instantiate_request(load('simple'))
    assert params.vim_name == 'kubernetes_vim'
    # Host bits set in the guide's pod CIDR: accepted and kept as given.
    assert params.master == model.MasterParams(
        ssh_cp_name='masterNode_CP1', nic_cp_name='masterNode_CP1',
        username='ubuntu', password='ubuntu', aspect_id='master_instance',
        cluster_cp_name='masterNode_CP1', pod_cidr='192.168.3.0/16',
        cluster_cidr='10.199.187.0/24', cluster_fip_name=None)
    assert params.storage_server is None
    assert params.pv_registrations == ()


@pytest.mark.parametrize('name, vim, pod', [
    ('complex', 'kubernetes_vim_complex', '192.168.3.0/16'),
    ('podaffinity', 'kubernetes_vim_podaffinity', '192.168.0.0/16'),
])
def test_ha_samples_use_the_vip_port(name, vim, pod):
    params = parse_instantiate_request(load(name))
    assert params.vim_name == vim
    assert params.master.cluster_cp_name == 'vip_CP'
    assert params.master.pod_cidr == pod
    assert params.master.cluster_cidr == '10.199.187.0/24'


def test_storage_sample():
    params = parse_instantiate_request(load('storage'))
    assert params.storage_server == model.StorageServerParams(
        ssh_cp_name='storage_server_CP', username='ubuntu',
        password='ubuntu',
        volumes=(model.VolumeSetup('storage_server_volume', '/volume'),),
        exports=tuple(model.NfsExport(f'/volume/nfs/pv{i}', '10.10.0.0/24')
                      for i in (1, 2, 3)))
    assert params.pv_registrations == tuple(
        model.PvRegistration(f'Files/kubernetes/nfs-pv{i}.yaml',
                             'storage_server_CP') for i in (1, 2, 3))


def test_parse_cluster_params_takes_additional_params():
    body = load('storage')
    assert parse_cluster_params(body[AP]) == \
        parse_instantiate_request(body)


def test_defaults_for_cidrs_and_optional_sections():
    body = load('simple')
    for path in (f'{M}.pod_cidr', f'{M}.cluster_cidr', f'{K}.proxy',
                 f'{K}.vim_name', f'{AP}.lcm-operation-user-data',
                 f'{AP}.lcm-operation-user-data-class',
                 f'{M}.aspect_id', f'{W}.aspect_id'):
        mutate(body, path, DELETE)
    params = parse_instantiate_request(body)
    assert params.master.pod_cidr == model.DEFAULT_POD_CIDR
    assert params.master.cluster_cidr == model.DEFAULT_SERVICE_CIDR
    assert params.proxy is None
    assert params.vim_name is None
    assert params.master.aspect_id is None


def test_other_additional_params_and_sol003_keys_are_allowed():
    body = load('simple')
    body[AP]['namespace'] = 'cnf-ns'
    body['instantiationLevelId'] = 'instantiation_level_1'
    body['extManagedVirtualLinks'] = []
    body['localizationLanguage'] = 'en'
    parse_instantiate_request(body)
    # Tacker's v2 API: a map of VIMs, and SOL003 v3's keys.
    body['vimConnectionInfo'] = {'vim1': {'vimType': 'openstack'}}
    body['vnfConfigurableProperties'] = {'isAutohealEnabled': True}
    body['extensions'] = {}
    parse_instantiate_request(body, 'v2')


@pytest.mark.parametrize('api, vims, shape', [
    ('v1', {'vim1': {'vimType': 'openstack'}}, 'a list'),
    ('v2', [{'id': 'vim1', 'vimType': 'openstack'}], 'an object')])
def test_vim_connection_info_has_the_shape_of_its_api(api, vims, shape):
    body = load('simple')
    body['vimConnectionInfo'] = vims
    with pytest.raises(ValidationError) as caught:
        parse_instantiate_request(body, api)
    [problem] = caught.value.problems
    assert problem.path == 'vimConnectionInfo'
    assert problem.message.startswith(f'must be {shape} (VIM connection '
                                      'information, ')


@pytest.mark.parametrize('path, value', [
    (f'{M}.cluster_cidr', 'fd00:10:96::/112'),
    (f'{M}.pod_cidr', 'fd00:10:244::/56'),
    (f'{NFS}[0].export_to', '10.10.0.5'),
    (f'{NFS}[0].export_to', 'fd00::/64'),
    (f'{P}.no_proxy', 'localhost,.svc,.cluster.local,*.example.com,::1'),
    (f'{P}.http_proxy', 'http://proxy.example.com:3128'),
    (f'{P}.http_proxy', 'http://[fd00::1]:3128/'),
    (f'{P}.https_proxy', 'http://u:p%40ss!word@10.0.0.1:8080'),
    (f'{M}.password', 'p a$s`w;o"r\'d|&'),
    (f'{M}.username', 'Ubuntu_admin-1'),
    (f'{K}.script_path', './Scripts/install_k8s_cluster.sh'),
    (f'{AP}.lcm-operation-user-data', 'UserData/k8s_cluster_user_data.py'),
    (f'{M}.cluster_fip_name', 'masterNode_FIP1'),
    (f'{K}.vim_name', 'Kubernetes VIM (lab) #1'),
    (f'{S}.nfs_server_setup_params[0].export_dir', '/volume/a-1.b+c@d'),
])
def test_unusual_but_valid_values(path, value):
    parse_instantiate_request(mutate(load('storage'), path, value))


# -- malformed requests ------------------------------------------------------

# (case id, path to change, new value, path expected in the problems,
#  fragment of its message)
MALFORMED = [
    ('lb-port-6443', f'{M}.lb_port', 6443, f'{M}.lb_port',
     'must not be 6443'),
    ('lb-port-string', f'{M}.lb_port', '16443', f'{M}.lb_port',
     'must be an integer'),
    ('vrid-zero', f'{M}.virtual_router_id', 0, f'{M}.virtual_router_id',
     'must be between 1 and 255'),
    ('k8s-version-v-prefix', f'{K}.kubernetes_version', 'v1.37',
     f'{K}.kubernetes_version', 'has the wrong format'),
    ('pod-cidr-garbage', f'{M}.pod_cidr', 'abc', f'{M}.pod_cidr',
     "'abc' is not a valid CIDR"),
    ('service-cidr-prefix', f'{M}.cluster_cidr', '10.0.0.0/33',
     f'{M}.cluster_cidr', 'not a valid CIDR'),
    ('pod-cidr-no-prefix', f'{M}.pod_cidr', '10.0.0.1', f'{M}.pod_cidr',
     'not a valid CIDR'),
    ('pod-cidr-netmask', f'{M}.pod_cidr', '10.0.0.0/255.0.0.0',
     f'{M}.pod_cidr', 'not a valid CIDR'),
    ('pod-service-overlap', f'{M}.pod_cidr', '10.199.0.0/16',
     f'{M}.cluster_cidr', "overlaps pod CIDR '10.199.0.0/16'"),
    ('node-cidr-overlaps-pods', f'{P}.k8s_node_cidr', '192.168.10.0/24',
     f'{P}.k8s_node_cidr', 'overlaps pod CIDR'),
    ('node-cidr-garbage', f'{P}.k8s_node_cidr', '10.10.0/24x',
     f'{P}.k8s_node_cidr', 'not a valid CIDR'),
    ('pod-cidr-typo-key', f'{M}.pod_cidr', DELETE, f'{M}.pod_cdir',
     "unknown key; did you mean 'pod_cidr'?"),
    ('no-script-path', f'{K}.script_path', DELETE, f'{K}.script_path',
     'is required'),
    ('no-master', f'{K}.master_node', DELETE, f'{K}.master_node',
     'is required'),
    ('empty-worker-password', f'{W}.password', '', f'{W}.password',
     'must be a non-empty string'),
    ('empty-storage-password', f'{S}.password', '', f'{S}.password',
     'must be a non-empty string'),
    ('username-number', f'{M}.username', 5, f'{M}.username',
     'must be a string'),
    ('username-space', f'{M}.username', 'ubu ntu', f'{M}.username',
     'shell metacharacters'),
    ('username-injection', f'{W}.username', 'root;reboot',
     f'{W}.username', 'shell metacharacters'),
    ('username-leading-digit', f'{S}.username', '1ubuntu',
     f'{S}.username', 'not a valid user name'),
    ('username-too-long', f'{M}.username', 'u' * 40, f'{M}.username',
     'not a valid user name'),
    ('ssh-cp-space', f'{M}.ssh_cp_name', 'masterNode CP1',
     f'{M}.ssh_cp_name', 'shell metacharacters'),
    ('nic-cp-empty', f'{W}.nic_cp_name', '', f'{W}.nic_cp_name',
     'non-empty string'),
    ('nic-cp-slash', f'{M}.nic_cp_name', 'a/b', f'{M}.nic_cp_name',
     'not a valid resource name'),
    ('no-cluster-cp', f'{M}.cluster_cp_name', DELETE,
     f'{M}.cluster_cp_name', 'is required'),
    ('empty-fip-name', f'{M}.cluster_fip_name', '',
     f'{M}.cluster_fip_name', 'non-empty string'),
    ('master-aspect-missing-with-user-data', f'{M}.aspect_id', DELETE,
     f'{M}.aspect_id', "required when additionalParams has "
     "'lcm-operation-user-data'"),
    ('worker-aspect-missing-with-user-data', f'{W}.aspect_id', DELETE,
     f'{W}.aspect_id', 'required when'),
    ('aspect-id-bad', f'{W}.aspect_id', 'worker$instance',
     f'{W}.aspect_id', "'$'"),
    ('user-data-class-missing', f'{AP}.lcm-operation-user-data-class',
     DELETE, f'{AP}.lcm-operation-user-data-class',
     "is required when 'lcm-operation-user-data' is given"),
    ('user-data-escapes-package', f'{AP}.lcm-operation-user-data',
     '../UserData/x.py', f'{AP}.lcm-operation-user-data', "'..'"),
    ('user-data-absolute', f'{AP}.lcm-operation-user-data',
     '/etc/x.py', f'{AP}.lcm-operation-user-data', 'relative'),
    ('user-data-class-bad', f'{AP}.lcm-operation-user-data-class',
     'Kubernetes-Cluster', f'{AP}.lcm-operation-user-data-class',
     'not a valid Python class name'),
    ('script-dotdot', f'{K}.script_path', 'Scripts/../../etc/passwd',
     f'{K}.script_path', "'..'"),
    ('script-absolute', f'{K}.script_path', '/opt/install.sh',
     f'{K}.script_path', 'relative to the VNF package'),
    ('script-backslash', f'{K}.script_path', 'Scripts\\install.sh',
     f'{K}.script_path', "separator"),
    ('script-nul', f'{K}.script_path', 'Scripts/install.sh\x00',
     f'{K}.script_path', 'control characters'),
    ('script-injection', f'{K}.script_path', 'Scripts/$(reboot).sh',
     f'{K}.script_path', 'shell metacharacters'),
    ('script-double-slash', f'{K}.script_path', 'Scripts//install.sh',
     f'{K}.script_path', 'not a normalized path'),
    ('http-proxy-no-scheme', f'{P}.http_proxy', 'host1:8080',
     f'{P}.http_proxy', 'must be a URL with a scheme and a host'),
    ('https-proxy-no-host', f'{P}.https_proxy', 'http://',
     f'{P}.https_proxy', 'valid proxy host'),
    ('http-proxy-ftp', f'{P}.http_proxy', 'ftp://host1:21',
     f'{P}.http_proxy', 'schemes'),
    ('http-proxy-space', f'{P}.http_proxy', 'http://host 1:80',
     f'{P}.http_proxy', 'not allowed in a URL'),
    ('no-proxy-space', f'{P}.no_proxy', '10.0.0.1, example.com',
     f'{P}.no_proxy', "invalid entries ' example.com'"),
    ('no-proxy-injection', f'{P}.no_proxy', '10.0.0.1;reboot',
     f'{P}.no_proxy', 'invalid entries'),
    ('no-proxy-empty-entry', f'{P}.no_proxy', '10.0.0.1,,a',
     f'{P}.no_proxy', 'empty entries'),
    ('proxy-not-object', f'{K}.proxy', 'http://host1:80', f'{K}.proxy',
     'must be an object'),
    ('proxy-unknown-key', f'{P}.httpProxy', 'http://host1:80',
     f'{P}.httpProxy', "did you mean 'http_proxy'?"),
    ('no-volumes', f'{S}.cinder_volume_setup_params', [],
     f'{S}.cinder_volume_setup_params', 'at least 1 entry'),
    ('mount-relative', f'{VOL}[0].mount_to', 'volume',
     f'{VOL}[0].mount_to', 'must be an absolute path'),
    ('mount-root', f'{VOL}[0].mount_to', '/', f'{VOL}[0].mount_to',
     "must not be '/'"),
    ('mount-dotdot', f'{VOL}[0].mount_to', '/volume/../etc',
     f'{VOL}[0].mount_to', "'..'"),
    ('volume-id-injection', f'{VOL}[0].volume_resource_id', 'vol;1',
     f'{VOL}[0].volume_resource_id', 'shell metacharacters'),
    ('export-dir-double-slash', f'{NFS}[1].export_dir', '/volume//nfs',
     f'{NFS}[1].export_dir', 'not a normalized path'),
    ('export-dir-trailing-slash', f'{NFS}[2].export_dir', '/volume/nfs/',
     f'{NFS}[2].export_dir', 'not a normalized path'),
    ('export-to-bad', f'{NFS}[1].export_to', '10.10.0.0/40',
     f'{NFS}[1].export_to', 'not a valid IP network'),
    ('export-missing', f'{NFS}[0].export_to', DELETE,
     f'{NFS}[0].export_to', 'is required'),
    ('nfs-typo-key', f'{S}.nfs_server_setup_param', [],
     f'{S}.nfs_server_setup_param',
     "did you mean 'nfs_server_setup_params'?"),
    ('pv-path-absolute', f'{PV}[0].pv_manifest_file_path', '/etc/pv.yaml',
     f'{PV}[0].pv_manifest_file_path', 'relative to the VNF package'),
    ('pv-cp-missing', f'{PV}[2].nfs_server_cp', DELETE,
     f'{PV}[2].nfs_server_cp', 'is required'),
    ('pv-not-list', f'{PV}', {'pv_manifest_file_path': 'a.yaml'}, PV,
     'must be a list'),
    ('pv-entry-not-object', f'{PV}[1]', 'Files/pv.yaml', f'{PV}[1]',
     'must be an object'),
    ('vim-name-newline', f'{K}.vim_name', 'vim\nname', f'{K}.vim_name',
     'control characters'),
    ('vim-name-too-long', f'{K}.vim_name', 'v' * 256, f'{K}.vim_name',
     'at most 255 characters'),
    ('master-password-newline', f'{M}.password', 'pass\nword',
     f'{M}.password', 'control characters'),
    ('worker-unknown-key', f'{W}.cluster_cidr', '10.0.0.0/16',
     f'{W}.cluster_cidr', 'unknown key'),
    ('no-cluster-param', f'{K}', DELETE, K, 'is required'),
    ('cluster-param-not-object', f'{K}', [], K, 'must be an object'),
    ('additional-params-not-object', AP, 'x', AP, 'must be an object'),
    ('no-additional-params', AP, DELETE, AP, 'is required'),
    ('no-flavour', 'flavourId', DELETE, 'flavourId', 'is required'),
    ('flavour-not-string', 'flavourId', 1, 'flavourId', 'must be a string'),
    ('top-level-typo', 'flavorId', 'simple', 'flavorId',
     "did you mean 'flavourId'?"),
    ('ext-virtual-links-not-list', 'extVirtualLinks', {},
     'extVirtualLinks', 'must be a list'),
]


def _apply(path: str, value: object) -> dict:
    body = load('storage')
    if path.endswith('.pod_cidr') and value is DELETE:
        # A typo rather than a removal: keep the value under a wrong key.
        body[AP]['k8s_cluster_installation_param']['master_node'][
            'pod_cdir'] = '192.168.3.0/16'
    return mutate(body, path, value)


@pytest.mark.parametrize(
    'path, value, expected_path, fragment',
    [case[1:] for case in MALFORMED], ids=[case[0] for case in MALFORMED])
def test_malformed_request_names_the_field(path, value, expected_path,
                                           fragment):
    problems = problems_of(_apply(path, value))
    at_path = [p.message for p in problems if p.path == expected_path]
    assert at_path, f'no problem at {expected_path}: {problems}'
    assert any(fragment in message for message in at_path), at_path


def test_there_are_many_distinct_malformed_cases():
    assert len({case[0] for case in MALFORMED}) == len(MALFORMED) >= 35


def test_every_problem_is_reported_at_once():
    body = load('storage')
    mutate(body, f'{M}.pod_cidr', 'abc')
    mutate(body, f'{W}.username', 'bad user')
    mutate(body, f'{P}.http_proxy', 'nope')
    mutate(body, f'{NFS}[1].export_dir', 'relative')
    mutate(body, f'{PV}[2].pv_manifest_file_path', '../x.yaml')
    mutate(body, f'{AP}.lcm-operation-user-data-class', DELETE)
    mutate(body, 'flavourId', DELETE)
    paths = [p.path for p in problems_of(body)]
    assert sorted(paths) == sorted([
        f'{M}.pod_cidr', f'{W}.username', f'{P}.http_proxy',
        f'{NFS}[1].export_dir', f'{PV}[2].pv_manifest_file_path',
        f'{AP}.lcm-operation-user-data-class', 'flavourId'])
    assert len(paths) == len(set(paths))


def test_problems_are_sorted_with_numeric_indices():
    body = load('storage')
    exports = body[AP]['k8s_cluster_installation_param'][
        'storage_server']['nfs_server_setup_params']
    exports[:] = [{'export_dir': 'x', 'export_to': '10.0.0.0/8'}] * 11
    paths = [p.path for p in problems_of(body)]
    assert paths == [f'{NFS}[{i}].export_dir' for i in range(11)]


def test_unknown_key_without_close_match_lists_the_valid_keys():
    body = mutate(load('simple'), f'{W}.zzz', 'x')
    (problem,) = problems_of(body)
    assert problem.path == f'{W}.zzz'
    assert problem.message.startswith('unknown key; expected one of: ')
    assert 'ssh_cp_name' in problem.message


def test_missing_required_key_points_at_the_misspelled_one():
    body = load('simple')
    params = body[AP].pop('k8s_cluster_installation_param')
    body[AP]['k8sClusterInstallationParam'] = params
    (problem,) = problems_of(body)
    assert problem.path == K
    assert "found 'k8sClusterInstallationParam' instead" in problem.message


def test_hostile_key_is_quoted_in_the_path():
    body = mutate(load('simple'), f'{W}.x', 'y')
    node = body[AP]['k8s_cluster_installation_param']['worker_node']
    node['bad\nkey'] = node.pop('x')
    (problem,) = problems_of(body)
    assert problem.path == f'{W}["bad\\nkey"]'
    assert '\n' not in str(problem)


def test_parse_cluster_params_uses_base_path():
    additional = load('simple')[AP]
    mutate(additional, 'k8s_cluster_installation_param.master_node.'
           'pod_cidr', 'abc')
    with pytest.raises(ValidationError) as info:
        parse_cluster_params(additional, base_path='req.additionalParams')
    (problem,) = info.value.problems
    assert problem.path == ('req.additionalParams.'
                            'k8s_cluster_installation_param.master_node.'
                            'pod_cidr')


def test_missing_cluster_param_in_additional_params():
    with pytest.raises(ValidationError) as info:
        parse_cluster_params({'namespace': 'x'})
    assert [p.path for p in info.value.problems] == [K]


def test_request_body_not_an_object():
    with pytest.raises(ValidationError) as info:
        parse_instantiate_request([])  # type: ignore[arg-type]
    (problem,) = info.value.problems
    assert 'must be an object' in problem.message


@pytest.mark.parametrize('overlap_path, value, blamed, fragment', [
    (f'{M}.pod_cidr', '10.96.0.0/16', f'{M}.pod_cidr',
     "overlaps the default service CIDR '10.96.0.0/12'"),
    (f'{M}.cluster_cidr', '192.168.128.0/24', f'{M}.cluster_cidr',
     "overlaps the default pod CIDR '192.168.0.0/16'"),
])
def test_overlap_with_a_default_cidr(overlap_path, value, blamed,
                                     fragment):
    body = load('simple')
    mutate(body, f'{M}.pod_cidr', DELETE)
    mutate(body, f'{M}.cluster_cidr', DELETE)
    mutate(body, overlap_path, value)
    problems = problems_of(body)
    assert [(p.path, fragment in p.message) for p in problems] == \
        [(blamed, True)]


# -- secrets -----------------------------------------------------------------

SECRETS = {f'{M}.password': 'Master-S3cret', f'{W}.password': 'Worker-S3cret',
           f'{S}.password': 'Storage-S3cret'}


def test_secrets_are_registered_on_success():
    body = load('storage')
    for path, secret in SECRETS.items():
        mutate(body, path, secret)
    mutate(body, f'{P}.http_proxy', 'http://u:Proxy-S3cret@proxy:3128')
    parse_instantiate_request(body)
    text = redact.redact(' '.join([*SECRETS.values(), 'Proxy-S3cret']))
    assert 'S3cret' not in text


@pytest.mark.parametrize('path', [
    f'{M}.password', f'{W}.password', f'{S}.password'])
def test_password_never_echoed_in_problems(path):
    secret = 'Leak-Me-Not\n'
    problems = problems_of(mutate(load('storage'), path, secret))
    assert [p.path for p in problems] == [path]
    assert 'Leak-Me-Not' not in str(ValidationError(problems))


@pytest.mark.parametrize('url', [
    'ftp://u:Leak-Me-Not@host:21', 'http://u:Leak-Me-Not@',
    'u:Leak-Me-Not@host', 'http://u:Leak Me Not@host'])
def test_proxy_url_never_echoed_in_problems(url):
    problems = problems_of(mutate(load('simple'), f'{P}.https_proxy', url))
    assert [p.path for p in problems] == [f'{P}.https_proxy']
    assert 'Leak' not in str(ValidationError(problems))


def test_password_of_wrong_type_is_not_echoed():
    problems = problems_of(mutate(load('simple'), f'{M}.password',
                                  ['Leak-Me-Not']))
    assert 'Leak-Me-Not' not in str(ValidationError(problems))


# -- robustness and isolation ----------------------------------------------

def _leaf_paths(node, at=''):
    yield at
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaf_paths(value, f'{at}.{key}' if at else key)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _leaf_paths(value, f'{at}[{index}]')


WRONG_VALUES = [None, 0, 1.5, True, [], {}, '', ' ', '\n', 'x' * 5000,
                [None], {'a': None}]


def test_any_wrong_value_anywhere_gives_problems_not_crashes():
    sample = load('storage')
    paths = [p for p in _leaf_paths(sample[AP]) if p]
    for path in paths:
        for value in WRONG_VALUES:
            body = copy.deepcopy(sample)
            mutate(body[AP], path, value)
            try:
                parse_instantiate_request(body)
            except ValidationError as exc:
                assert all(p.path.startswith(AP) for p in exc.problems)


def test_validation_opens_no_connection(monkeypatch):
    calls = []

    def record(name):
        def fake(*args, **kwargs):
            calls.append(name)
            raise AssertionError(f'{name} called during validation')
        return fake

    monkeypatch.setattr(paramiko.SSHClient, 'connect',
                        record('SSHClient.connect'))
    monkeypatch.setattr(paramiko.Transport, '__init__',
                        record('Transport.__init__'))
    monkeypatch.setattr(socket.socket, 'connect', record('socket.connect'))
    monkeypatch.setattr(socket, 'create_connection',
                        record('create_connection'))
    for _, path, value, _, _ in MALFORMED:
        with pytest.raises(ValidationError):
            parse_instantiate_request(_apply(path, value))
    for name in SAMPLES:
        parse_instantiate_request(load(name))
    assert calls == []


def test_storage_entries_given_twice_are_named():
    body = load('storage')
    param = body['additionalParams']['k8s_cluster_installation_param']
    volumes = param['storage_server']['cinder_volume_setup_params']
    volumes.append(dict(volumes[0]))
    param['pv_registration_params'].append(
        dict(param['pv_registration_params'][0]))
    problems = {p.path: p.message for p in problems_of(body)}
    assert problems[f'{VOL}[1].volume_resource_id'] == (
        "'storage_server_volume' is given twice (also at "
        'cinder_volume_setup_params[0].volume_resource_id)'.replace(
            'cinder', 'storage_server.cinder'))
    assert "'/volume' is given twice" in problems[f'{VOL}[1].mount_to']
    assert 'given twice' in problems[f'{PV}[3].pv_manifest_file_path']


def test_export_outside_every_volume_is_refused():
    body = mutate(load('storage'), f'{NFS}[1].export_dir', '/srv/nfs')
    problems = {p.path: p.message for p in problems_of(body)}
    assert list(problems) == [f'{NFS}[1].export_dir']
    assert problems[f'{NFS}[1].export_dir'].startswith(
        "'/srv/nfs' is not on a volume of cinder_volume_setup_params "
        '(mounted at /volume)')
    # The mount point itself and directories below it are fine.
    body = mutate(load('storage'), f'{NFS}[1].export_dir', '/volume')
    parse_instantiate_request(body)
    body = mutate(load('storage'), f'{NFS}[1].export_dir', '/volumex/a')
    assert [p.path for p in problems_of(body)] == [f'{NFS}[1].export_dir']


# -- NFS exports to wide networks --------------------------------------------

@pytest.mark.parametrize('network', [
    '0.0.0.0/0', '10.0.0.0/7', '10.1.2.3/0', '::/0', 'fd00::/8',
    '2001:db8::/31'])
def test_wide_nfs_export_is_refused_without_the_opt_in(network):
    body = mutate(load('storage'), f'{NFS}[1].export_to', network)
    (problem,) = problems_of(body)
    assert problem.path == f'{NFS}[1].export_to'
    assert problem.message.startswith(f"'{network}' lets any host of a /")
    assert '"allow_wide_export": true' in problem.message


@pytest.mark.parametrize('network', [
    '0.0.0.0/0', '::/0', '10.0.0.0/7'])
def test_wide_nfs_export_is_accepted_when_the_request_says_so(network):
    body = mutate(load('storage'), f'{NFS}[1].export_to', network)
    mutate(body, f'{NFS}[1].allow_wide_export', True)
    exports = parse_instantiate_request(body).storage_server.exports
    assert exports[1] == model.NfsExport('/volume/nfs/pv2', network,
                                         allow_wide_export=True)
    assert exports[0].allow_wide_export is False


@pytest.mark.parametrize('network', [
    '10.0.0.0/8', '10.10.0.0/24', '10.10.0.5', 'fd00::/32'])
def test_networks_up_to_the_limit_need_no_opt_in(network):
    parse_instantiate_request(
        mutate(load('storage'), f'{NFS}[0].export_to', network))


@pytest.mark.parametrize('value', ['true', 1, None])
def test_wide_export_opt_in_must_be_a_boolean(value):
    body = mutate(load('storage'), f'{NFS}[0].export_to', '0.0.0.0/0')
    mutate(body, f'{NFS}[0].allow_wide_export', value)
    problems = {p.path: p.message for p in problems_of(body)}
    assert problems[f'{NFS}[0].allow_wide_export'].startswith(
        'must be a boolean')
    # Still refused: only a real true opts in.
    assert 'allow_wide_export' in problems[f'{NFS}[0].export_to']


# -- sizes -----------------------------------------------------------------

MEGABYTE = 'A' * (1 << 20)


@pytest.mark.parametrize('path, limit', [
    (f'{M}.password', 512), (f'{W}.password', 512), (f'{S}.password', 512),
    (f'{W}.username', 255), (f'{M}.ssh_cp_name', 255),
    (f'{K}.script_path', 1024), (f'{NFS}[0].export_dir', 1024),
    (f'{NFS}[0].export_to', 64), (f'{M}.pod_cidr', 64),
    (f'{P}.http_proxy', 2048), (f'{P}.no_proxy', 8192),
    (f'{PV}[0].pv_manifest_file_path', 1024), ('flavourId', 255),
])
def test_a_megabyte_value_is_refused_with_its_path(path, limit):
    problems = problems_of(mutate(load('storage'), path, MEGABYTE))
    assert [(p.path, p.message) for p in problems] == [
        (path, f'must be at most {limit} characters long')]
    assert 'AAAA' not in str(ValidationError(problems))


def test_values_at_the_limit_are_accepted():
    body = load('storage')
    mutate(body, f'{M}.password', 'p' * 512)
    mutate(body, f'{NFS}[0].export_dir', '/volume/' + 'd' * 1015)
    params = parse_instantiate_request(body)
    assert len(params.master.password) == 512


@pytest.mark.parametrize('path, count', [
    (f'{NFS}', 257), (f'{VOL}', 257), (f'{PV}', 257),
    ('extVirtualLinks', 257)])
def test_absurdly_long_lists_are_refused(path, count):
    body = load('storage')
    *_, last = path.split('.')
    entries = {
        'nfs_server_setup_params': {'export_dir': '/volume/x',
                                    'export_to': '10.10.0.0/24'},
        'cinder_volume_setup_params': {'volume_resource_id': 'v',
                                       'mount_to': '/volume'},
        'pv_registration_params': {'pv_manifest_file_path': 'Files/a.yaml',
                                   'nfs_server_cp': 'storage_server_CP'},
        'extVirtualLinks': {}}
    mutate(body, path, [entries[last]] * count)
    problems = {p.path: p.message for p in problems_of(body)}
    assert problems[path] == 'must have at most 256 entries'


def _unbounded(node, at='schema'):
    """Where a schema allows a string or a list of any size."""
    if isinstance(node, dict):
        types = node.get('type')
        types = [types] if isinstance(types, str) else types or []
        if 'string' in types and 'maxLength' not in node \
                and 'enum' not in node:
            yield at
        if 'array' in types and 'maxItems' not in node:
            yield at
        for key, value in node.items():
            yield from _unbounded(value, f'{at}.{key}')
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _unbounded(value, f'{at}[{index}]')


def test_every_string_and_list_of_a_request_is_bounded():
    from kubernetes_mgmt.params import lcm_requests, schema
    for each in (schema.ADDITIONAL_PARAMS, schema.INSTANTIATE_REQUEST,
                 schema.INSTANTIATE_REQUEST_V2, lcm_requests.SCALE_REQUEST,
                 lcm_requests.HEAL_REQUEST, lcm_requests.TERMINATE_REQUEST):
        assert list(_unbounded(each)) == [], each['description']

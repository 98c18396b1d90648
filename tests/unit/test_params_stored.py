"""Reading additionalParams back from a VNF instance (camelCase or not)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubernetes_mgmt.errors import ValidationError
from kubernetes_mgmt.params.casing import snake_key, snake_keys
from kubernetes_mgmt.params.validate import (
    parse_instantiate_request,
    read_stored_params,
)

DATA = Path(__file__).resolve().parent.parent / 'data' / 'requests'




def load(name: str) -> dict:
    path = DATA / f'{name}_kubernetes_param_file.json'
    return json.loads(path.read_text(encoding='utf-8'))


def _camel(key: str) -> str:
    head, *rest = key.split('_')
    return head + ''.join(word.capitalize() for word in rest)


def camel_keys(value):
    """What older Tacker releases stored: every snake_case key camelCase."""
    if isinstance(value, dict):
        return {_camel(k): camel_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [camel_keys(v) for v in value]
    return value


@pytest.mark.parametrize('camel, snake', [
    ('k8sClusterInstallationParam', 'k8s_cluster_installation_param'),
    ('masterNode', 'master_node'), ('sshCpName', 'ssh_cp_name'),
    ('podCidr', 'pod_cidr'), ('clusterFipName', 'cluster_fip_name'),
    ('cinderVolumeSetupParams', 'cinder_volume_setup_params'),
    ('k8sNodeCidr', 'k8s_node_cidr'), ('httpProxy', 'http_proxy'),
    ('pvManifestFilePath', 'pv_manifest_file_path'),
    ('nfsServerCp', 'nfs_server_cp'), ('HTTPProxy', 'http_proxy'),
    ('lcm-operation-user-data', 'lcm-operation-user-data'),
    ('pod_cidr', 'pod_cidr'),
])
def test_snake_key(camel, snake):
    assert snake_key(camel) == snake


@pytest.mark.parametrize('name', ['simple', 'complex', 'podaffinity',
                                  'storage'])
def test_camel_case_stored_params_read_back_equal(name):
    body = load(name)
    stored = camel_keys(body['additionalParams'])
    assert 'k8sClusterInstallationParam' in stored
    assert read_stored_params(stored) == parse_instantiate_request(body)


def test_snake_case_stored_params_read_back_equal():
    body = load('storage')
    assert read_stored_params(body['additionalParams']) == \
        parse_instantiate_request(body)


def test_values_are_not_converted():
    stored = camel_keys(load('simple')['additionalParams'])
    params = read_stored_params(stored)
    assert params.master.ssh_cp_name == 'masterNode_CP1'
    assert params.worker.password == 'ubuntu'


def test_stored_params_are_validated_with_snake_case_paths():
    stored = camel_keys(load('simple')['additionalParams'])
    stored['k8sClusterInstallationParam']['masterNode']['podCidr'] = 'abc'
    with pytest.raises(ValidationError) as info:
        read_stored_params(stored)
    assert [p.path for p in info.value.problems] == [
        'additionalParams.k8s_cluster_installation_param.master_node.'
        'pod_cidr']


def test_both_spellings_of_a_key_are_a_problem():
    stored = load('simple')['additionalParams']
    master = stored['k8s_cluster_installation_param']['master_node']
    master['podCidr'] = '10.244.0.0/16'
    with pytest.raises(ValidationError) as info:
        read_stored_params(stored)
    (problem,) = info.value.problems
    assert problem.path.endswith('master_node.pod_cidr')
    assert 'camelCase and in snake_case' in problem.message


def test_clash_outside_our_parameters_is_ignored():
    stored = load('simple')['additionalParams']
    stored['otherKey'] = 1
    stored['other_key'] = 2
    read_stored_params(stored)


def test_snake_keys_keeps_the_snake_spelling():
    converted, clashes = snake_keys({'podCidr': 'a', 'pod_cidr': 'b',
                                     'x': [{'aB': 1}]})
    assert converted == {'pod_cidr': 'b', 'x': [{'a_b': 1}]}
    assert clashes == [('pod_cidr',)]
    converted, _ = snake_keys({'pod_cidr': 'b', 'podCidr': 'a'})
    assert converted == {'pod_cidr': 'b'}


def test_stored_wide_export_without_opt_in_is_still_read():
    """An instance instantiated before the opt-in existed keeps working:
    its stored request is not refused for the export it was built
    with."""
    additional = load('storage')['additionalParams']
    export = additional['k8s_cluster_installation_param'][
        'storage_server']['nfs_server_setup_params'][0]
    export['export_to'] = '0.0.0.0/0'
    params = read_stored_params(additional)
    assert params.storage_server.exports[0].export_to == '0.0.0.0/0'
    with pytest.raises(ValidationError, match='allow_wide_export'):
        parse_instantiate_request(load('storage') | {
            'additionalParams': additional})

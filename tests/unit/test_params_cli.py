"""``kubernetes-mgmt validate-request FILE``."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubernetes_mgmt.cli import main

DATA = Path(__file__).resolve().parent.parent / 'data' / 'requests'
K = 'additionalParams.k8s_cluster_installation_param'




def sample(name: str) -> dict:
    path = DATA / f'{name}_kubernetes_param_file.json'
    return json.loads(path.read_text(encoding='utf-8'))


def write(tmp_path: Path, content: str | dict) -> str:
    path = tmp_path / 'request.json'
    if isinstance(content, dict):
        content = json.dumps(content, indent=4)
    path.write_text(content, encoding='utf-8')
    return str(path)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(['validate-request', *argv])
    out, err = capsys.readouterr()
    assert 'Traceback' not in out + err
    return status, out, err


@pytest.mark.parametrize('name', ['simple', 'complex', 'podaffinity',
                                  'storage'])
def test_samples_are_valid(capsys, name):
    status, out, err = run(
        capsys, str(DATA / f'{name}_kubernetes_param_file.json'))
    assert (status, err) == (0, '')
    assert f'flavour:         {name if name != "storage" else "simple"}' \
        in out


def test_summary_content_and_no_secrets(capsys, tmp_path):
    body = sample('storage')
    param = body['additionalParams']['k8s_cluster_installation_param']
    param['master_node']['password'] = 'Cli-Master-Secret'
    param['worker_node']['password'] = 'Cli-Worker-Secret'
    param['storage_server']['password'] = 'Cli-Storage-Secret'
    param['proxy']['http_proxy'] = 'http://u:Cli-Proxy-Secret@proxy:3128'
    status, out, _ = run(capsys, write(tmp_path, body))
    assert status == 0
    assert 'Secret' not in out
    for expected in ('VIM name:        kubernetes_vim',
                     'master_instance (ssh CP masterNode_CP1',
                     'worker_instance (ssh CP workerNode_CP2',
                     'pod CIDR:        192.168.3.0/16',
                     'service CIDR:    10.199.187.0/24',
                     'proxy:           on',
                     'storage server:  yes',
                     'PVs to register: 3'):
        assert expected in out


def test_summary_without_optional_parts(capsys, tmp_path):
    body = sample('simple')
    param = body['additionalParams']['k8s_cluster_installation_param']
    for key in ('proxy', 'vim_name'):
        del param[key]
    for key in ('pod_cidr', 'cluster_cidr'):
        del param['master_node'][key]
    status, out, _ = run(capsys, write(tmp_path, body))
    assert status == 0
    assert 'proxy:           off' in out
    assert 'storage server:  no' in out
    assert 'PVs to register: 0' in out
    assert 'VIM name:        (not set)' in out
    assert 'pod CIDR:        192.168.0.0/16' in out


def test_invalid_request_lists_every_problem_by_path(capsys, tmp_path):
    body = sample('storage')
    param = body['additionalParams']['k8s_cluster_installation_param']
    param['master_node']['pod_cidr'] = 'abc'
    param['worker_node']['password'] = 'Cli-Bad\nSecret'
    param['storage_server']['nfs_server_setup_params'][1][
        'export_dir'] = 'rel'
    del body['flavourId']
    status, out, err = run(capsys, write(tmp_path, body))
    assert status == 1
    assert out == ''
    lines = err.splitlines()
    assert [line.split(': ', 1)[0] for line in lines] == [
        f'{K}.master_node.pod_cidr',
        f'{K}.storage_server.nfs_server_setup_params[1].export_dir',
        f'{K}.worker_node.password',
        'flavourId',
    ]
    assert "'abc' is not a valid CIDR" in lines[0]
    assert 'Cli-Bad' not in err


def test_body_that_is_not_an_object(capsys, tmp_path):
    status, _, err = run(capsys, write(tmp_path, '[1, 2]'))
    assert status == 1
    assert err.startswith('(request body): must be an object')


def test_seed_comment_gets_a_hint(capsys, tmp_path):
    text = ('{\n    "flavourId": "simple",\n'
            '    "vimId": "05ef", #Set the uuid of the VIM to use\n'
            '    "additionalParams": {}\n}\n')
    status, out, err = run(capsys, write(tmp_path, text))
    assert status == 2
    assert out == ''
    assert len(err.splitlines()) == 1
    assert 'comments are not allowed in JSON' in err
    assert 'line 3' in err


def test_invalid_json_names_line_and_column(capsys, tmp_path):
    status, _, err = run(capsys, write(tmp_path, '{\n  "a": 1,\n}\n'))
    assert status == 2
    assert 'line 3 column 1' in err
    assert len(err.splitlines()) == 1


def test_duplicate_key_is_refused(capsys, tmp_path):
    status, _, err = run(capsys, write(tmp_path, '{"a": 1, "a": 2}'))
    assert status == 2
    assert 'key "a" appears twice' in err


@pytest.mark.parametrize('content', [None, b'\xff\xfe{}'])
def test_unreadable_file(capsys, tmp_path, content):
    path = tmp_path / 'request.json'
    if content is not None:
        path.write_bytes(content)
    status, out, err = run(capsys, str(path))
    assert status == 2
    assert out == ''
    assert len(err.splitlines()) == 1
    assert str(path) in err


def test_directory_instead_of_file(capsys, tmp_path):
    status, _, err = run(capsys, str(tmp_path))
    assert status == 2
    assert 'cannot read' in err


# -- the samples as shipped, and the other kinds of request -----------------

SAMPLES = Path(__file__).resolve().parents[2] / 'samples' / 'requests'


def test_untouched_sample_names_every_placeholder(capsys):
    status, out, err = run(
        capsys, str(SAMPLES / 'simple_kubernetes_param_file.json'))
    assert (status, out) == (1, '')
    assert err.splitlines() == [
        'vimConnectionInfo[0].id: still holds the sample\'s placeholder '
        'REPLACE_WITH_A_NEW_UUID; replace it',
        'vimConnectionInfo[0].vimId: still holds the sample\'s placeholder '
        'REPLACE_WITH_OPENSTACK_VIM_ID; replace it',
        'extVirtualLinks[0].resourceId: still holds the sample\'s '
        'placeholder REPLACE_WITH_NETWORK_ID; replace it',
        'extVirtualLinks[1].resourceId: still holds the sample\'s '
        'placeholder REPLACE_WITH_NETWORK_ID; replace it',
        f'{K}.master_node.password: still holds the sample\'s placeholder '
        'REPLACE_WITH_...; replace it',
        f'{K}.worker_node.password: still holds the sample\'s placeholder '
        'REPLACE_WITH_...; replace it',
    ]


def test_filled_in_sample_is_valid(capsys, tmp_path):
    text = (SAMPLES / 'simple_kubernetes_param_file.json').read_text()
    text = text.replace('REPLACE_WITH_VM_PASSWORD', 'Filled-In-Secret')
    for word in ('A_NEW_UUID', 'OPENSTACK_VIM_ID', 'NETWORK_ID'):
        text = text.replace(f'REPLACE_WITH_{word}',
                            '0b6e8c5a-7f7c-4a43-9d55-1f7a1bb3c0de')
    status, out, err = run(capsys, write(tmp_path, text))
    assert (status, err) == (0, '')
    assert 'valid' in out and 'Filled-In-Secret' not in out


def test_placeholder_problems_come_with_the_other_problems(capsys,
                                                           tmp_path):
    body = sample('simple')
    body['extVirtualLinks'][0]['resourceId'] = 'REPLACE_WITH_NETWORK_ID'
    body['additionalParams'][
        'k8s_cluster_installation_param']['master_node']['pod_cidr'] = 'x'
    status, _, err = run(capsys, write(tmp_path, body))
    assert status == 1
    assert [line.split(': ', 1)[0] for line in err.splitlines()] == [
        f'{K}.master_node.pod_cidr', 'extVirtualLinks[0].resourceId']


@pytest.mark.parametrize('name, expected', [
    ('scale_out_worker_instance',
     'SCALE_OUT of aspect worker_instance by 1 step(s)'),
    ('scale_in_worker_instance',
     'SCALE_IN of aspect worker_instance by 1 step(s)'),
    ('heal_vnf_request', 'heal the whole VNF (a new stack)'),
    ('terminate_vnf_request', 'terminate, GRACEFUL (timeout 120 s)'),
])
def test_other_samples_are_valid_requests_of_their_kind(capsys, name,
                                                        expected):
    status, out, err = run(capsys, str(SAMPLES / f'{name}.json'))
    assert (status, err) == (0, '')
    assert f'operation:       {expected}' in out


def test_heal_sample_names_its_placeholder(capsys):
    status, _, err = run(capsys, str(SAMPLES / 'heal_vnfc_request.json'))
    assert status == 1
    assert err == ("vnfcInstanceId[0]: still holds the sample's placeholder "
                   'REPLACE_WITH_VNFC_INSTANCE_ID; replace it\n')


def test_bad_scale_request_problems_by_path(capsys, tmp_path):
    status, _, err = run(capsys, write(tmp_path, {
        'type': 'SCALE_UP', 'aspectid': 'worker_instance',
        'numberOfSteps': 0}))
    assert status == 1
    lines = err.splitlines()
    assert [line.split(': ', 1)[0] for line in lines] == [
        'aspectId', 'aspectid', 'numberOfSteps', 'type']
    assert "found 'aspectid' instead" in lines[0]
    assert 'must be one of: SCALE_OUT, SCALE_IN' in lines[3]


def test_kind_that_cannot_be_told_asks_for_kind(capsys, tmp_path):
    path = write(tmp_path, {})
    status, out, err = run(capsys, path)
    assert (status, out) == (2, '')
    assert 'give --kind (one of: instantiate, scale, heal, terminate)' in err
    status, out, _ = run(capsys, '--kind', 'heal', path)
    assert status == 0
    assert 'valid heal request' in out


def test_kind_given_checks_against_that_kind(capsys):
    status, _, err = run(capsys, '--kind', 'terminate',
                         str(SAMPLES / 'scale_out_worker_instance.json'))
    assert status == 1
    assert 'terminationType: is required' in err
    assert 'aspectId: unknown key; expected one of: additionalParams, ' \
        'gracefulTerminationTimeout, terminationType' in err


def test_placeholder_in_a_proxy_url_shows_no_credential(capsys, tmp_path):
    body = sample('storage')
    body['additionalParams']['k8s_cluster_installation_param']['proxy'][
        'http_proxy'] = 'http://REPLACE_WITH_USER:Proxy-Secret@proxy:3128'
    status, _, err = run(capsys, write(tmp_path, body))
    assert status == 1
    assert err == (f"{K}.proxy.http_proxy: still holds the sample's "
                   'placeholder REPLACE_WITH_USER; replace it\n')


def test_megabyte_password_and_wide_export_are_shown_by_path(capsys,
                                                             tmp_path):
    body = sample('storage')
    param = body['additionalParams']['k8s_cluster_installation_param']
    param['worker_node']['password'] = 'Cli-Huge-Secret' * 70000  # ~1 MB
    param['storage_server']['nfs_server_setup_params'][2][
        'export_to'] = '0.0.0.0/0'
    status, out, err = run(capsys, write(tmp_path, body))
    assert (status, out) == (1, '')
    lines = err.splitlines()
    assert lines == [
        f'{K}.storage_server.nfs_server_setup_params[2].export_to: '
        "'0.0.0.0/0' lets any host of a /0 network mount the directory "
        '(wider than /8); name the network of the cluster nodes, e.g. '
        '10.10.0.0/24, or add "allow_wide_export": true beside export_to '
        'to export this widely on purpose',
        f'{K}.worker_node.password: must be at most 512 characters long']
    assert 'Cli-Huge' not in err


def test_wide_export_on_purpose_is_valid_and_summarised(capsys, tmp_path):
    body = sample('storage')
    export = body['additionalParams']['k8s_cluster_installation_param'][
        'storage_server']['nfs_server_setup_params'][0]
    export.update(export_to='0.0.0.0/0', allow_wide_export=True)
    status, out, err = run(capsys, write(tmp_path, body))
    assert (status, err) == (0, '')
    assert ('3 NFS export(s), wide on purpose to 0.0.0.0/0)' in out)


# -- the v2 API's requests, as its driver takes them ------------------------

SAMPLES_V2 = SAMPLES.parent / 'requests_v2'
V2_INSTANTIATE = ('instantiate_simple_request.json',
                  'instantiate_complex_request.json')


def filled(name: str, directory: Path = SAMPLES_V2) -> dict:
    text = (directory / name).read_text()
    text = text.replace('REPLACE_WITH_VM_PASSWORD', 'Filled-In-Secret')
    for word in ('OPENSTACK_VIM_ID', 'NETWORK_ID'):
        text = text.replace(f'REPLACE_WITH_{word}',
                            '0b6e8c5a-7f7c-4a43-9d55-1f7a1bb3c0de')
    assert 'REPLACE_WITH_' not in text
    return json.loads(text)


def v2_driver_accepts(body: dict) -> None:
    """What the v2 LCM script does with an Instantiate request at
    instantiate_start (ValidationError when it refuses it)."""
    from kubernetes_mgmt.shim.v2 import operations
    from kubernetes_mgmt.shim.v2.instance import V2Instance

    instance = V2Instance({'id': 'inst-1', 'vnfdId': 'vnfd-1',
                           'instantiationState': 'NOT_INSTANTIATED',
                           'metadata': {}})
    operations.run(operations.Call('instantiate_start', body, instance,
                                   None, None))


@pytest.mark.parametrize('name', V2_INSTANTIATE)
def test_filled_in_v2_sample_is_valid_as_its_driver_takes_it(capsys,
                                                             tmp_path, name):
    body = filled(name)
    v2_driver_accepts(body)
    status, out, err = run(capsys, write(tmp_path, body))
    assert (status, err) == (0, '')
    assert 'API:             v2 (vimConnectionInfo is a map)' in out
    assert 'worker group:    worker_instance (ssh CP workerNode_CP1' in out


@pytest.mark.parametrize('name', V2_INSTANTIATE)
def test_v2_request_is_refused_where_its_driver_refuses_it(capsys,
                                                           tmp_path, name):
    from kubernetes_mgmt.errors import ValidationError

    body = filled(name)
    del body['additionalParams']['k8s_cluster_installation_param'][
        'master_node']['ssh_cp_name']
    with pytest.raises(ValidationError, match='ssh_cp_name'):
        v2_driver_accepts(body)
    status, _, err = run(capsys, write(tmp_path, body))
    assert status == 1
    assert err == (f'{K}.master_node.ssh_cp_name: is required (name of the '
                   'port whose IP is used for SSH)\n')


def test_api_option_decides_a_request_without_vim_connection_info(
        capsys, tmp_path):
    body = filled('instantiate_simple_request.json')
    del body['vimConnectionInfo']       # v2: the default VIM
    path = write(tmp_path, body)
    status, _, err = run(capsys, path)
    assert status == 1
    assert err == (f'{K}.master_node.aspect_id: is required when '
                   "additionalParams has 'lcm-operation-user-data' (the "
                   'VNFD aspect of this node group)\n')
    status, out, err = run(capsys, path, '--api', 'v2')
    assert (status, err) == (0, '')
    assert 'API:             v2 (--api)' in out


def test_v1_sample_is_still_held_to_the_v1_user_data_rule(capsys, tmp_path):
    body = sample('simple')
    del body['additionalParams']['k8s_cluster_installation_param'][
        'worker_node']['aspect_id']
    status, _, err = run(capsys, write(tmp_path, body))
    assert status == 1
    assert err.startswith(f'{K}.worker_node.aspect_id: is required when ')


# -- the PV sample leaves the node network to its user -----------------------

def test_pv_sample_export_to_is_a_placeholder(capsys):
    """One line per export, the placeholder's, not also a format error."""
    pv_sample = SAMPLES / 'simple_kubernetes_pv_param_file.json'
    status, out, err = run(capsys, str(pv_sample))
    assert (status, out) == (1, '')
    exports = [line for line in err.splitlines() if 'export_to' in line]
    assert exports == [
        f'{K}.storage_server.nfs_server_setup_params[{i}].export_to: still '
        "holds the sample's placeholder REPLACE_WITH_NODE_NETWORK_CIDR; "
        'replace it' for i in range(3)]


def _cnf_request(**params) -> dict:
    body = json.loads((Path(__file__).resolve().parents[2] / 'samples' /
                       'cnf_requests' / 'instantiate_cnf_request.json')
                      .read_text(encoding='utf-8'))
    body['vimConnectionInfo'][0].update(id='c1', vimId='k8s-vim-1')
    body['additionalParams'].update(params)
    return body


def test_a_cnf_instantiate_request_is_checked_as_the_cnf_driver_does(
        capsys, tmp_path):
    status, out, err = run(capsys, write(tmp_path, _cnf_request()))
    assert status == 0, err
    assert 'kubernetes-namespaced' in out and 'ns-a' in out
    assert 'package verify' in out      # where the files are checked


def test_a_bad_cnf_request_names_each_field(capsys, tmp_path):
    body = _cnf_request(namespace='NS_A', use_helm=True)
    body['additionalParams']['lcm-kubernetes-def-files'] = [
        'Files/kubernetes/web.yaml', '../../etc/passwd', 'http://x/y.yaml']
    status, _, err = run(capsys, write(tmp_path, body))
    assert status == 1
    lines = err.splitlines()
    assert any(line.startswith('additionalParams.namespace: ') and 'NS_A'
               in line for line in lines), err
    assert any(line.startswith('additionalParams.use_helm: ')
               for line in lines), err
    assert any(line.startswith(
        'additionalParams.lcm-kubernetes-def-files[1]: ') and 'outside'
        in line for line in lines), err
    assert any(line.startswith(
        'additionalParams.lcm-kubernetes-def-files[2]: ') and 'URL' in line
        for line in lines), err
    # Not judged as a cluster request.
    assert 'k8s_cluster_installation_param' not in err


def test_summary_says_who_chooses_the_kubernetes_minor(capsys, tmp_path):
    body = sample('simple')
    status, out, _ = run(capsys, write(tmp_path, body))
    assert status == 0
    assert ("Kubernetes:      not set: the VNF package's software_version "
            'when it is a minor, else [kubernetes_mgmt] kubernetes_version'
            ) in out
    body['additionalParams']['k8s_cluster_installation_param'][
        'kubernetes_version'] = '1.36'
    status, out, _ = run(capsys, write(tmp_path, body))
    assert status == 0
    assert "Kubernetes:      1.36 (the request's: a VNF package naming " \
        'another minor in its software_version refuses it)' in out

"""``package verify`` checks a package against its own requests: those
given with ``--request``, else the request samples of the plugin's
sample it was built from, never a sample's requests for a package built
from the operator's own source; and a request may name only flavours,
connection points, aspects, VDUs, levels and Heat resources the package
has."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubernetes_mgmt.cli import main
from kubernetes_mgmt.vnf_package import layout
from kubernetes_mgmt_lab.package_cli import problems
from kubernetes_mgmt_lab.package_cli import run_package as run
from kubernetes_mgmt_lab.renamed import renamed_package, renamed_request

K = 'additionalParams.k8s_cluster_installation_param'
PV_SAMPLE = 'simple_kubernetes_pv_param_file.json'
SAMPLE_REQUESTS = ('complex_kubernetes_param_file.json, '
                   'podaffinity_kubernetes_param_file.json, '
                   'simple_kubernetes_param_file.json, '
                   'simple_kubernetes_pv_param_file.json')


def sample_body(name: str = PV_SAMPLE) -> dict:
    return json.loads((layout.request_samples_dir() / name).read_text())


def write(tmp_path: Path, name: str, body: dict) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(body))
    return path


@pytest.fixture(scope='module')
def renamed_csar(tmp_path_factory, sol001_dir) -> Path:
    """A package built from a source of the operator's own: the sample
    with other names for its VDUs, ports and aspects."""
    root = tmp_path_factory.mktemp('renamed')
    renamed_package(layout.sample_package_dir(), root / 'source')
    output = root / 'renamed.zip'
    assert main(['package', 'build', '-o', str(output), '--source',
                 str(root / 'source'), '--sol001-dir', str(sol001_dir)]) \
        == 0
    return output


def test_a_package_of_your_own_is_not_checked_with_the_samples(
        capsys, renamed_csar):
    status, out, err = run(capsys, 'verify', str(renamed_csar))
    assert (status, err) == (0, '')
    assert ('requests:   none checked: the package was not built from a '
            'plugin sample; give its Instantiate requests with --request '
            'FILE') in out
    assert 'kubernetes_param_file' not in out


def test_a_package_of_your_own_passes_with_its_requests(capsys, tmp_path,
                                                        renamed_csar):
    mine = write(tmp_path, 'mine.json', renamed_request(sample_body()))
    status, out, err = run(capsys, 'verify', str(renamed_csar),
                           '--request', str(mine))
    assert (status, err) == (0, '')
    assert 'requests:   mine.json\n' in out
    assert 'user data:  UserData/k8s_cluster_user_data.py' in out


def test_requests_naming_what_the_package_lacks_are_refused(
        capsys, tmp_path, renamed_csar):
    """The plugin's PV sample against the renamed package: every name
    it takes from the package is another."""
    sample = write(tmp_path, PV_SAMPLE, sample_body())
    status, _, err = run(capsys, 'verify', str(renamed_csar), '--request',
                         str(sample))
    assert status == 1
    vnfd_cps = 'which flavour simple of the VNFD does not have (it has: ' \
        'cp_port, storage_server_CP, wk_port)'
    ports = ('which BaseHOT/simple (its OS::Neutron::Port resources, top '
             'and nested templates) does not have (it has: cp_port, '
             'storage_server_CP, wk_port)')
    aspects = ('which flavour simple of the VNFD does not have (it has: '
               'cp_group, wk_group)')
    assert problems(err) == [
        f'{PV_SAMPLE}: extVirtualLinks[0].extCps[0].cpdId names connection '
        f'point masterNode_CP1, {vnfd_cps}',
        f'{PV_SAMPLE}: extVirtualLinks[1].extCps[0].cpdId names connection '
        f'point workerNode_CP2, {vnfd_cps}',
        f'{PV_SAMPLE}: {K}.master_node.aspect_id names aspect '
        f'master_instance, {aspects}',
        f'{PV_SAMPLE}: {K}.worker_node.aspect_id names aspect '
        f'worker_instance, {aspects}',
        *(f'{PV_SAMPLE}: {K}.{group}.{key} names port {port}, {ports}'
          for group, port in (('master_node', 'masterNode_CP1'),)
          for key in ('ssh_cp_name', 'nic_cp_name', 'cluster_cp_name')),
        *(f'{PV_SAMPLE}: {K}.worker_node.{key} names port workerNode_CP2, '
          f'{ports}' for key in ('ssh_cp_name', 'nic_cp_name'))]
    assert err.splitlines()[-1] == f'{renamed_csar}: 9 problem(s)'


def test_a_sample_package_is_checked_with_its_samples(capsys, built_package):
    status, out, err = run(capsys, 'verify', str(built_package))
    assert (status, err) == (0, '')
    assert f'requests:   {SAMPLE_REQUESTS}\n' in out


def test_every_kind_of_name_is_checked(capsys, tmp_path, built_package):
    body = sample_body()
    body['instantiationLevelId'] = 'large'
    body['extManagedVirtualLinks'] = [
        {'id': 'l1', 'vnfVirtualLinkDescId': 'internal_VL',
         'resourceId': 'net-1'}]
    body['additionalParams']['nfv'] = {'VDU': {'masterNod': {}},
                                       'CP': {'workerNode_CP2': {}}}
    param = body['additionalParams']['k8s_cluster_installation_param']
    param['master_node']['cluster_fip_name'] = 'cluster_FIP'
    param['storage_server']['cinder_volume_setup_params'][0][
        'volume_resource_id'] = 'storage_volume'
    param['pv_registration_params'][1]['nfs_server_cp'] = 'storage_CP'
    request = write(tmp_path, 'mine.json', body)
    status, _, err = run(capsys, 'verify', str(built_package), '--request',
                         str(request))
    assert status == 1
    flavour = 'which flavour simple of the VNFD does not have'
    heat = 'which BaseHOT/simple (its {} resources, top and nested ' \
        'templates) does not have'
    assert problems(err) == [
        'mine.json: instantiationLevelId names instantiation level '
        f'large, {flavour} (it has: instantiation_level_1, '
        'instantiation_level_2)',
        'mine.json: extManagedVirtualLinks[0].vnfVirtualLinkDescId names '
        f'virtual link internal_VL, {flavour} (it has: none)',
        f'mine.json: additionalParams.nfv.VDU.masterNod names VDU '
        f'masterNod, {flavour}; did you mean masterNode?',
        f'mine.json: {K}.master_node.cluster_fip_name names floating IP '
        f'cluster_FIP, {heat.format("OS::Neutron::FloatingIP")} (it has: '
        'none)',
        f'mine.json: {K}.storage_server.cinder_volume_setup_params[0].'
        'volume_resource_id names volume storage_volume, '
        f'{heat.format("OS::Cinder::Volume")}; did you mean '
        'storage_server_volume?',
        f'mine.json: {K}.pv_registration_params[1].nfs_server_cp names '
        f'port storage_CP, {heat.format("OS::Neutron::Port")}; did you '
        'mean storage_server_CP?']


@pytest.mark.parametrize('options, requests', [
    (('--v2',), 'instantiate_complex_request.json, '
                'instantiate_simple_request.json'),
    (('--cnf',), 'instantiate_cnf_request.json')])
def test_the_other_samples_are_checked_with_their_own_requests(
        capsys, tmp_path, sol001_dir, options, requests):
    output = tmp_path / 'k.zip'
    assert main(['package', 'build', *options, '-o', str(output),
                 '--sol001-dir', str(sol001_dir)]) == 0
    capsys.readouterr()
    status, out, err = run(capsys, 'verify', str(output))
    assert (status, err) == (0, '')
    assert f'requests:   {requests}' in out

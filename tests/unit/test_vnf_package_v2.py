"""``kubernetes-mgmt package build --v2`` and ``verify`` of a package for
Tacker's v2 VNF LCM API (its onboarding by Tacker's own code:
tests/tacker/test_tacker_v2.py)."""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
import yaml

from kubernetes_mgmt.cli import main
from kubernetes_mgmt.vnf_package import layout
from kubernetes_mgmt.vnf_package.build import BuildOptions, build
from kubernetes_mgmt.vnf_package.verify import verify


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(['package', *argv])
    out, err = capsys.readouterr()
    assert 'Traceback' not in out + err
    return status, out, err


@pytest.fixture(scope='module')
def v2_package(tmp_path_factory, sol001_dir) -> Path:
    output = tmp_path_factory.mktemp('csar-v2') / 'v2.zip'
    build(BuildOptions(output=output, sol001_dir=sol001_dir, v2=True))
    return output


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def rewritten(source: Path, target: Path, changes: dict[str, bytes | None]
              ) -> Path:
    """A copy of the CSAR ``source`` with members replaced, added or
    (None) removed."""
    files = {**members(source), **changes}
    with zipfile.ZipFile(target, 'w') as archive:
        for name, data in files.items():
            if data is not None:
                archive.writestr(name, data)
    return target


def test_build_v2_then_verify(capsys, tmp_path, sol001_dir):
    output = tmp_path / 'v2.zip'
    status, out, err = run(capsys, 'build', '--v2', '-o', str(output),
                           '--sol001-dir', str(sol001_dir))
    assert (status, err) == (0, '')
    assert f'driver:        {layout.DRIVER_V2_FILE} = ' in out
    assert 'Tacker v2 VNF LCM' in out
    status, out, err = run(capsys, 'verify', str(output))
    assert (status, err) == (0, '')
    assert 'flavours:   simple, complex' in out
    assert f'{layout.DRIVER_V2_FILE} is this plugin\'s v2 LCM script' in out
    assert 'instantiate_complex_request.json' in out
    assert 'KubernetesClusterUserData' in out


def test_v2_package_carries_the_script_not_the_v1_module(v2_package):
    files = members(v2_package)
    script = layout.installed_v2_script().read_bytes()
    assert files[layout.DRIVER_V2_FILE] == script
    assert layout.DRIVER_FILE not in files
    info = zipfile.ZipFile(v2_package).getinfo(layout.DRIVER_V2_FILE)
    assert (info.external_attr >> 16) & 0o111     # executable
    assert 'Scripts/install_k8s_cluster.sh' in files


def test_every_v2_flavour_routes_operations_to_the_script(v2_package):
    files = members(v2_package)
    for flavour in ('simple', 'complex'):
        vnfd = yaml.safe_load(files[
            f'Definitions/kubernetes_mgmt_v2_df_{flavour}.yaml'])
        vnf = vnfd['topology_template']['node_templates']['VNF']
        artifact = vnf['artifacts'][layout.DRIVER_V2_NAME]
        # Relative to Definitions/, as Tacker's v2 conductor joins it.
        assert artifact['file'] == f'../{layout.DRIVER_V2_FILE}'
        operations = vnf['interfaces']['Vnflcm']
        assert {'instantiate_end', 'scale_start', 'scale_end', 'heal_start',
                'heal_end', 'terminate_start'} <= set(operations)
        assert {o['implementation'] for o in operations.values()} == \
            {layout.DRIVER_V2_NAME}


def test_a_module_beside_the_script_is_refused(v2_package, tmp_path):
    changed = rewritten(v2_package, tmp_path / 'shadow.zip', {
        'Scripts/kubernetes_mgmt.py': b'print("not the plugin")\n'})
    problems = verify(changed).problems
    assert any('Scripts/kubernetes_mgmt.py is beside the LCM script' in p
               for p in problems), problems


def test_an_edited_script_is_refused(v2_package, tmp_path):
    changed = rewritten(v2_package, tmp_path / 'edited.zip', {
        layout.DRIVER_V2_FILE: b'import os\nos.system("true")\n'})
    problems = verify(changed).problems
    assert any('differs from this plugin\'s v2 LCM script' in p
               for p in problems), problems


def test_v2_requests_name_files_of_the_package(v2_package, tmp_path):
    body = json.loads((layout.request_v2_samples_dir() /
                       'instantiate_simple_request.json').read_text())
    body['additionalParams']['lcm-operation-user-data'] = \
        './UserData/missing.py'
    request = tmp_path / 'request.json'
    request.write_text(json.dumps(body))
    problems = verify(v2_package, extra_requests=[request]).problems
    assert any('UserData/missing.py is not in the package' in p
               for p in problems), problems


def test_build_refuses_two_samples_at_once(capsys, tmp_path, sol001_dir):
    status, _, err = run(capsys, 'build', '--v2', '--cnf', '-o',
                         str(tmp_path / 'x.zip'), '--sol001-dir',
                         str(sol001_dir))
    assert status != 0
    assert '--cnf and --v2 exclude each other' in err
    assert not (tmp_path / 'x.zip').exists()


def test_scale_and_heal_samples_carry_no_cluster_parameters():
    samples = layout.request_v2_samples_dir()
    for name in ('scale_out_request.json', 'scale_in_request.json',
                 'heal_vnfc_request.json', 'heal_vnf_request.json',
                 'user_data_params.json'):
        text = (samples / name).read_text()
        assert 'password' not in text and 'k8s_cluster' not in text, name
        assert 'lcm-operation-user-data' in text, name

"""The sample CNF package: built and verified by ``kubernetes-mgmt
package`` like the cluster package, and checked against its requests as
the kubernetes-namespaced driver checks them."""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
import yaml

from kubernetes_mgmt.cli import main
from kubernetes_mgmt.vnf_package import layout

WEB = 'Files/kubernetes/web.yaml'
ACCESS = 'Files/kubernetes/tacker-cnf-access.yaml'


@pytest.fixture(scope='module')
def cnf_csar(tmp_path_factory, sol001_dir) -> Path:
    out = tmp_path_factory.mktemp('cnf') / 'cnf.zip'
    assert main(['package', 'build', '--cnf', '-o', str(out),
                 '--sol001-dir', str(sol001_dir)]) == 0
    return out


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    assert 'Traceback' not in out + err
    return status, out, err


def _request(tmp_path: Path, **params) -> Path:
    path = tmp_path / 'instantiate.json'
    path.write_text(json.dumps({'flavourId': 'simple',
                                'additionalParams': params}),
                    encoding='utf-8')
    return path


def test_the_package_holds_its_objects_and_no_vm_parts(cnf_csar):
    with zipfile.ZipFile(cnf_csar) as archive:
        names = set(archive.namelist())
        objects = list(yaml.safe_load_all(archive.read(WEB)))
    assert {WEB, ACCESS, 'Definitions/cnf_top.vnfd.yaml',
            'Definitions/etsi_nfv_sol001_vnfd_types.yaml'} <= names
    assert not [n for n in names
                if n.startswith(('BaseHOT/', 'Scripts/', 'UserData/',
                                 'Files/images/'))]
    assert sorted(o['kind'] for o in objects) == [
        'ConfigMap', 'Deployment', 'Service']
    assert not [o for o in objects if 'namespace' in o['metadata']]


def test_the_access_file_is_the_readmes_role(cnf_csar):
    with zipfile.ZipFile(cnf_csar) as archive:
        docs = list(yaml.safe_load_all(archive.read(ACCESS)))
    role, = [d for d in docs if d['kind'] == 'Role']
    readme = (Path(__file__).resolve().parents[2] / 'docs' /
              'cnf-driver.rst').read_text(encoding='utf-8')
    block = readme.split('The Role it needs::', 1)[1].split(
        '\n\n', 2)[1]
    assert role['rules'] == yaml.safe_load(block)['rules']
    binding, = [d for d in docs if d['kind'] == 'RoleBinding']
    assert binding['subjects'] == [{'kind': 'ServiceAccount',
                                    'name': 'tacker-cnf',
                                    'namespace': 'ns-a'}]


def test_verify_accepts_the_sample_and_checks_its_request(cnf_csar, capsys):
    status, out, err = _run(capsys, 'package', 'verify', str(cnf_csar))
    assert (status, err) == (0, '')
    assert 'a CNF package' in out
    assert 'instantiate_cnf_request.json' in out


def test_verify_names_a_missing_file_of_a_request(cnf_csar, capsys,
                                                  tmp_path):
    request = _request(tmp_path, **{
        'lcm-kubernetes-def-files': ['Files/kubernetes/db.yaml']})
    status, _, err = _run(capsys, 'package', 'verify', str(cnf_csar),
                          '--request', str(request))
    assert status == 1
    assert "instantiate.json: additionalParams.lcm-kubernetes-def-files" \
        "[0]: 'Files/kubernetes/db.yaml' is not a file of the" in err


def test_verify_refuses_a_namespace_the_files_contradict(cnf_csar, capsys,
                                                         tmp_path):
    request = _request(tmp_path, namespace='ns-b', **{
        'lcm-kubernetes-def-files': [ACCESS]})
    status, _, err = _run(capsys, 'package', 'verify', str(cnf_csar),
                          '--request', str(request))
    assert status == 1
    assert "additionalParams.namespace is 'ns-b'" in err
    assert f"({ACCESS}) in 'ns-a'" in err


def test_build_refuses_an_image_for_a_cnf(capsys, tmp_path):
    image = tmp_path / 'disk.img'
    image.write_bytes(b'\0' * 512)
    status, _, err = _run(capsys, 'package', 'build', '--cnf',
                          '-o', str(tmp_path / 'x.zip'), '--image',
                          str(image))
    assert status == 1
    assert 'is a CNF package source' in err and 'takes no --image' in err
    assert not (tmp_path / 'x.zip').exists()


def test_build_cnf_and_source_exclude_each_other(capsys, tmp_path):
    status, _, err = _run(capsys, 'package', 'build', '--cnf', '--source',
                          str(layout.cnf_package_dir()),
                          '-o', str(tmp_path / 'x.zip'))
    assert status == 1 and '--source and --cnf exclude each other' in err

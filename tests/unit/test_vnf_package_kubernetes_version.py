"""The Kubernetes minor a cluster package installs (its VNF's
software_version): ``package build --kubernetes-version`` sets it in
every place, ``package verify`` reports it and refuses a v2 cluster
package that names no minor (its upgrades go by it), a package whose
places disagree (Tacker would refuse it on upload) and a request naming
another minor."""
from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
import yaml

from kubernetes_mgmt.params.package_version import package_software_version
from kubernetes_mgmt.vnf_package import layout
from kubernetes_mgmt.vnf_package.build import BuildOptions, build
from kubernetes_mgmt_lab.package_cli import problems
from kubernetes_mgmt_lab.package_cli import run_package as run
from kubernetes_mgmt_lab.package_cli import zip_members as members

# (build options, sample directory, top VNFD, types file, the sample's
# software_version) of each cluster sample.
SAMPLES = {
    'v1': ((), 'vnf_package', 'Definitions/kubernetes_mgmt_top.vnfd.yaml',
           'Definitions/kubernetes_mgmt_types.yaml', '1.0'),
    'v2': (('--v2',), 'vnf_package_v2',
           'Definitions/kubernetes_mgmt_v2_top.vnfd.yaml',
           'Definitions/kubernetes_mgmt_v2_types.yaml', '1.37'),
}
V2_TOP, V2_TYPES = SAMPLES['v2'][2:4]
TOP_FIELD = ('topology_template.node_templates.VNF.properties.'
             'software_version')


def _vnf_properties(top: dict) -> dict:
    return top['topology_template']['node_templates']['VNF']['properties']


def _type_spec(types: dict) -> dict:
    [definition] = types['node_types'].values()
    return definition['properties']['software_version']


def _with_software_version(top: dict, types: dict, value: str) -> None:
    _vnf_properties(top)['software_version'] = value
    spec = _type_spec(types)
    spec['default'] = value
    spec['constraints'] = [{'valid_values': [value]}]


@pytest.mark.parametrize('sample', sorted(SAMPLES))
def test_kubernetes_version_sets_every_place(capsys, tmp_path, sol001_dir,
                                             sample):
    options, directory, top_name, types_name, _ = SAMPLES[sample]
    output = tmp_path / 'k.zip'
    status, out, err = run(capsys, 'build', *options, '-o', str(output),
                           '--kubernetes-version', '1.36',
                           '--sol001-dir', str(sol001_dir))
    assert (status, err) == (0, '')
    assert 'Kubernetes:    1.36 (software_version: the minor its clusters ' \
        'install)' in out
    files = members(output)
    source = layout.samples_root() / directory
    # The three places say 1.36 (a string, as SOL001 types it); nothing
    # else of the two templates changed.
    top, types = (yaml.safe_load((source / name).read_text())
                  for name in (top_name, types_name))
    _with_software_version(top, types, '1.36')
    assert yaml.safe_load(files[top_name]) == top
    assert yaml.safe_load(files[types_name]) == types
    # What the v2 hooks read from the unpacked package.
    unpacked = tmp_path / 'unpacked'
    with zipfile.ZipFile(output) as archive:
        archive.extractall(unpacked)
    assert package_software_version(unpacked) == '1.36'
    status, out, err = run(capsys, 'verify', str(output))
    assert (status, err) == (0, '')
    assert 'Kubernetes: 1.36 (software_version: the minor its clusters ' \
        'install)' in out


@pytest.mark.parametrize('sample', sorted(SAMPLES))
def test_without_the_option_the_sample_s_value_stays(capsys, tmp_path,
                                                     sol001_dir, sample):
    options, _, top_name, _, value = SAMPLES[sample]
    output = tmp_path / 'k.zip'
    status, out, err = run(capsys, 'build', *options, '-o', str(output),
                           '--sol001-dir', str(sol001_dir))
    assert (status, err) == (0, '')
    top = yaml.safe_load(members(output)[top_name])
    assert _vnf_properties(top)['software_version'] == value
    status, verified, err = run(capsys, 'verify', str(output))
    assert (status, err) == (0, '')
    if sample == 'v2':
        shown = '1.37 (software_version: the minor its clusters install)'
    else:       # v1 has no upgrade: '1.0' names no minor, and is fine
        shown = ("not named (software_version '1.0' is no minor: the "
                 "request's kubernetes_version or [kubernetes_mgmt] "
                 'kubernetes_version chooses)')
    assert f'Kubernetes:    {shown}' in out
    assert f'Kubernetes: {shown}' in verified


@pytest.mark.parametrize('value, expected', [
    ('v1.36.2', "--kubernetes-version 'v1.36.2': give the minor only, as "
                '1.36'),
    ('1.0', "--kubernetes-version '1.0' is not a Kubernetes minor: give "
            "the minor the package's clusters install, e.g. 1.37"),
    ('latest', "--kubernetes-version 'latest' is not a Kubernetes minor"),
])
def test_a_bad_minor_is_refused(capsys, tmp_path, sol001_dir, value,
                                expected):
    output = tmp_path / 'k.zip'
    status, out, err = run(capsys, 'build', '--v2', '-o', str(output),
                           '--kubernetes-version', value,
                           '--sol001-dir', str(sol001_dir))
    assert (status, out) == (1, '')
    assert len(err.splitlines()) == 1 and expected in err
    assert not output.exists()


def test_a_cnf_package_takes_no_kubernetes_version(capsys, tmp_path,
                                                   sol001_dir):
    output = tmp_path / 'k.zip'
    status, out, err = run(capsys, 'build', '--cnf', '-o', str(output),
                           '--kubernetes-version', '1.36',
                           '--sol001-dir', str(sol001_dir))
    assert (status, out) == (1, '')
    assert err.endswith('is a CNF package source (no BaseHOT): it takes no '
                        '--kubernetes-version\n')
    assert not output.exists()


@pytest.fixture(scope='module')
def v2_package(tmp_path_factory, sol001_dir) -> Path:
    output = tmp_path_factory.mktemp('v2') / 'v2.zip'
    build(BuildOptions(output=output, sol001_dir=sol001_dir, v2=True))
    return output


def _rewritten(package: Path, target: Path, top_value: str,
               types_value: str) -> Path:
    """A copy of ``package`` whose VNF node says ``top_value`` and whose
    node type's default and valid_values say ``types_value`` (the
    Definitions are not hashed in TOSCA.meta: only they differ)."""
    files = members(package)
    top, types = (yaml.safe_load(files[n]) for n in (V2_TOP, V2_TYPES))
    _with_software_version(top, types, types_value)
    _vnf_properties(top)['software_version'] = top_value
    files[V2_TOP] = yaml.safe_dump(top).encode()
    files[V2_TYPES] = yaml.safe_dump(types).encode()
    with zipfile.ZipFile(target, 'w') as archive:
        for member, data in files.items():
            archive.writestr(member, data)
    return target


def test_verify_refuses_a_v2_package_naming_no_minor(capsys, tmp_path,
                                                     v2_package):
    bad = _rewritten(v2_package, tmp_path / 'bad.zip', '1.0', '1.0')
    status, _, err = run(capsys, 'verify', str(bad))
    assert status == 1
    assert problems(err) == [
        f"{V2_TOP} {TOP_FIELD} is '1.0': a v2 cluster package names the "
        "Kubernetes minor its clusters install (e.g. '1.37'; a change-vnfpkg "
        'to a package naming the next minor upgrades them): rebuild it '
        'with kubernetes-mgmt package build --kubernetes-version MINOR']


def test_verify_refuses_a_software_version_changed_in_one_place(
        capsys, tmp_path, v2_package):
    bad = _rewritten(v2_package, tmp_path / 'bad.zip', '1.36', '1.37')
    status, _, err = run(capsys, 'verify', str(bad))
    assert status == 1
    [problem] = problems(err)
    assert problem.startswith(
        'the Kubernetes version (software_version) disagrees: '
        f'{V2_TOP} {TOP_FIELD} is 1.36; ')
    assert problem.endswith('give all of them one minor, e.g. with '
                            'kubernetes-mgmt package build '
                            '--kubernetes-version MINOR')


def test_build_refuses_a_v2_source_naming_no_minor_unless_told_one(
        capsys, tmp_path, sol001_dir):
    source = tmp_path / 'mine'
    shutil.copytree(layout.sample_v2_package_dir(), source)
    for name in (V2_TOP, V2_TYPES):
        path = source / name
        path.write_text(path.read_text().replace("'1.37'", "'2.0'"))
    output = tmp_path / 'mine.zip'
    status, out, err = run(capsys, 'build', '-o', str(output), '--source',
                           str(source), '--sol001-dir', str(sol001_dir))
    assert (status, out) == (1, '')
    assert err.startswith(f"error: {V2_TOP} {TOP_FIELD} is '2.0': a v2 "
                          'cluster package names the Kubernetes minor')
    assert not output.exists()
    status, out, err = run(capsys, 'build', '-o', str(output), '--source',
                           str(source), '--sol001-dir', str(sol001_dir),
                           '--kubernetes-version', '1.38')
    assert (status, err) == (0, '')
    status, out, err = run(capsys, 'verify', str(output))
    assert (status, err) == (0, '')
    assert 'Kubernetes: 1.38' in out


@pytest.mark.parametrize('requested, refused', [('1.36', True),
                                                ('1.37', False)])
def test_verify_refuses_a_request_naming_another_minor(
        capsys, tmp_path, v2_package, requested, refused):
    body = json.loads((layout.samples_root() / 'requests_v2/'
                       'instantiate_simple_request.json').read_text())
    body['additionalParams']['k8s_cluster_installation_param'][
        'kubernetes_version'] = requested
    request = tmp_path / 'request.json'
    request.write_text(json.dumps(body))
    status, _, err = run(capsys, 'verify', str(v2_package), '--request',
                         str(request))
    mismatch = [p for p in problems(err) if 'kubernetes_version' in p]
    assert mismatch == ([
        'request.json: additionalParams.k8s_cluster_installation_param.'
        'kubernetes_version: 1.36 is not 1.37, the Kubernetes minor the VNF '
        "package installs (its VNF's software_version): leave "
        "kubernetes_version out or give the package's minor, or use a "
        'package built with kubernetes-mgmt package build '
        '--kubernetes-version 1.36'] if refused else [])
    assert (status == 1) == refused

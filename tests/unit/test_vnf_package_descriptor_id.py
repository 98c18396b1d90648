"""The VNFD id of a package: ``package build --descriptor-id`` sets it in
every place, ``package verify`` refuses a package whose places disagree
(Tacker would refuse it on upload, the error only in its conductor's
log; tests/tacker/test_tacker_descriptor_id.py shows Tacker does)."""
from __future__ import annotations

import hashlib
import shutil
import zipfile
from pathlib import Path

import pytest
import yaml

from kubernetes_mgmt.vnf_package import layout, meta
from kubernetes_mgmt_lab.package_cli import run_package as run
from kubernetes_mgmt_lab.package_cli import zip_members as members

NEW_ID = '3f1c2b8e-5d4a-4e6f-9a7b-0c1d2e3f4a5b'
# (build options, sample directory, top VNFD, types file) of each sample.
SAMPLES = {
    'v1': ((), 'vnf_package', 'Definitions/kubernetes_mgmt_top.vnfd.yaml',
           'Definitions/kubernetes_mgmt_types.yaml'),
    'v2': (('--v2',), 'vnf_package_v2',
           'Definitions/kubernetes_mgmt_v2_top.vnfd.yaml',
           'Definitions/kubernetes_mgmt_v2_types.yaml'),
    'cnf': (('--cnf',), 'cnf_package', 'Definitions/cnf_top.vnfd.yaml',
            'Definitions/cnf_types.yaml'),
}
TOP, TYPES = SAMPLES['v1'][2:]
VNF_TYPE = 'tacker_kubernetes_mgmt.nodes.KubernetesCluster'
SAMPLE_ID = 'b8e8e8a5-8d67-4f1f-bccb-4c746998f3a4'
TOP_FIELD = 'topology_template.node_templates.VNF.properties.descriptor_id'
TYPE_FIELD = f'node_types.{VNF_TYPE}.properties.descriptor_id'


def top_id(top: dict) -> str:
    return top['topology_template']['node_templates']['VNF'][
        'properties']['descriptor_id']


def type_id_spec(types: dict) -> dict:
    [definition] = types['node_types'].values()
    return definition['properties']['descriptor_id']


@pytest.mark.parametrize('sample', sorted(SAMPLES))
def test_descriptor_id_sets_every_place(capsys, tmp_path, sol001_dir,
                                        sample):
    options, directory, top_name, types_name = SAMPLES[sample]
    output = tmp_path / 'k.zip'
    status, out, err = run(capsys, 'build', *options, '-o', str(output),
                           '--descriptor-id', NEW_ID,
                           '--sol001-dir', str(sol001_dir))
    assert (status, err) == (0, '')
    assert f'VNFD id:       {NEW_ID} (the VNFD ID openstack vnflcm ' \
        'create takes)' in out
    files = members(output)
    assert top_id(yaml.safe_load(files[top_name])) == NEW_ID
    spec = type_id_spec(yaml.safe_load(files[types_name]))
    assert spec['default'] == NEW_ID
    assert spec['constraints'] == [{'valid_values': [NEW_ID]}]
    # Nothing else of the two templates changed, comments included.
    source = layout.samples_root() / directory
    old_id = top_id(yaml.safe_load((source / top_name).read_text()))
    for name in (top_name, types_name):
        assert files[name].decode() == \
            (source / name).read_text().replace(old_id, NEW_ID)
    status, out, err = run(capsys, 'verify', str(output))
    assert (status, err) == (0, '')
    assert f'VNFD id:    {NEW_ID}' in out


@pytest.mark.parametrize('value, expected', [
    ('vnfd-1', "--descriptor-id 'vnfd-1' is not a UUID"),
    (NEW_ID.upper(), f'write the UUID as {NEW_ID} (lower case, with '
                     'hyphens)')])
def test_descriptor_id_must_be_a_uuid(capsys, tmp_path, sol001_dir, value,
                                      expected):
    output = tmp_path / 'k.zip'
    status, out, err = run(capsys, 'build', '-o', str(output),
                           '--descriptor-id', value,
                           '--sol001-dir', str(sol001_dir))
    assert (status, out) == (1, '')
    assert len(err.splitlines()) == 1 and expected in err
    assert not output.exists()


def _with_one_place_changed(package: Path, target: Path, place: str
                            ) -> Path:
    """A copy of ``package`` whose id is NEW_ID in ``place`` only, hashes
    in order (only the id is wrong)."""
    files = members(package)
    name = TOP if place == 'top' else TYPES
    text = files[name].decode()
    lines = text.splitlines(keepends=True)
    marker = {'top': 'descriptor_id: ', 'default': 'default: ',
              'valid_values': 'valid_values: '}[place]
    index = next(i for i, line in enumerate(lines)
                 if marker in line and SAMPLE_ID in line)
    lines[index] = lines[index].replace(SAMPLE_ID, NEW_ID)
    files[name] = ''.join(lines).encode()
    parsed = meta.parse(files[layout.TOSCA_META].decode())
    parsed.artifacts = [
        meta.Artifact(n, 'SHA-256', hashlib.sha256(files[n]).hexdigest())
        for n in sorted(files)
        if not n.startswith(('Definitions/', 'TOSCA-Metadata/'))]
    files[layout.TOSCA_META] = meta.render(parsed).encode()
    with zipfile.ZipFile(target, 'w') as archive:
        for member, data in files.items():
            archive.writestr(member, data)
    return target


@pytest.mark.parametrize('place', ['top', 'default', 'valid_values'])
def test_verify_refuses_an_id_changed_in_one_place(capsys, tmp_path,
                                                   built_package, place):
    bad = _with_one_place_changed(built_package, tmp_path / 'bad.zip',
                                  place)
    status, _, err = run(capsys, 'verify', str(bad))
    assert status == 1
    found = {'top': NEW_ID if place == 'top' else SAMPLE_ID,
             'default': NEW_ID if place == 'default' else SAMPLE_ID,
             'valid_values': NEW_ID if place == 'valid_values'
             else SAMPLE_ID}
    assert err.splitlines() == [
        'problem: the VNFD id (descriptor_id) disagrees: '
        f'{TOP} {TOP_FIELD} is {found["top"]}; '
        f'{TYPES} {TYPE_FIELD}.default is {found["default"]}; '
        f'{TYPES} {TYPE_FIELD}.constraints[0].valid_values is '
        f'[{found["valid_values"]}]. Tacker refuses such a package on '
        "upload (a ValidationError only in tacker-conductor's log; the "
        'package stays CREATED): give all of them one id, e.g. with '
        'kubernetes-mgmt package build --descriptor-id ID',
        f'{bad}: 1 problem(s)']


def test_build_refuses_a_source_whose_ids_disagree_unless_told_the_id(
        capsys, tmp_path, sol001_dir):
    source = tmp_path / 'mine'
    shutil.copytree(layout.sample_package_dir(), source)
    top = source / TOP
    top.write_text(top.read_text().replace(SAMPLE_ID, NEW_ID))
    output = tmp_path / 'mine.zip'
    status, out, err = run(capsys, 'build', '-o', str(output), '--source',
                           str(source), '--sol001-dir', str(sol001_dir))
    assert (status, out) == (1, '')
    assert err.startswith('error: the VNFD id (descriptor_id) disagrees: '
                          f'{TOP} {TOP_FIELD} is {NEW_ID}; ')
    assert not output.exists()
    status, out, err = run(capsys, 'build', '-o', str(output), '--source',
                           str(source), '--sol001-dir', str(sol001_dir),
                           '--descriptor-id', NEW_ID)
    assert (status, err) == (0, '')
    status, out, err = run(capsys, 'verify', str(output))
    assert (status, err) == (0, '')
    assert f'VNFD id:    {NEW_ID}' in out

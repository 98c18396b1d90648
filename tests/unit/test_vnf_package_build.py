"""``kubernetes-mgmt package build``."""
from __future__ import annotations

import hashlib
import stat
import zipfile
from pathlib import Path

import pytest
import yaml

from kubernetes_mgmt import scripts_dir
from kubernetes_mgmt.vnf_package import image, layout, meta, sol001
from kubernetes_mgmt.vnf_package.build import BuildOptions, build
from kubernetes_mgmt_lab.package_cli import run_package as run
from kubernetes_mgmt_lab.package_cli import zip_members as members

QCOW2_HEAD = b'QFI\xfb\x00\x00\x00\x03' + bytes(504)
FLAVOURS = ('simple', 'complex', 'podaffinity')
FLAVOUR_FILES = tuple(f'Definitions/kubernetes_mgmt_df_{f}.yaml'
                      for f in FLAVOURS)
PV_MANIFESTS = tuple(f'Files/kubernetes/nfs-pv{i}.yaml' for i in (1, 2, 3))


def tosca_meta(path: Path) -> meta.ToscaMeta:
    return meta.parse(members(path)[layout.TOSCA_META].decode())


def test_build_then_verify_succeeds(capsys, tmp_path, sol001_dir):
    output = tmp_path / 'k8s.zip'
    status, out, err = run(capsys, 'build', '-o', str(output),
                           '--sol001-dir', str(sol001_dir))
    assert (status, err) == (0, '')
    assert f'VNF package written: {output}' in out
    assert 'NOTE: no --image given' in out
    status, out, err = run(capsys, 'verify', str(output))
    assert (status, err) == (0, '')
    assert f'{output}: OK' in out
    assert 'flavours:   simple, complex, podaffinity' in out
    assert 'manifests:  3 Kubernetes manifest file(s)' in out


def test_default_output_name(capsys, tmp_path, monkeypatch, sol001_dir):
    monkeypatch.chdir(tmp_path)
    status, _, _ = run(capsys, 'build', '--sol001-dir', str(sol001_dir))
    assert status == 0
    assert (tmp_path / 'kubernetes_mgmt_vnf_package.zip').is_file()


def test_same_input_gives_the_same_bytes(tmp_path, sol001_dir):
    first, second = tmp_path / 'a.zip', tmp_path / 'b.zip'
    for output in (first, second):
        build(BuildOptions(output=output, sol001_dir=sol001_dir))
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as archive:
        infos = archive.infolist()
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
    assert infos[0].filename == layout.TOSCA_META
    assert [i.filename for i in infos[1:]] == sorted(
        i.filename for i in infos[1:])


def test_driver_is_the_installed_module_byte_for_byte(built_package):
    assert members(built_package)[layout.DRIVER_FILE] == \
        layout.installed_driver_file().read_bytes()


def test_scripts_and_sol001_files_are_packed(built_package, sol001_dir):
    files = members(built_package)
    for script in Path(scripts_dir()).glob('*.sh'):
        assert files[f'Scripts/{script.name}'] == script.read_bytes()
    for name in sol001.FILES:
        assert files[f'Definitions/{name}'] == (sol001_dir / name).read_bytes()
    with zipfile.ZipFile(built_package) as archive:
        mode = archive.getinfo('Scripts/install_k8s_cluster.sh') \
            .external_attr >> 16
    assert stat.S_IMODE(mode) == 0o755


def test_tosca_meta_hashes_every_file_but_the_definitions(built_package):
    files = members(built_package)
    parsed = tosca_meta(built_package)
    assert parsed.problems == []
    assert parsed.header['Entry-Definitions'] == \
        'Definitions/kubernetes_mgmt_top.vnfd.yaml'
    assert parsed.header['Created-By'].startswith('tacker-kubernetes-mgmt ')
    listed = {a.name: a for a in parsed.artifacts}
    assert set(listed) == {n for n in files if not n.startswith(
        ('Definitions/', 'TOSCA-Metadata/'))}
    assert {'Scripts/kubernetes_mgmt.py', 'Scripts/install_k8s_cluster.sh',
            'UserData/k8s_cluster_user_data.py',
            'Files/images/kubernetes-mgmt-placeholder.img',
            *PV_MANIFESTS} <= set(listed)
    for name, artifact in listed.items():
        assert artifact.algorithm == 'SHA-256'
        assert artifact.hash == hashlib.sha256(files[name]).hexdigest()


def test_placeholder_image_is_described_in_the_vnfd(built_package):
    files = members(built_package)
    data = files['Files/images/kubernetes-mgmt-placeholder.img']
    assert b'NOT A BOOTABLE VM IMAGE' in data
    for name in FLAVOUR_FILES:
        text = files[name].decode()
        assert '@IMAGE_' not in text
        nodes = yaml.safe_load(text)['topology_template']['node_templates']
        vdus = {n: v for n, v in nodes.items()
                if v['type'] == 'tosca.nodes.nfv.Vdu.Compute'}
        assert {'masterNode', 'workerNode'} <= set(vdus)
        for vdu in vdus:
            props = vdus[vdu]['properties']['sw_image_data']
            assert props['checksum'] == {
                'algorithm': 'sha-512',
                'hash': hashlib.sha512(data).hexdigest()}
            assert props['disk_format'] == 'raw'
            assert props['size'] == f'{len(data)} B'
            assert vdus[vdu]['artifacts']['sw_image']['file'] == \
                '../Files/images/kubernetes-mgmt-placeholder.img'


def test_given_image_is_packed_and_described(capsys, tmp_path, sol001_dir):
    source = tmp_path / 'ubuntu-24.04.img'
    source.write_bytes(QCOW2_HEAD + b'disk')
    output = tmp_path / 'k8s.zip'
    status, out, _ = run(capsys, 'build', '-o', str(output), '--image',
                         str(source), '--sol001-dir', str(sol001_dir))
    assert status == 0
    assert 'Files/images/ubuntu-24.04.img (qcow2' in out
    assert 'NOTE' not in out
    files = members(output)
    assert files['Files/images/ubuntu-24.04.img'] == source.read_bytes()
    assert 'Files/images/kubernetes-mgmt-placeholder.img' not in files
    vnfd = yaml.safe_load(files[FLAVOUR_FILES[0]])
    master = vnfd['topology_template']['node_templates']['masterNode']
    assert master['properties']['sw_image_data']['disk_format'] == 'qcow2'
    assert master['properties']['sw_image_data']['checksum']['hash'] == \
        hashlib.sha512(source.read_bytes()).hexdigest()
    assert master['artifacts']['sw_image']['file'] == \
        '../Files/images/ubuntu-24.04.img'
    with zipfile.ZipFile(output) as archive:
        info = archive.getinfo('Files/images/ubuntu-24.04.img')
    assert info.compress_type == zipfile.ZIP_STORED
    status, out, err = run(capsys, 'verify', str(output))
    assert (status, err) == (0, '')


@pytest.mark.parametrize('head, name, expected', [
    (QCOW2_HEAD, 'x.img', 'qcow2'),
    (b'KDMV' + bytes(60), 'x.bin', 'vmdk'),
    (bytes(64), 'x.iso', 'iso'),
    (bytes(64), 'x.img', 'raw'),
    (bytes(0x8001) + b'CD001', 'x', 'iso'),
])
def test_disk_format(head, name, expected):
    assert image.disk_format(head, name) == expected


def test_image_name_must_be_safe(capsys, tmp_path, sol001_dir):
    source = tmp_path / 'my image;rm.img'
    source.write_bytes(b'x')
    status, _, err = run(capsys, 'build', '-o', str(tmp_path / 'k.zip'),
                         '--image', str(source),
                         '--sol001-dir', str(sol001_dir))
    assert status == 1
    assert 'rename the file' in err
    assert not (tmp_path / 'k.zip').exists()


def test_missing_image_and_sol001_dir_are_clear_errors(capsys, tmp_path,
                                                      sol001_dir):
    status, _, err = run(capsys, 'build', '-o', str(tmp_path / 'k.zip'),
                         '--sol001-dir', str(tmp_path))
    assert status == 1
    assert err.startswith(f'error: --sol001-dir {tmp_path} has no '
                          'etsi_nfv_sol001_common_types.yaml')
    status, _, err = run(capsys, 'build', '-o', str(tmp_path / 'k.zip'),
                         '--image', str(tmp_path / 'nope.img'),
                         '--sol001-dir', str(sol001_dir))
    assert status == 1
    assert 'nope.img: no such file' in err


def test_output_directory_must_exist(capsys, tmp_path, sol001_dir):
    status, _, err = run(capsys, 'build', '-o',
                         str(tmp_path / 'no' / 'k.zip'),
                         '--sol001-dir', str(sol001_dir))
    assert status == 1
    assert 'does not exist' in err


# -- where the SOL001 files come from -------------------------------------

def test_sol001_dir_comes_first(tmp_path, sol001_dir):
    found = sol001.locate(sol001_dir)
    assert found.directory == sol001_dir
    assert '--sol001-dir' in found.origin


def test_cache_is_used_without_download(tmp_path, monkeypatch, sol001_dir):
    monkeypatch.setattr(sol001, 'installed_tacker_dir', lambda: None)
    cached = tmp_path / f'sol001-tacker-{sol001.TACKER_RELEASE}'
    cached.mkdir()
    for name in sol001.FILES:
        (cached / name).write_bytes((sol001_dir / name).read_bytes())

    def no_download(work):
        raise AssertionError('downloaded although the cache is good')
    monkeypatch.setattr(sol001, '_download_wheel', no_download)
    found = sol001.locate(cache_dir=tmp_path)
    assert found.directory == cached
    assert 'PyPI' in found.origin


def fake_wheel(work: Path, files: dict[str, bytes]) -> Path:
    wheel = work / f'tacker-{sol001.TACKER_RELEASE}-py3-none-any.whl'
    with zipfile.ZipFile(wheel, 'w') as archive:
        for name, data in files.items():
            archive.writestr(f'tacker/{sol001.TACKER_DATA_DIR}/{name}', data)
    return wheel


def test_download_fills_the_cache(tmp_path, monkeypatch, sol001_dir):
    monkeypatch.setattr(sol001, 'installed_tacker_dir', lambda: None)
    real = {n: (sol001_dir / n).read_bytes() for n in sol001.FILES}
    monkeypatch.setattr(sol001, '_download_wheel',
                        lambda work: fake_wheel(work, real))
    found = sol001.locate(cache_dir=tmp_path, fetch=True)
    for name in sol001.FILES:
        assert (found.directory / name).read_bytes() == real[name]


def test_download_with_other_content_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(sol001, 'installed_tacker_dir', lambda: None)
    monkeypatch.setattr(sol001, '_download_wheel', lambda work: fake_wheel(
        work, {n: b'tampered' for n in sol001.FILES}))
    with pytest.raises(sol001.Sol001Error, match='SHA-256 differs'):
        sol001.locate(cache_dir=tmp_path, fetch=True)


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """An environment without tacker, with an empty cache, where any
    download fails the test."""
    monkeypatch.setattr(sol001, 'installed_tacker_dir', lambda: None)
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'cache'))

    def no_network(work):
        raise AssertionError('package build went to PyPI')
    monkeypatch.setattr(sol001, '_download_wheel', no_network)
    return tmp_path


def test_build_without_tacker_names_the_options_and_downloads_nothing(
        capsys, offline):
    output = offline / 'k.zip'
    status, out, err = run(capsys, 'build', '-o', str(output))
    assert (status, out) == (1, '')
    assert len(err.splitlines()) == 1
    assert err.startswith('error: the ETSI SOL001 type files '
                          '(etsi_nfv_sol001_common_types.yaml, '
                          'etsi_nfv_sol001_vnfd_types.yaml) were not found')
    assert ('Pass --sol001-dir DIR (a directory with the two files, or the '
            'virtualenv tacker-conductor runs in), or --fetch-sol001 to '
            'download tacker==16.0.0 from PyPI once') in err
    assert not output.exists()


def test_fetch_sol001_downloads_once_then_builds_offline(
        capsys, offline, monkeypatch, sol001_dir):
    real = {n: (sol001_dir / n).read_bytes() for n in sol001.FILES}
    monkeypatch.setattr(sol001, '_download_wheel',
                        lambda work: fake_wheel(work, real))
    status, out, err = run(capsys, 'build', '-o', str(offline / 'a.zip'),
                           '--fetch-sol001')
    assert (status, err) == (0, '')
    assert 'SOL001 types:  tacker 16.0.0 from PyPI (--fetch-sol001, ' \
        'cached in' in out

    def no_network(work):
        raise AssertionError('downloaded again')
    monkeypatch.setattr(sol001, '_download_wheel', no_network)
    status, out, err = run(capsys, 'build', '-o', str(offline / 'b.zip'))
    assert (status, err) == (0, '')
    for name in sol001.FILES:
        assert members(offline / 'b.zip')[f'Definitions/{name}'] == \
            real[name]


@pytest.mark.parametrize('layout_of', [
    'lib/python3.11/site-packages/tacker',   # a virtualenv
    'tacker',                                 # site-packages, source tree
    '',                                       # the tacker package itself
])
def test_sol001_dir_may_be_a_tacker_installation(capsys, offline,
                                                 sol001_dir, layout_of):
    installation = offline / 'tacker-venv'
    data = installation / layout_of / sol001.TACKER_DATA_DIR
    data.mkdir(parents=True)
    for name in sol001.FILES:
        (data / name).write_bytes((sol001_dir / name).read_bytes())
    output = offline / 'k.zip'
    status, out, err = run(capsys, 'build', '-o', str(output),
                           '--sol001-dir', str(installation))
    assert (status, err) == (0, '')
    assert f'SOL001 types:  {data} (--sol001-dir)' in out
    for name in sol001.FILES:
        assert members(output)[f'Definitions/{name}'] == \
            (sol001_dir / name).read_bytes()


def test_repository_does_not_carry_the_sol001_files():
    sample = layout.sample_package_dir()
    for name in sol001.FILES:
        assert not (sample / 'Definitions' / name).exists()


def test_every_flavour_and_its_base_hot_is_packed(built_package):
    files = members(built_package)
    sample = layout.sample_package_dir()
    top = yaml.safe_load(files['Definitions/kubernetes_mgmt_top.vnfd.yaml'])
    for flavour, name in zip(FLAVOURS, FLAVOUR_FILES, strict=True):
        assert name.rsplit('/', 1)[1] in top['imports']
        vnfd = yaml.safe_load(files[name])
        assert vnfd['topology_template']['substitution_mappings'][
            'properties'] == {'flavour_id': flavour}
        hot = [n for n in files if n.startswith(f'BaseHOT/{flavour}/')]
        assert sorted(hot) == [
            f'BaseHOT/{flavour}/kubernetes_mgmt_{flavour}.hot.yaml',
            f'BaseHOT/{flavour}/nested/nested_master.yaml',
            f'BaseHOT/{flavour}/nested/nested_worker.yaml']
        for member in hot:      # byte for byte: no token in the BaseHOT
            assert files[member] == (sample / member).read_bytes()


def test_pv_manifests_are_packed_and_hashed(built_package):
    files = members(built_package)
    sample = layout.sample_package_dir()
    packed = sorted(n for n in files if n.startswith(f'{layout.MANIFESTS}/'))
    assert packed == list(PV_MANIFESTS)
    listed = {a.name: a for a in tosca_meta(built_package).artifacts}
    for name in PV_MANIFESTS:
        assert files[name] == (sample / name).read_bytes()
        assert listed[name].hash == hashlib.sha256(files[name]).hexdigest()
        assert listed[name].content_type == 'application/yaml'


def test_a_package_source_with_other_names_builds_and_verifies(
        capsys, tmp_path, sol001_dir):
    from kubernetes_mgmt_lab.renamed import RENAMES, renamed_package
    source = tmp_path / 'mine'
    vnfd_id = renamed_package(layout.sample_package_dir(), source,
                              master_scale_level=2)
    output = tmp_path / 'mine.zip'
    status, out, err = run(capsys, 'build', '-o', str(output), '--source',
                           str(source), '--sol001-dir', str(sol001_dir))
    assert (status, err) == (0, '')
    assert f'sample:        {source}' in out
    status, out, err = run(capsys, 'verify', str(output))
    assert (status, err) == (0, ''), out
    files = members(output)
    vnfd = files['Definitions/kubernetes_mgmt_top.vnfd.yaml'].decode()
    assert vnfd_id in vnfd
    hot = files['BaseHOT/simple/nested/nested_master.yaml'].decode()
    assert 'cpNode' in hot and 'cp_port' in hot
    aspects = yaml.safe_load(
        files['Definitions/kubernetes_mgmt_df_simple.yaml'])[
        'topology_template']['policies'][0]['scaling_aspects'][
        'properties']['aspects']
    assert {a: v['max_scale_level'] for a, v in aspects.items()} == {
        'cp_group': 2, 'wk_group': 14}
    for name in files:
        if name.startswith(('Definitions/kubernetes_mgmt_df', 'BaseHOT/')):
            text = files[name].decode()
            assert not [old for old in RENAMES if old in text], name


def test_a_source_that_is_not_a_package_is_refused(capsys, tmp_path,
                                                   sol001_dir):
    status, _, err = run(capsys, 'build', '-o', str(tmp_path / 'k.zip'),
                         '--source', str(tmp_path), '--sol001-dir',
                         str(sol001_dir))
    assert status == 1
    assert err == (f'error: {tmp_path} is not a VNF package source: it '
                   'has no TOSCA-Metadata/TOSCA.meta\n')
    assert not (tmp_path / 'k.zip').exists()

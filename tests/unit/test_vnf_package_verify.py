"""``kubernetes-mgmt package verify``: each problem gets a clear line."""
from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from kubernetes_mgmt.cluster import script
from kubernetes_mgmt.vnf_package import layout, meta
from kubernetes_mgmt_lab.package_cli import problems, run_package

INSTALL_SCRIPT = 'Scripts/install_k8s_cluster.sh'
USER_DATA = 'UserData/k8s_cluster_user_data.py'
PLACEHOLDER = 'Files/images/kubernetes-mgmt-placeholder.img'
PV_REQUEST = 'simple_kubernetes_pv_param_file.json'
REQUESTS = ('complex', 'podaffinity', 'simple', PV_REQUEST)
PV1 = 'Files/kubernetes/nfs-pv1.yaml'
PV_KEY = ('additionalParams.k8s_cluster_installation_param.'
          'pv_registration_params[0].pv_manifest_file_path')
# Vdu.Compute nodes with an image: masterNode and workerNode in every
# flavour, and the storage server in simple.
IMAGE_VDUS = 7


def request_file(name: str) -> str:
    return name if name.endswith('.json') else \
        f'{name}_kubernetes_param_file.json'


def verify(capsys, *argv: str) -> tuple[int, str, str]:
    return run_package(capsys, 'verify', *argv)


def rewrite(source: Path, target: Path, changes: dict[str, bytes | None],
            rehash: bool = True) -> Path:
    """Copy a CSAR with members replaced (bytes), added or removed (None);
    with ``rehash`` TOSCA.meta follows, so only the change itself is
    wrong."""
    with zipfile.ZipFile(source) as archive:
        files = {n: archive.read(n) for n in archive.namelist()}
    for name, data in changes.items():
        if data is None:
            files.pop(name, None)
        else:
            files[name] = data
    if rehash:
        parsed = meta.parse(files[layout.TOSCA_META].decode())
        parsed.artifacts = [
            meta.Artifact(n, 'SHA-256', hashlib.sha256(files[n]).hexdigest())
            for n in sorted(files) if not n.startswith(
                ('Definitions/', 'TOSCA-Metadata/'))]
        files[layout.TOSCA_META] = meta.render(parsed).encode()
    with zipfile.ZipFile(target, 'w') as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return target


def read(path: Path, name: str) -> bytes:
    with zipfile.ZipFile(path) as archive:
        return archive.read(name)


def test_good_package(capsys, built_package):
    status, out, err = verify(capsys, str(built_package))
    assert (status, err) == (0, '')
    # The driver, the install script, the user data, the image, 3 PV
    # manifests and 3 BaseHOT files for each of the 3 flavours.
    for expected in ('16 artifacts match TOSCA.meta',
                     'flavours:   simple, complex, podaffinity',
                     f'{layout.DRIVER_FILE} is the installed module',
                     ', '.join(request_file(r) for r in REQUESTS),
                     f'user data:  {USER_DATA} (KubernetesClusterUserData) '
                     "(read, not run: Tacker's base, the methods Tacker "
                     'calls)',
                     '3 Kubernetes manifest file(s)'):
        assert expected in out


def test_wrong_hash_in_tosca_meta(capsys, tmp_path, built_package):
    text = read(built_package, layout.TOSCA_META).decode()
    digest = hashlib.sha256(read(built_package, INSTALL_SCRIPT)).hexdigest()
    assert digest in text
    bad = rewrite(built_package, tmp_path / 'bad.zip', {
        layout.TOSCA_META: text.replace(digest, '0' * 64).encode()},
        rehash=False)
    status, _, err = verify(capsys, str(bad))
    assert status == 1
    assert problems(err) == [
        f'TOSCA.meta: the SHA-256 of {INSTALL_SCRIPT} is {"0" * 64}, but '
        f'the file has {digest}: it changed after the package was built '
        '(Tacker rejects the upload); rebuild with kubernetes-mgmt package '
        'build']
    assert err.splitlines()[-1] == f'{bad}: 1 problem(s)'


def test_driver_file_differs_from_the_installed_module(capsys, tmp_path,
                                                       built_package):
    old = read(built_package, layout.DRIVER_FILE) + b'# older release\n'
    bad = rewrite(built_package, tmp_path / 'old.zip',
                  {layout.DRIVER_FILE: old})
    status, _, err = verify(capsys, str(bad))
    assert status == 1
    [problem] = problems(err)
    assert problem.startswith(
        f'{layout.DRIVER_FILE} differs from the installed driver module '
        f'{layout.installed_driver_file()}')
    assert 'the package was built for another plugin version' in problem
    assert problem.endswith(
        'Rebuild the package with kubernetes-mgmt package build and upload '
        'it, or install the plugin version the package was built for')


def test_install_script_of_another_contract_is_reported(capsys, tmp_path,
                                                        built_package):
    text = read(built_package, INSTALL_SCRIPT).decode()
    ours = f'readonly CONTRACT_VERSION={script.CONTRACT_VERSION}\n'
    assert ours in text
    status, out, _ = verify(capsys, str(built_package))
    assert f'scripts:    {INSTALL_SCRIPT} (install-script contract ' \
        f'{script.CONTRACT_VERSION})' in out
    old = rewrite(built_package, tmp_path / 'old.zip', {
        INSTALL_SCRIPT: text.replace(ours, 'readonly CONTRACT_VERSION=1\n')
        .encode()})
    status, _, err = verify(capsys, str(old))
    assert status == 1
    assert problems(err) == [
        f'{INSTALL_SCRIPT} speaks install-script contract version 1, this '
        f'plugin speaks version {script.CONTRACT_VERSION}. Rebuild the VNF '
        "package with this plugin version's script (kubernetes-mgmt package "
        'build) and upload it, or install the plugin version that matches '
        'the package.']


def test_referenced_path_missing(capsys, tmp_path, built_package):
    bad = rewrite(built_package, tmp_path / 'noscript.zip',
                  {INSTALL_SCRIPT: None})
    status, _, err = verify(capsys, str(bad))
    assert status == 1
    key = 'additionalParams.k8s_cluster_installation_param.script_path'
    assert problems(err) == [
        f'{request_file(name)}: {key} {INSTALL_SCRIPT} is not in the '
        'package' for name in REQUESTS]


def test_pv_manifest_missing(capsys, tmp_path, built_package):
    bad = rewrite(built_package, tmp_path / 'nopv.zip', {PV1: None})
    status, _, err = verify(capsys, str(bad))
    assert status == 1
    assert problems(err) == [
        f'{PV_REQUEST}: {PV_KEY} {PV1} is not in the package']


@pytest.mark.parametrize('manifest, problem', [
    (b'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n',
     f"'{PV1}' is a ConfigMap (v1), not a v1 PersistentVolume"),
    (b'apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: x}\n'
     b'spec:\n  capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n'
     b'  nfs: {server: 0.0.0.0, path: /srv/elsewhere}\n',
     f"'{PV1}': spec.nfs.path '/srv/elsewhere' is not exported by the "
     'storage server (its nfs_server_setup_params export /volume/nfs/pv1, '
     '/volume/nfs/pv2, /volume/nfs/pv3)'),
])
def test_pv_manifest_the_driver_cannot_register(capsys, tmp_path,
                                                built_package, manifest,
                                                problem):
    bad = rewrite(built_package, tmp_path / 'badpv.zip', {PV1: manifest})
    status, _, err = verify(capsys, str(bad))
    assert status == 1
    assert problems(err) == [f'{PV_REQUEST}: {PV_KEY}: {problem}']


def test_vnfd_artifact_missing(capsys, tmp_path, built_package):
    bad = rewrite(built_package, tmp_path / 'noimage.zip',
                  {PLACEHOLDER: None})
    status, _, err = verify(capsys, str(bad))
    assert status == 1
    found = problems(err)
    assert len(found) == IMAGE_VDUS
    for vdu in ('masterNode', 'storage_server'):
        assert ('Definitions/kubernetes_mgmt_df_simple.yaml: '
                f'{vdu}.artifacts.sw_image: file ../Files/images/'
                'kubernetes-mgmt-placeholder.img is not in the package') \
            in found


def test_missing_import_and_base_hot(capsys, tmp_path, built_package):
    bad = rewrite(built_package, tmp_path / 'nohot.zip', {
        'Definitions/kubernetes_mgmt_types.yaml': None,
        'BaseHOT/simple/nested/nested_worker.yaml': None})
    status, _, err = verify(capsys, str(bad))
    assert status == 1
    found = problems(err)
    assert ('Definitions/kubernetes_mgmt_top.vnfd.yaml references '
            'Definitions/kubernetes_mgmt_types.yaml, which is not in the '
            'package') in found
    assert ('BaseHOT/simple/kubernetes_mgmt_simple.hot.yaml: resource '
            'worker_instance has type nested_worker.yaml, but BaseHOT/'
            'simple/nested/nested_worker.yaml is not in the package') \
        in found


def test_unlisted_file(capsys, tmp_path, built_package):
    bad = rewrite(built_package, tmp_path / 'extra.zip',
                  {'Scripts/extra.sh': b'echo hi\n'}, rehash=False)
    status, _, err = verify(capsys, str(bad))
    assert status == 1
    assert problems(err) == [
        'Scripts/extra.sh is not listed in TOSCA.meta (no hash): rebuild '
        'with kubernetes-mgmt package build']


def test_image_checksum_in_the_vnfd_must_match(capsys, tmp_path,
                                               built_package):
    bad = rewrite(built_package, tmp_path / 'image.zip',
                  {PLACEHOLDER: b'another image'})
    status, _, err = verify(capsys, str(bad))
    assert status == 1
    found = problems(err)
    assert len(found) == IMAGE_VDUS
    assert all('Glance would reject the image' in p for p in found)


def test_broken_user_data_class(capsys, tmp_path, built_package):
    source = read(built_package, USER_DATA).replace(
        b'class KubernetesClusterUserData(', b'class Renamed(')
    bad = rewrite(built_package, tmp_path / 'ud.zip', {USER_DATA: source})
    status, _, err = verify(capsys, str(bad))
    assert status == 1
    assert problems(err) == [
        f'{name}_kubernetes_param_file.json: {USER_DATA} '
        '(KubernetesClusterUserData): it defines no class '
        'KubernetesClusterUserData' for name in ('complex',)]


def test_user_data_importing_what_the_package_lacks(capsys, tmp_path,
                                                    built_package):
    source = b'import UserData.no_such_helper\n' + read(built_package,
                                                        USER_DATA)
    bad = rewrite(built_package, tmp_path / 'ud.zip', {USER_DATA: source})
    status, _, err = verify(capsys, str(bad))
    assert status == 1
    assert problems(err) == [
        f'complex_kubernetes_param_file.json: {USER_DATA} '
        f'(KubernetesClusterUserData): {USER_DATA}:1: imports '
        'UserData.no_such_helper, which is not in the package']


def test_sample_zipped_without_build(capsys, tmp_path, built_package):
    sample = layout.sample_package_dir()
    name = 'Definitions/kubernetes_mgmt_df_simple.yaml'
    bad = rewrite(built_package, tmp_path / 'raw.zip',
                  {name: (sample / name).read_bytes()})
    status, _, err = verify(capsys, str(bad))
    assert status == 1
    assert (f'{name} still has @IMAGE_SHA512@: the package was zipped from '
            'the sample, not built; use kubernetes-mgmt package build') \
        in problems(err)


def test_extra_request_is_checked(capsys, tmp_path, built_package):
    body = json.loads((layout.request_samples_dir() /
                       'simple_kubernetes_param_file.json').read_text())
    body['flavourId'] = 'large'
    body['additionalParams']['k8s_cluster_installation_param'][
        'pv_registration_params'] = [{
            'pv_manifest_file_path': 'Files/kubernetes/pv.yaml',
            'nfs_server_cp': 'storage_server_CP'}]
    request = tmp_path / 'mine.json'
    request.write_text(json.dumps(body))
    status, _, err = verify(capsys, str(built_package), '--request',
                            str(request))
    assert status == 1
    assert problems(err) == [
        'mine.json: flavourId large is not a flavour of the VNFD '
        '(simple, complex, podaffinity)',
        'mine.json: additionalParams.k8s_cluster_installation_param.'
        'pv_registration_params[0].pv_manifest_file_path '
        'Files/kubernetes/pv.yaml is not in the package']


@pytest.mark.parametrize('content', [None, b'not a zip', 'dir'])
def test_unreadable_input_exits_2(capsys, tmp_path, content):
    path = tmp_path / 'input.zip'
    if content == 'dir':
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    status, out, err = verify(capsys, str(path))
    assert status == 2
    assert out == ''
    assert len(err.splitlines()) == 1 and err.startswith(f'error: {path}')


def test_unreadable_extra_request_exits_2(capsys, tmp_path, built_package):
    request = tmp_path / 'bad.json'
    request.write_text('{')
    status, _, err = verify(capsys, str(built_package), '--request',
                            str(request))
    assert status == 2
    assert err.startswith(f'error: {request} is not JSON')


def test_zip_without_tosca_meta(capsys, tmp_path, built_package):
    bad = rewrite(built_package, tmp_path / 'nometa.zip',
                  {layout.TOSCA_META: None}, rehash=False)
    status, _, err = verify(capsys, str(bad))
    assert status == 1
    assert problems(err) == [
        f'{layout.TOSCA_META} is missing: not a CSAR built by '
        'kubernetes-mgmt package build']


def test_damaged_member_exits_2(capsys, tmp_path, built_package):
    data = bytearray(built_package.read_bytes())
    with zipfile.ZipFile(built_package) as archive:
        info = archive.getinfo(INSTALL_SCRIPT)
    data[info.header_offset + 30 + len(info.filename) + 200] ^= 0xFF
    damaged = tmp_path / 'damaged.zip'
    damaged.write_bytes(bytes(data))
    status, _, err = verify(capsys, str(damaged))
    assert status == 2
    assert err.startswith(f'error: {damaged}: {INSTALL_SCRIPT} is corrupt')


def test_install_script_whose_key_tables_differ_is_reported(capsys, tmp_path,
                                                            built_package):
    text = read(built_package, INSTALL_SCRIPT).decode()
    edited = rewrite(built_package, tmp_path / 'edited.zip', {
        INSTALL_SCRIPT: text.replace("    [hosts]='HOSTS'\n",
                                     "    [hosts]=''\n", 1).encode()})
    status, _, err = verify(capsys, str(edited))
    assert status == 1
    [problem] = problems(err)
    assert problem.startswith(
        f'{INSTALL_SCRIPT} declares contract version '
        f'{script.CONTRACT_VERSION} but its key tables differ from this '
        "plugin's: role hosts: HOSTS (required) is missing from the script."
        ' Rebuild the VNF package')

"""Persistent volumes against the lab: a storage server VM whose volume
is a real loop device (mkfs, blkid and mount run for real), NFS server and
client emulated at the command level, PVs registered in the emulated API
server. One cluster (1 master, 1 worker, a storage server) goes through
the tests in file order.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kubernetes_mgmt.errors import MgmtDriverError, ValidationError
from kubernetes_mgmt_lab import driving, tacker_shapes
from kubernetes_mgmt_lab.emulated import ClusterView
from kubernetes_mgmt_lab.testing import unavailable_reason

pytestmark = pytest.mark.lab

EXPORTS_FILE = '/etc/exports.d/kubernetes-mgmt.exports'
MARKER = f'{driving.STORAGE_MOUNT}/marker-written-by-the-test'
CLAIM = {'apiVersion': 'v1', 'kind': 'PersistentVolumeClaim',
         'metadata': {'name': 'data', 'namespace': 'default'},
         'spec': {'accessModes': ['ReadWriteOnce'], 'storageClassName': '',
                  'volumeName': 'nfs-pv1',
                  'resources': {'requests': {'storage': '1Gi'}}}}


@pytest.fixture(scope='module')
def cluster(site):
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with driving.instantiated_lab(1, 1, storage=True, site=site) as pair:
        yield pair


@pytest.fixture
def lab(cluster):
    with driving.driver_options(cluster[0]):
        yield cluster


# -- helpers ------------------------------------------------------------------

def storage_host(lab):
    (host,) = [h for h in lab.state.hosts if h.role == 'storage']
    return host


def on_storage(lab, *argv: str) -> str:
    result = lab.run_in_host(storage_host(lab).name, list(argv))
    assert result.returncode == 0, result.stderr
    return result.stdout


VOLUME = 'storage_server_volume'
GIB = 1 << 30


def device(lab) -> str:
    """The volume's device as the storage server (the guest) names it."""
    return storage_host(lab).guest_devices.get(VOLUME, '/dev/vdb')


def filesystem(lab, dev: str) -> str:
    """blkid's TYPE of ``dev`` inside the storage server ('' for none)."""
    result = lab.run_in_host(storage_host(lab).name, [
        'blkid', '-p', '-o', 'value', '-s', 'TYPE', dev])
    assert result.returncode in (0, 2), result.stderr   # 2: nothing found
    return result.stdout.strip()


def storage_files(lab) -> dict[str, str]:
    return {path: on_storage(lab, 'cat', path)
            for path in ('/etc/fstab', EXPORTS_FILE)}


def pvs(lab) -> dict[str, dict]:
    return {pv['metadata']['name']: pv
            for pv in ClusterView(lab.state.cluster_dir).pvs()}


def master(lab):
    return next(h for h in lab.state.hosts if h.role == 'master')


def kubectl(lab, *args: str, input: str | None = None) -> str:
    result = lab.run_in_host(master(lab).name, [
        'kubectl', '--kubeconfig', '/etc/kubernetes/admin.conf', *args],
        input=input)
    assert result.returncode == 0, result.stderr
    return result.stdout


def nfs_client_installed(lab, host) -> bool:
    result = lab.run_in_host(host.name, [
        'dpkg-query', '-W', '-f=${Status}', 'nfs-common'])
    return result.returncode == 0 and \
        result.stdout == 'install ok installed'


def storage_vnfc(lab, instance) -> str:
    return driving.vnfc_of(instance, storage_host(lab))


# -- instantiate --------------------------------------------------------------

def test_volume_is_formatted_mounted_and_in_fstab_once(lab):
    lab, _ = lab
    dev = device(lab)
    assert on_storage(lab, 'blkid', '-p', '-o', 'value', '-s', 'TYPE',
                      dev).strip() == 'ext4'
    assert on_storage(lab, 'findmnt', '-n', '-o', 'SOURCE',
                      driving.STORAGE_MOUNT).strip() == dev
    uuid = on_storage(lab, 'blkid', '-p', '-o', 'value', '-s', 'UUID',
                      dev).strip()
    entries = [line.split() for line in
               on_storage(lab, 'cat', '/etc/fstab').splitlines()
               if line.strip() and not line.startswith('#')]
    mine = [e for e in entries if e[1] == driving.STORAGE_MOUNT]
    assert mine == [[f'UUID={uuid}', driving.STORAGE_MOUNT, 'ext4',
                     'defaults,nofail', '0', '2']]


def test_each_directory_is_exported_once_to_the_cluster(lab):
    lab, _ = lab
    active = [line.split() for line in
              on_storage(lab, 'exportfs', '-s').splitlines() if line]
    assert sorted(line[0] for line in active) == \
        sorted(driving.STORAGE_EXPORTS)
    for line in active:
        assert line[1].startswith(f'{lab.state.subnet}(')
        assert 'rw' in line[1] and 'sync' in line[1]
        on_storage(lab, 'test', '-d', line[0])
    lines = [line for line in on_storage(lab, 'cat', EXPORTS_FILE)
             .splitlines() if not line.startswith('#')]
    assert sorted(line.split()[0] for line in lines) == \
        sorted(driving.STORAGE_EXPORTS)


def test_every_node_has_the_nfs_client(lab):
    lab, _ = lab
    nodes = [h for h in lab.state.hosts if h.role != 'storage']
    assert nodes and all(nfs_client_installed(lab, h) for h in nodes)


def test_pvs_point_at_the_storage_server_and_are_available(lab):
    lab, instance = lab
    found = pvs(lab)
    assert sorted(found) == ['nfs-pv1', 'nfs-pv2']
    for pv in found.values():
        assert pv['spec']['nfs']['server'] == storage_host(lab).ip
        assert pv['spec']['nfs']['path'] in driving.STORAGE_EXPORTS
        assert pv['status']['phase'] == 'Available'
    state = driving.stored_state(lab, instance)
    assert state.storage_server == storage_host(lab).server_id


def test_second_instantiate_end_changes_nothing(lab):
    lab, instance = lab
    on_storage(lab, 'sh', '-c', f'echo keep > {MARKER}')
    files = storage_files(lab)
    uuid = on_storage(lab, 'blkid', '-p', '-o', 'value', '-s', 'UUID',
                      device(lab))
    uids = {name: pv['metadata']['uid'] for name, pv in pvs(lab).items()}
    request, _ = driving.new_instance(lab)
    driving.instantiate_end(request, instance, lab)
    assert on_storage(lab, 'cat', MARKER) == 'keep\n'   # no second mkfs
    assert on_storage(lab, 'blkid', '-p', '-o', 'value', '-s', 'UUID',
                      device(lab)) == uuid
    assert storage_files(lab) == files
    assert {n: pv['metadata']['uid'] for n, pv in pvs(lab).items()} == uids


# -- the volume's identity ----------------------------------------------------

def test_volume_at_another_device_than_nova_reports_is_found_by_id(lab):
    lab, instance = lab
    host = storage_host(lab)
    reported = device(lab)
    uuid = on_storage(lab, 'blkid', '-p', '-o', 'value', '-s', 'UUID',
                      reported)
    # The guest now names the volume /dev/vdc, and a blank disk of the
    # same size is where Nova says the volume is.
    lab.move_volume(host.name, VOLUME, '/dev/vdc')
    lab.add_blank_disk(host.name, reported, GIB)
    heat = driving.heat_client(lab).resources.get(
        lab.state.stack_id, VOLUME).attributes
    assert heat['attachments'][0]['device'] == reported
    request, _ = driving.new_instance(lab)
    driving.instantiate_end(request, instance, lab)
    assert on_storage(lab, 'cat', MARKER) == 'keep\n'    # data kept
    assert filesystem(lab, reported) == ''              # blank stays blank
    assert on_storage(lab, 'blkid', '-p', '-o', 'value', '-s', 'UUID',
                      '/dev/vdc') == uuid
    assert on_storage(lab, 'mountpoint', '-d', driving.STORAGE_MOUNT) == \
        on_storage(lab, 'mountpoint', '-x', '/dev/vdc')


def test_a_disk_with_the_volumes_id_but_another_size_is_never_formatted(
        lab):
    lab, instance = lab
    host = storage_host(lab)
    files = storage_files(lab)
    volume_id = host.volume_ids[VOLUME]
    # A blank 2 GiB disk claims the volume's serial; Cinder says 1 GiB.
    lab.add_blank_disk(host.name, '/dev/vdd', 2 * GIB, serial_of=VOLUME)
    request, _ = driving.new_instance(lab)
    try:
        with pytest.raises(MgmtDriverError) as info:
            driving.instantiate_end(request, instance, lab)
        message = str(info.value)
        assert host.ip in message and volume_id in message
        assert f'/dev/vdd has {2 * GIB} bytes, but Cinder\'s volume has ' \
            f'1 GiB ({GIB} bytes)' in message
        assert 'nothing was formatted' in message
        assert filesystem(lab, '/dev/vdd') == ''        # never formatted
        assert on_storage(lab, 'cat', MARKER) == 'keep\n'
        assert storage_files(lab) == files
    finally:
        lab.move_volume(host.name, VOLUME, '/dev/vdc')  # its link back
    request, _ = driving.new_instance(lab)
    driving.instantiate_end(request, instance, lab)
    assert on_storage(lab, 'cat', MARKER) == 'keep\n'


# -- bad manifests ------------------------------------------------------------

def _package_copy(lab, tmp_path: Path) -> Path:
    copy = tmp_path / 'package'
    shutil.copytree(lab.package_dir, copy, symlinks=True)
    return copy


@pytest.mark.parametrize('damage, fragment', [
    (lambda pv: pv.write_text(
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n'),
     'is a ConfigMap (v1), not a v1 PersistentVolume'),
    (lambda pv: pv.write_text(pv.read_text().replace('nfs:', 'hostPath:')),
     'has no NFS source'),
    (lambda pv: (pv.unlink(), pv.symlink_to('/etc/hostname')),
     'leads outside the VNF package'),
])
def test_bad_manifest_is_refused_before_any_change(lab, tmp_path, damage,
                                                   fragment):
    lab, instance = lab
    package = _package_copy(lab, tmp_path)
    damage(package / driving.PV_MANIFESTS[1])
    files, before = storage_files(lab), pvs(lab)
    request, _ = driving.new_instance(lab)
    with driving.driver_options(lab, vnf_package_dir=str(package)):
        with pytest.raises(ValidationError) as info:
            driving.instantiate_end(request, instance, lab)
    (problem,) = info.value.problems
    assert problem.path.endswith(
        'pv_registration_params[1].pv_manifest_file_path')
    assert fragment in problem.message
    assert storage_files(lab) == files and pvs(lab) == before


# -- scale and heal of nodes --------------------------------------------------

def test_scale_out_installs_the_nfs_client(lab):
    lab, instance = lab
    (new,) = driving.scale_out(lab, instance, 1)
    assert nfs_client_installed(lab, new)


def test_heal_of_a_worker_installs_the_nfs_client(lab):
    lab, instance = lab
    worker = next(h for h in lab.state.hosts if h.role == 'worker')
    driving.heal(lab, instance, [driving.vnfc_of(instance, worker)])
    healed = lab.host_at(worker.ip)        # a new VM on the same port
    assert healed.server_id != worker.server_id
    assert nfs_client_installed(lab, healed)


# -- heal of the storage server -----------------------------------------------

def test_storage_heal_is_refused_while_a_pv_is_bound(lab):
    lab, instance = lab
    kubectl(lab, 'apply', '-f', '-', input=json.dumps(CLAIM))
    assert pvs(lab)['nfs-pv1']['status']['phase'] == 'Bound'
    files, before = storage_files(lab), pvs(lab)
    server = storage_host(lab).server_id
    with pytest.raises(MgmtDriverError) as info:
        driving.heal(lab, instance, [storage_vnfc(lab, instance)])
    message = str(info.value)
    assert 'nfs-pv1 is Bound to claim default/data' in message
    assert 'nothing was changed' in message
    assert storage_host(lab).server_id == server    # not rebuilt
    assert pvs(lab) == before and storage_files(lab) == files
    assert on_storage(lab, 'cat', MARKER) == 'keep\n'


def test_storage_heal_re_registers_pvs_on_the_new_server(lab):
    lab, instance = lab
    kubectl(lab, 'delete', 'pvc', 'data', '-n', 'default')
    old = storage_host(lab)
    vnfc = storage_vnfc(lab, instance)
    request = tacker_shapes.HealVnfRequest(vnfc_instance_id=[vnfc])
    driving.hook('heal_start', instance, heal_vnf_request=request)
    assert pvs(lab) == {}                   # deleted before the rebuild
    driving.rebuild_vnfcs(lab, instance, [vnfc])
    driving.hook('heal_end', instance, heal_vnf_request=request,
                 vnf=driving.vnf_dict(instance))
    new = storage_host(lab)
    assert new.server_id != old.server_id
    found = pvs(lab)
    assert sorted(found) == ['nfs-pv1', 'nfs-pv2']
    for pv in found.values():
        assert pv['spec']['nfs']['server'] == new.ip
        assert pv['status']['phase'] == 'Available'
    # A new, empty volume: formatted, mounted, exported.
    assert on_storage(lab, 'findmnt', '-n', '-o', 'SOURCE',
                      driving.STORAGE_MOUNT).strip() == device(lab)
    assert lab.run_in_host(new.name, ['test', '-e', MARKER]).returncode == 1
    assert len(on_storage(lab, 'exportfs', '-s').splitlines()) == \
        len(driving.STORAGE_EXPORTS)
    assert driving.stored_state(lab, instance).storage_server == new.server_id


def test_whole_vnf_heal_sets_up_storage_and_pvs_again(lab):
    lab, instance = lab
    old_uids = {pv['metadata']['uid'] for pv in pvs(lab).values()}
    driving.heal_whole(lab, instance)
    new = storage_host(lab)
    assert on_storage(lab, 'findmnt', '-n', '-o', 'SOURCE',
                      driving.STORAGE_MOUNT).strip() == device(lab)
    assert len(on_storage(lab, 'exportfs', '-s').splitlines()) == \
        len(driving.STORAGE_EXPORTS)
    found = pvs(lab)
    assert sorted(found) == ['nfs-pv1', 'nfs-pv2']
    assert not old_uids & {pv['metadata']['uid'] for pv in found.values()}
    assert all(pv['spec']['nfs']['server'] == new.ip and
               pv['status']['phase'] == 'Available' for pv in found.values())
    nodes = [h for h in lab.state.hosts if h.role != 'storage']
    assert all(nfs_client_installed(lab, h) for h in nodes)
    assert driving.stored_state(lab, instance).storage_server == new.server_id


def test_a_pv_that_never_becomes_available_fails_naming_it(lab, tmp_path):
    # Last: it leaves nfs-pv2 bound to a claim that does not exist.
    lab, instance = lab
    package = _package_copy(lab, tmp_path)
    manifest = package / driving.PV_MANIFESTS[1]
    manifest.write_text(manifest.read_text().replace('spec:\n', (
        'spec:\n  claimRef: {namespace: default, name: gone}\n'), 1))
    request, _ = driving.new_instance(lab)
    with driving.driver_options(lab, vnf_package_dir=str(package),
                                volume_timeout=2):
        with pytest.raises(MgmtDriverError) as info:
            driving.instantiate_end(request, instance, lab)
    assert 'register persistent volumes: not Available after 2 s: ' \
        'nfs-pv2 (Released)' in str(info.value)
    assert pvs(lab)['nfs-pv1']['status']['phase'] == 'Available'

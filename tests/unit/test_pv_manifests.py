"""PV manifests from the VNF package: checked before anything changes,
pointed at the NFS server by editing the parsed object."""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
import yaml

from kubernetes_mgmt.errors import ValidationError
from kubernetes_mgmt.params.cluster_params import (
    ClusterParams,
    MasterParams,
    NfsExport,
    NodeGroupParams,
    PvRegistration,
    StorageServerParams,
    VolumeSetup,
)
from kubernetes_mgmt.storage.pv_manifests import load_pv_manifests

AT = ('additionalParams.k8s_cluster_installation_param.'
      'pv_registration_params[{}].pv_manifest_file_path')
PV = """\
apiVersion: v1
kind: PersistentVolume
metadata:
  name: {name}
spec:
  capacity: {{storage: 1Gi}}
  accessModes: [ReadWriteOnce]
  nfs:
    server: "0.0.0.0"   # replaced by the driver
    path: {path}
"""


def params(*files: str, exports=('/volume/nfs',)) -> ClusterParams:
    """A request of the sample simple flavour with its storage server."""
    login = {'username': 'ubuntu', 'password': 'not-used-here'}
    return ClusterParams(
        script_path='Scripts/install_k8s_cluster.sh',
        master=MasterParams(ssh_cp_name='masterNode_CP1',
                            nic_cp_name='masterNode_CP1',
                            cluster_cp_name='masterNode_CP1',
                            aspect_id='master_instance', **login),
        worker=NodeGroupParams(ssh_cp_name='workerNode_CP2',
                               nic_cp_name='workerNode_CP2',
                               aspect_id='worker_instance', **login),
        storage_server=StorageServerParams(
            ssh_cp_name='storage_server_CP', **login,
            volumes=(VolumeSetup('storage_server_volume', '/volume'),),
            exports=tuple(NfsExport(d, '10.10.0.0/24') for d in exports)),
        pv_registrations=tuple(PvRegistration(f, 'storage_server_CP')
                               for f in files))


def write(root: Path, name: str, text: str) -> str:
    path = root / 'Files' / 'kubernetes' / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return f'Files/kubernetes/{name}'


def problems(root: Path, request) -> dict[str, str]:
    with pytest.raises(ValidationError) as info:
        load_pv_manifests(root, request, {'storage_server_CP': '10.0.0.9'})
    return {p.path: p.message for p in info.value.problems}


def test_server_is_set_in_the_parsed_manifest(tmp_path):
    one = write(tmp_path, 'pv1.yaml', PV.format(name='pv1',
                                                path='/volume/nfs/pv1'))
    two = write(tmp_path, 'pv2.yaml', PV.format(name='pv2',
                                                path='/volume/nfs'))
    pvs = load_pv_manifests(tmp_path, params(one, two),
                            {'storage_server_CP': '10.0.0.9'})
    assert [(p.name, p.nfs_server, p.nfs_path) for p in pvs] == [
        ('pv1', '10.0.0.9', '/volume/nfs/pv1'),
        ('pv2', '10.0.0.9', '/volume/nfs')]
    original = yaml.safe_load((tmp_path / one).read_text())
    original['spec']['nfs']['server'] = '10.0.0.9'
    assert pvs[0].body == original      # nothing else changed


@pytest.mark.parametrize('text, fragment', [
    (PV.format(name='pv1', path='/volume/nfs') + '---\n' +
     PV.format(name='pv2', path='/volume/nfs'), 'holds 2 documents'),
    ('apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\n',
     'is a PersistentVolumeClaim (v1), not a v1 PersistentVolume'),
    (PV.format(name='pv1', path='/volume/nfs').replace(
        '  nfs:\n    server: "0.0.0.0"   # replaced by the driver\n'
        '    path: /volume/nfs\n', '  hostPath: {path: /tmp}\n'),
     "PersistentVolume 'pv1' has no NFS source"),
    (PV.format(name='PV_1', path='/volume/nfs'),
     'metadata.name must be a DNS-1123 subdomain'),
    (PV.format(name='pv1', path='volume/nfs'), 'must be an absolute path'),
    (PV.format(name='pv1', path='/srv/other'),
     "spec.nfs.path '/srv/other' is not exported by the storage server"),
    ('kind: [unclosed', 'is not valid YAML'),
    ('- just\n- a list\n', 'is not a Kubernetes object'),
])
def test_bad_manifest_is_named_with_its_request_field(tmp_path, text,
                                                      fragment):
    good = write(tmp_path, 'good.yaml', PV.format(name='good',
                                                  path='/volume/nfs/a'))
    bad = write(tmp_path, 'bad.yaml', text)
    found = problems(tmp_path, params(good, bad))
    assert list(found) == [AT.format(1)]
    assert fragment in found[AT.format(1)]


def test_missing_file_and_symlink_out_of_the_package(tmp_path):
    outside = tmp_path / 'outside.yaml'
    outside.write_text(PV.format(name='x', path='/volume/nfs'))
    package = tmp_path / 'pkg'
    (package / 'Files').mkdir(parents=True)
    os.symlink(outside, package / 'Files' / 'link.yaml')
    found = problems(package, params('Files/link.yaml', 'Files/none.yaml'))
    assert 'leads outside the VNF package' in found[AT.format(0)]
    assert "has no file 'Files/none.yaml'" in found[AT.format(1)]


def test_two_manifests_with_one_name(tmp_path):
    one = write(tmp_path, 'a.yaml', PV.format(name='pv', path='/volume/nfs'))
    two = write(tmp_path, 'b.yaml', PV.format(name='pv', path='/volume/nfs'))
    found = problems(tmp_path, params(one, two))
    assert found == {AT.format(1): "PersistentVolume 'pv' is also defined "
                                   'by pv_registration_params[0]'}


def test_without_storage_server_any_nfs_path_is_accepted(tmp_path):
    one = write(tmp_path, 'a.yaml', PV.format(name='pv', path='/exports/x'))
    request = dataclasses.replace(params(one), storage_server=None)
    (pv,) = load_pv_manifests(tmp_path, request,
                              {'storage_server_CP': '10.0.0.7'})
    assert pv.body['spec']['nfs'] == {'server': '10.0.0.7',
                                      'path': '/exports/x'}

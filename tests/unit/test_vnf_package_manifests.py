"""Kubernetes manifests of the package validate against the API schema
(kubernetes-validate, strict: unknown fields are errors)."""
from __future__ import annotations

import hashlib
import zipfile

import yaml

from kubernetes_mgmt.cli import main
from kubernetes_mgmt.cluster import admin_account
from kubernetes_mgmt.vnf_package import layout, manifests, meta

BAD_PV = """\
apiVersion: v1
kind: PersistentVolume
metadata:
  name: nfs-pv1
spec:
  capacity:
    storage: 1Gi
  accessModes: [ReadWriteOnce]
  nfs:
    server: 10.10.0.9
    path: /volume/nfs/pv1
  color: blue
"""


def test_validator_is_installed_and_knows_the_installed_minor():
    assert manifests.available()
    assert manifests.schema_version()


def test_admin_account_manifest_is_valid():
    text = admin_account.manifest()
    kinds = [d['kind'] for d in yaml.safe_load_all(text)]
    assert kinds == ['ServiceAccount', 'ClusterRoleBinding', 'Secret']
    assert manifests.problems('admin account', text) == []


def test_package_manifests_are_valid():
    directory = layout.sample_package_dir() / layout.MANIFESTS
    files = sorted(directory.glob('*.yaml')) if directory.is_dir() else []
    found = [p for f in files
             for p in manifests.problems(f.name, f.read_text())]
    assert found == []


def test_an_invalid_manifest_is_reported():
    found = manifests.problems('pv.yaml', BAD_PV)
    assert len(found) == 1
    assert found[0].startswith('pv.yaml document 1 (PersistentVolume v1): '
                               'spec: ')
    assert 'color' in found[0]
    [bad_yaml] = manifests.problems('x.yaml', 'kind: [')
    assert bad_yaml.startswith('x.yaml is not valid YAML: ')
    assert manifests.problems('x.yaml', 'just: text') == [
        'x.yaml document 1 (? ?): not a Kubernetes object (apiVersion and '
        'kind are required)']


def test_verify_checks_the_manifests_in_the_package(capsys, tmp_path,
                                                    built_package):
    with zipfile.ZipFile(built_package) as archive:
        files = {n: archive.read(n) for n in archive.namelist()}
    name = f'{layout.MANIFESTS}/pv1.yaml'
    files[name] = BAD_PV.encode()
    parsed = meta.parse(files[layout.TOSCA_META].decode())
    parsed.artifacts.append(meta.Artifact(
        name, 'SHA-256', hashlib.sha256(files[name]).hexdigest()))
    files[layout.TOSCA_META] = meta.render(parsed).encode()
    bad = tmp_path / 'pv.zip'
    with zipfile.ZipFile(bad, 'w') as archive:
        for member, data in files.items():
            archive.writestr(member, data)
    assert main(['package', 'verify', str(bad)]) == 1
    err = capsys.readouterr().err
    assert f'problem: {name} document 1 (PersistentVolume v1): spec:' in err

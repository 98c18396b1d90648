"""The install script's contract version, as the driver reads it from the
package's script before anything remote happens, and where the CNI
manifest and its SHA-256 come from."""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from kubernetes_mgmt.cluster import plan as cluster_plan
from kubernetes_mgmt.cluster import script
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import MgmtDriverError

SCRIPT = Path(__file__).resolve().parents[2] / 'scripts' / \
    'install_k8s_cluster.sh'
HEADER = '#!/usr/bin/env bash\nset -Eeuo pipefail\n'


def test_the_bundled_script_speaks_the_drivers_contract():
    assert script.declared_contract(SCRIPT.read_text()) == \
        script.CONTRACT_VERSION
    script.check_contract(SCRIPT, 'Scripts/install_k8s_cluster.sh')


@pytest.mark.parametrize('line, version', [
    ('readonly CONTRACT_VERSION=2', 2),
    ('readonly CONTRACT_VERSION=17  # comment', 17),
])
def test_declaration_is_read(line, version):
    assert script.declared_contract(f'{HEADER}{line}\necho hi\n') == version


@pytest.mark.parametrize('text, message', [
    (HEADER + 'echo no declaration\n', 'declares no contract version'),
    # Only a declaration at the start of a line counts.
    (HEADER + '# readonly CONTRACT_VERSION=2\n',
     'declares no contract version'),
    (HEADER + 'readonly CONTRACT_VERSION=two\n',
     "declares CONTRACT_VERSION='two', not a positive integer"),
    (HEADER + 'readonly CONTRACT_VERSION=\n',
     "declares CONTRACT_VERSION='', not a positive integer"),
    (HEADER + 'readonly CONTRACT_VERSION=0\n', 'not a positive integer'),
    (HEADER + 'readonly CONTRACT_VERSION=2\nreadonly CONTRACT_VERSION=3\n',
     'declares CONTRACT_VERSION 2 times'),
])
def test_missing_or_garbage_declaration_is_an_error(text, message):
    with pytest.raises(ValueError) as exc:
        script.declared_contract(text)
    assert message in str(exc.value)


def write(tmp_path, text: str) -> Path:
    path = tmp_path / 'install_k8s_cluster.sh'
    path.write_text(text)
    return path


def test_script_of_another_contract_is_refused_naming_both_and_remedy(
        tmp_path):
    other = script.CONTRACT_VERSION + 1
    path = write(tmp_path, f'{HEADER}readonly CONTRACT_VERSION={other}\n')
    with pytest.raises(script.ContractMismatch) as exc:
        script.check_contract(path, 'Scripts/x.sh of the VNF package')
    message = str(exc.value)
    assert message.startswith('the install script Scripts/x.sh of the VNF '
                              f'package speaks install-script contract '
                              f'version {other}, this plugin speaks version '
                              f'{script.CONTRACT_VERSION}.')
    assert 'kubernetes-mgmt package build' in message
    assert 'install the plugin version that matches the package' in message
    assert isinstance(exc.value, MgmtDriverError)


def test_script_without_declaration_is_refused(tmp_path):
    path = write(tmp_path, HEADER)
    with pytest.raises(script.ContractMismatch) as exc:
        script.check_contract(path, 'Scripts/old.sh')
    assert 'declares no contract version' in str(exc.value)
    assert f'this plugin speaks contract version {script.CONTRACT_VERSION}' \
        in str(exc.value)


def test_unreadable_script_is_refused(tmp_path):
    path = tmp_path / 'binary.sh'
    path.write_bytes(b'\xff\xfe\x00')
    with pytest.raises(script.ContractMismatch, match='cannot read'):
        script.check_contract(path, 'Scripts/binary.sh')


# -- CNI source -----------------------------------------------------------

@pytest.fixture
def conf():
    def override(**values):
        for key, value in values.items():
            CONF.set_override(key, value, group='kubernetes_mgmt')
    yield override
    for key in ('cni', 'cni_manifest', 'cni_manifest_sha256'):
        CONF.clear_override(key, group='kubernetes_mgmt')


def _source(root):
    """The CNI source today's configuration gives (no cluster record)."""
    choice = cluster_plan._cni_choice()
    return cluster_plan._cni_source(root, CONF.kubernetes_mgmt.cni,
                                    choice['cni_manifest'],
                                    choice['cni_sha256'])


@pytest.mark.parametrize('cni', ['calico', 'flannel'])
def test_default_manifests_are_pinned_by_sha256(conf, tmp_path, cni):
    conf(cni=cni)
    source = _source(tmp_path)
    pinned = cluster_plan.CNI_MANIFESTS[cni]
    assert (source.name, source.url, source.sha256) == \
        (cni, pinned.url, pinned.sha256)
    assert re.fullmatch('[0-9a-f]{64}', source.sha256)


def test_manifest_url_needs_its_sha256(conf, tmp_path):
    conf(cni_manifest='http://mirror.example/calico.yaml')
    with pytest.raises(MgmtDriverError) as exc:
        _source(tmp_path)
    assert 'set [kubernetes_mgmt] cni_manifest_sha256' in str(exc.value)
    conf(cni_manifest_sha256='AB' * 32)
    source = _source(tmp_path)
    assert (source.url, source.sha256) == \
        ('http://mirror.example/calico.yaml', 'ab' * 32)


def test_package_manifest_is_pinned_to_its_own_hash_or_the_given_one(
        conf, tmp_path):
    (tmp_path / 'Files').mkdir()
    (tmp_path / 'Files' / 'cni.yaml').write_text('kind: DaemonSet\n')
    actual = hashlib.sha256(b'kind: DaemonSet\n').hexdigest()
    conf(cni_manifest='Files/cni.yaml')
    source = _source(tmp_path)
    assert (source.url, source.package_path, source.sha256) == \
        (None, tmp_path / 'Files' / 'cni.yaml', actual)
    conf(cni_manifest_sha256=actual)
    assert _source(tmp_path).sha256 == actual
    conf(cni_manifest_sha256='0' * 64)
    with pytest.raises(MgmtDriverError) as exc:
        _source(tmp_path)
    assert f'has SHA-256 {actual}, but {"0" * 64} is wanted ' \
        '([kubernetes_mgmt] cni_manifest_sha256' in str(exc.value)


def test_sha256_option_must_be_64_hex_digits(conf):
    with pytest.raises(ValueError):
        conf(cni_manifest_sha256='not-a-hash')

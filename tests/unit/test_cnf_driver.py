"""The driver's face to Tacker and its handling of the VIM's secrets:
entry point, identity, unsupported operations, credentials, TLS and the
CA file, logs without tokens."""
from __future__ import annotations

import configparser
import importlib
import logging
import os
import stat
import tempfile
from pathlib import Path

import pytest
from kubernetes import client

from kubernetes_mgmt import redact
from kubernetes_mgmt.cnf import kube
from kubernetes_mgmt.cnf.driver import KubernetesNamespacedDriver, NotSupported
from kubernetes_mgmt.cnf.errors import KubernetesCallFailed
from kubernetes_mgmt.cnf.vim import VimAccess
from kubernetes_mgmt.errors import ValidationError
from kubernetes_mgmt_lab.kube_api import KubeApiDouble, cluster_admin
from kubernetes_mgmt_lab.kube_api.lcm import (
    QUICK,
    InstantiateVnfRequest,
    MemoryStore,
    runner_for,
)
from kubernetes_mgmt_lab.tacker_shapes import TerminateVnfRequest

ROOT = Path(__file__).resolve().parent.parent.parent
DATA = ROOT / 'tests' / 'data' / 'cnf'
WEB = {'lcm-kubernetes-def-files': ['Files/kubernetes/web.yaml'],
       'namespace': 'ns-a'}
TOKEN = 'sEcReT-bearer-token-1234567890'


def test_entry_point_names_the_driver():
    config = configparser.ConfigParser()
    config.read(ROOT / 'setup.cfg')
    group = config['options.entry_points']['tacker.tacker.vnfm.drivers']
    entries = dict(line.split(' = ') for line in group.strip().splitlines())
    module, _, name = entries['kubernetes-namespaced'].partition(':')
    assert getattr(importlib.import_module(module), name) is \
        KubernetesNamespacedDriver


def test_identity_is_a_kubernetes_driver():
    driver = KubernetesNamespacedDriver(store=MemoryStore())
    assert driver.get_type() == 'kubernetes'
    assert driver.get_name() == 'kubernetes-namespaced'
    assert driver.get_description()


@pytest.mark.parametrize('call', [
    lambda d: d.change_ext_conn_vnf(None, None, {}, None, None),
    lambda d: d.change_ext_conn_vnf_wait(None, None, None),
    lambda d: d.post_change_ext_conn_vnf(None, None, None),
    lambda d: d.create(None, None, {}),
])
def test_unsupported_operations_say_so(call):
    with pytest.raises(NotImplementedError) as exc:
        call(KubernetesNamespacedDriver(store=MemoryStore()))
    assert isinstance(exc.value, NotSupported)
    assert 'not supported by the kubernetes-namespaced' in str(exc.value)


@pytest.mark.parametrize('access_info, field', [
    ({'auth_url': 'https://k8s:6443'},
     'vimConnectionInfo.accessInfo.bearer_token'),
    ({'auth_url': 'k8s:6443', 'bearer_token': 'x' * 10},
     'vimConnectionInfo.accessInfo.auth_url'),
])
def test_incomplete_credentials_name_the_field(access_info, field):
    with pytest.raises(ValidationError) as exc:
        VimAccess.from_access_info(access_info)
    assert field in {p.path for p in exc.value.problems}


def test_pem_with_spaces_for_newlines_is_repaired():
    with KubeApiDouble(tls=True) as double:
        flattened = double.ca_pem.replace('\n', ' ')
        vim = VimAccess.from_access_info({
            'auth_url': double.url, 'bearer_token': TOKEN,
            'ssl_ca_cert': flattened})
        assert vim.ca_pem == double.ca_pem


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """Where the driver's temporary files go, to see them come and go."""
    where = tmp_path / 'tmp'
    where.mkdir()
    monkeypatch.setattr(tempfile, 'tempdir', str(where))
    return where


def test_ca_file_is_private_and_removed(private_tmp):
    with KubeApiDouble(tls=True) as double:
        double.add_token(TOKEN, cluster_admin())
        vim = VimAccess.from_access_info(double.access_info(TOKEN))
        with kube.open_session(vim, QUICK) as session:
            path = session._api_client.configuration.ssl_ca_cert
            assert Path(path).is_relative_to(private_tmp)
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
            assert session.resource('apps/v1', 'Deployment').namespaced
    assert list(private_tmp.iterdir()) == []


def test_whole_life_over_tls_leaves_no_files(private_tmp, caplog):
    default_host = client.Configuration.get_default_copy().host
    caplog.set_level(logging.DEBUG)
    with KubeApiDouble(tls=True) as double:
        double.add_token(TOKEN, cluster_admin())
        lcm = runner_for(double.access_info(TOKEN), {'vnfd-cnf': DATA})
        instance = lcm.new_instance('vnfd-cnf', additional_params=WEB)
        lcm.instantiate(instance, InstantiateVnfRequest('simple', WEB))
        assert double.names('Deployment', 'ns-a') == ['web']
        lcm.terminate(instance, TerminateVnfRequest())
        assert double.names('Deployment', 'ns-a') == []
    assert list(private_tmp.iterdir()) == []
    # The client's process-wide default configuration is not touched.
    assert client.Configuration.get_default_copy().host == default_host
    assert 'created Deployment/web' in caplog.text
    assert TOKEN not in caplog.text
    # Each hook masked it in its own scope; none remembers it after.
    assert redact.redact(f'token {TOKEN}') == f'token {TOKEN}'


def test_an_unknown_ca_is_not_trusted(private_tmp):
    with KubeApiDouble(tls=True) as double:
        double.add_token(TOKEN, cluster_admin())
        access = {**double.access_info(TOKEN), 'ssl_ca_cert': 'None'}
        vim = VimAccess.from_access_info(access)
        with pytest.raises(KubernetesCallFailed, match='API discovery'), \
                kube.open_session(vim, QUICK) as session:
            session.resource('apps/v1', 'Deployment')

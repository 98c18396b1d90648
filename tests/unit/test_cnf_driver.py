"""The driver's face to Tacker and its handling of the VIM's secrets:
entry point, identity, unsupported operations, credentials, TLS and the
CA file, logs without tokens."""
from __future__ import annotations

import configparser
import dataclasses
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
from kubernetes_mgmt_lab.kube_api import KubeApiDouble, cluster_admin, tls
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


# -- https only, bounded requests, VIMs without a CA -------------------------

def test_a_plain_http_api_url_is_refused_before_any_request():
    with KubeApiDouble() as double:         # serves plain http
        double.add_token(TOKEN, cluster_admin())
        assert double.url.startswith('http://')
        lcm = runner_for(double.access_info(TOKEN), {'vnfd-cnf': DATA})
        instance = lcm.new_instance('vnfd-cnf', additional_params=WEB)
        with pytest.raises(ValidationError) as exc:
            lcm.instantiate(instance, InstantiateVnfRequest('simple', WEB))
        assert double.requests == []
    (problem,) = exc.value.problems
    assert problem.path == 'vimConnectionInfo.accessInfo.auth_url'
    assert problem.message.startswith('is a plain http:// URL')
    assert TOKEN not in str(exc.value)


def test_api_discovery_is_bounded_by_the_request_timeout(silent_server):
    cert = tls.issue()
    timings = dataclasses.replace(QUICK, request=0.3)
    with silent_server(cert.server_context()) as server:
        vim = VimAccess.from_access_info({
            'auth_url': server.url, 'bearer_token': TOKEN,
            'ssl_ca_cert': cert.ca_pem})

        def discover() -> None:
            with kube.open_session(vim, timings) as session:
                session.resource('apps/v1', 'Deployment')

        # Without a timeout the call waits until the server goes away
        # (then it fails differently); with one it gives up by itself.
        error = server.outcome(discover)
    assert isinstance(error, KubernetesCallFailed)
    assert 'API discovery' in str(error) and 'timed out' in str(error)


def test_a_vim_without_ca_is_verified_and_warned_about_once_an_operation(
        tmp_path, monkeypatch, caplog):
    with KubeApiDouble(tls=True) as double:
        double.add_token(TOKEN, cluster_admin())
        # The host's trust store holds the cluster's CA.
        trusted = tmp_path / 'trusted.pem'
        trusted.write_text(double.ca_pem, encoding='ascii')
        monkeypatch.setenv('SSL_CERT_FILE', str(trusted))
        vim = VimAccess.from_access_info(
            {**double.access_info(TOKEN), 'ssl_ca_cert': 'None'})
        assert vim.ca_pem is None and vim.auth_url == double.url
        caplog.set_level(logging.WARNING)
        for _ in range(2):
            with redact.operation('one operation'):
                for _ in range(3):
                    with kube.open_session(vim, QUICK) as session:
                        assert session.resource('apps/v1',
                                                'Deployment').namespaced
    warnings = [r.getMessage() for r in caplog.records
                if 'has no CA certificate' in r.getMessage()]
    assert len(warnings) == 2
    assert warnings[0].startswith(f'VIM {vim.auth_url} has no CA '
                                  'certificate (ssl_ca_cert)')
    assert 'verifies the API server against this host' in warnings[0]


def test_a_vim_with_its_ca_is_not_warned_about(caplog):
    with KubeApiDouble(tls=True) as double:
        double.add_token(TOKEN, cluster_admin())
        vim = VimAccess.from_access_info(double.access_info(TOKEN))
        caplog.set_level(logging.WARNING)
        with kube.open_session(vim, QUICK) as session:
            session.resource('v1', 'Pod')
    assert 'has no CA certificate' not in caplog.text

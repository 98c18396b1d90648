"""VIM registration: the file registry against a real local HTTPS API,
Tacker's NFVO adapter, and the vim_connection_info helpers."""
from __future__ import annotations

import copy
import datetime
import ipaddress
import json
import logging
import os
import socket
import ssl
import stat
import sys
import threading
import types
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from oslo_config import cfg

from kubernetes_mgmt import conf as kconf
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.shim.vim_connection import (
    add_vim_connection,
    remove_vim_connection,
    vim_connection_info,
)
from kubernetes_mgmt.vim import VimError, VimRecord, VimSpec, registry_for
from kubernetes_mgmt.vim.registry import VimRegistry
from kubernetes_mgmt.vim.tacker_registry import TackerVimRegistry
from kubernetes_mgmt_lab import conf as lab_conf
from kubernetes_mgmt_lab import tacker_shapes
from kubernetes_mgmt_lab.file_registry import FileVimRegistry

TOKEN = 'eyJhbGciOi.secret-token-for-tests'


# -- a tiny Kubernetes API over HTTPS ----------------------------------------

@dataclass
class Pki:
    ca_pem: str
    cert_path: str
    key_path: str


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(subject, issuer, key, signer, ca: bool, ip: str | None = None):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder()
               .subject_name(_name(subject)).issuer_name(_name(issuer))
               .public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None),
                              critical=True))
    if ip:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address(ip))]), critical=False)
    return builder.sign(signer, hashes.SHA256())


def make_pki(directory) -> Pki:
    """A CA and a server certificate for 127.0.0.1 signed by it."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert('test-ca', 'test-ca', ca_key, ca_key, ca=True)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _cert('kube-apiserver', 'test-ca', key, ca_key, ca=False,
                 ip='127.0.0.1')
    cert_path = os.path.join(directory, 'server.crt')
    key_path = os.path.join(directory, 'server.key')
    with open(cert_path, 'wb') as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, 'wb') as f:
        f.write(key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return Pki(ca.public_bytes(serialization.Encoding.PEM).decode(),
               cert_path, key_path)


class ApiHandler(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        if self.headers.get('Authorization') != f'Bearer {TOKEN}':
            self._send(401, {'kind': 'Status', 'code': 401})
        elif self.path.rstrip('/') in ('/api', '/version'):
            self._send(200, {'kind': 'APIVersions', 'versions': ['v1']})
        else:
            self._send(404, {'kind': 'Status', 'code': 404})

    def _send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@dataclass
class Api:
    url: str
    ca_pem: str


@pytest.fixture(scope='module')
def api(tmp_path_factory):
    pki = make_pki(str(tmp_path_factory.mktemp('pki')))
    server = ThreadingHTTPServer(('127.0.0.1', 0), ApiHandler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.cert_path, pki.key_path)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,),
                              daemon=True)
    thread.start()
    yield Api(f'https://127.0.0.1:{server.server_address[1]}', pki.ca_pem)
    server.shutdown()
    server.server_close()


def spec(api: Api, name: str = 'cluster-a', token: str = TOKEN,
         url: str | None = None) -> VimSpec:
    return VimSpec(name=name, auth_url=url or api.url, bearer_token=token,
                   ssl_ca_cert=api.ca_pem, description='test cluster')


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


CONTEXT = types.SimpleNamespace(project_id='project-1')


# -- the file registry -------------------------------------------------------

@pytest.fixture
def registry(tmp_path):
    return FileVimRegistry(str(tmp_path / 'vims.json'), deadline=1.0)


def test_file_registry_registers_after_checking_the_api(registry, api):
    record = registry.register(CONTEXT, spec(api))

    assert isinstance(registry, VimRegistry)
    assert record.name == 'cluster-a' and record.auth_url == api.url
    assert registry.find(CONTEXT, 'cluster-a') == record
    assert registry.find(CONTEXT, 'other') is None
    stored = registry.credentials(record.id)
    assert stored.bearer_token == TOKEN and stored.ssl_ca_cert == api.ca_pem
    assert stored.tenant_id == 'project-1'
    assert stat.S_IMODE(os.stat(registry.path).st_mode) == 0o600


def test_file_registry_reuses_same_name_and_url(registry, api):
    checks = []

    def check(*args, **kwargs):
        checks.append(args[0])

    counting = FileVimRegistry(registry.path, check=check)
    first = counting.register(CONTEXT, spec(api))
    again = counting.register(CONTEXT, spec(api, url=api.url + '/'))
    assert again == first
    assert checks == [api.url]          # an existing VIM is not re-checked
    assert counting.records() == [first]


def test_file_registry_refuses_same_name_other_url(registry, api):
    registry.register(CONTEXT, spec(api))
    other = 'https://127.0.0.2:6443'
    with pytest.raises(VimError) as err:
        registry.register(CONTEXT, spec(api, url=other))
    assert api.url in str(err.value) and other in str(err.value)
    assert len(registry.records()) == 1


def test_file_registry_delete_and_delete_missing(registry, api):
    record = registry.register(CONTEXT, spec(api))
    registry.delete(CONTEXT, record.id)
    assert registry.find(CONTEXT, 'cluster-a') is None
    registry.delete(CONTEXT, record.id)          # gone already: fine
    registry.delete(CONTEXT, 'never-registered')


def test_file_registry_in_use_reports_recorded_users(registry, api):
    record = registry.register(CONTEXT, spec(api))
    assert registry.in_use(CONTEXT, record.id) == []
    registry.record_use(record.id, 'cnf-1')
    registry.record_use(record.id, 'cnf-1')
    assert registry.in_use(CONTEXT, record.id) == ['cnf-1']
    registry.record_use(record.id, 'cnf-1', used=False)
    assert registry.in_use(CONTEXT, record.id) == []
    assert registry.in_use(CONTEXT, 'unknown') == []


def test_file_registry_with_url_lists_every_vim_of_the_endpoint(registry,
                                                                  api):
    first = registry.register(CONTEXT, spec(api))
    second = registry.register(CONTEXT, spec(api, name='ns-a'))
    assert {v.id for v in registry.with_url(CONTEXT, api.url + '/')} == {
        first.id, second.id}
    assert registry.with_url(CONTEXT, 'https://192.0.2.1:6443') == []


def test_unreachable_api_is_a_clear_error_and_stores_nothing(registry, api):
    url = f'https://127.0.0.1:{closed_port()}'
    with pytest.raises(VimError, match='did not answer within 1 s') as err:
        registry.register(CONTEXT, spec(api, url=url))
    assert url in str(err.value)
    assert registry.records() == []


def test_wrong_token_is_refused_at_once(registry, api):
    with pytest.raises(VimError, match=r'refused the given token \(HTTP '
                                       r'401\)') as err:
        registry.register(CONTEXT, spec(api, token='wrong-token-value'))
    assert 'wrong-token-value' not in str(err.value)
    assert registry.records() == []


def test_certificate_from_another_ca_is_refused(registry, api, tmp_path):
    stranger = make_pki(str(tmp_path))
    bad = VimSpec(name='c', auth_url=api.url, bearer_token=TOKEN,
                  ssl_ca_cert=stranger.ca_pem)
    with pytest.raises(VimError, match='does not verify'):
        registry.register(CONTEXT, bad)
    assert registry.records() == []


def test_token_never_reaches_logs_or_errors(registry, api, caplog):
    with caplog.at_level(logging.DEBUG):
        registry.register(CONTEXT, spec(api))
        for bad in (spec(api, name='x', url=f'https://127.0.0.1:'
                                            f'{closed_port()}'),
                    spec(api, name='cluster-a', url='https://10.0.0.9')):
            with pytest.raises(VimError) as err:
                registry.register(CONTEXT, bad)
            assert TOKEN not in str(err.value)
    assert caplog.records and TOKEN not in caplog.text
    assert TOKEN not in repr(spec(api))


def test_registry_for_picks_by_configuration(tmp_path):
    conf = cfg.ConfigOpts()
    kconf.register_opts(conf)
    lab_conf.register_opts(conf)
    conf([])
    assert isinstance(registry_for(conf), TackerVimRegistry)
    conf.set_override('vim_registry', 'file', 'kubernetes_mgmt')
    with pytest.raises(VimError, match='vim_registry_file'):
        registry_for(conf)
    path = str(tmp_path / 'v.json')
    conf.set_override('vim_registry_file', path, 'kubernetes_mgmt_lab')
    chosen = registry_for(conf)
    assert isinstance(chosen, FileVimRegistry) and chosen.path == path


def test_unknown_registry_is_refused_with_the_names_there_are():
    conf = cfg.ConfigOpts()
    kconf.register_opts(conf)
    conf([])
    conf.set_override('vim_registry', 'nfvo', 'kubernetes_mgmt')
    with pytest.raises(MgmtDriverError) as err:
        registry_for(conf)
    assert "vim_registry = 'nfvo'" in str(err.value)
    assert 'available: file, tacker' in str(err.value)


# -- Tacker's NFVO -----------------------------------------------------------

class NotFound(Exception):
    pass


class InUse(Exception):
    pass


class FakeNfvo:
    """Records what the registry hands to Tacker's NfvoPlugin."""

    vims: list[dict] = []
    created: list[dict] = []
    fail_with: Exception | None = None

    def get_vims(self, context, filters=None, fields=None):
        return [dict(v) for v in self.vims
                if all(v.get(k) == val for k, val in (filters or {}).items())]

    def create_vim(self, context, vim):
        self.created.append(copy.deepcopy(vim))
        if self.fail_with:
            raise self.fail_with
        body = dict(vim['vim'], id=f'vim-{len(self.vims)}')
        self.vims.append(body)
        return body

    def delete_vim(self, context, vim_id):
        if vim_id == 'busy':
            raise InUse(f'VIM {vim_id} is still in use by VNF')
        if not any(v['id'] == vim_id for v in self.vims):
            raise NotFound(vim_id)
        self.vims[:] = [v for v in self.vims if v['id'] != vim_id]


class FakeVimClient:
    """Tacker's VimClient: a VIM's auth_cred as stored (decrypted)."""

    def get_vim(self, context, vim_id=None, region_name=None):
        vim = next(v for v in FakeNfvo.vims if v['id'] == vim_id)
        return {'vim_id': vim_id,
                'vim_auth': dict(vim.get('auth_cred', {}),
                                 auth_url=vim['auth_url'])}


@pytest.fixture
def nfvo(monkeypatch):
    """Tacker's NFVO cannot run here (it needs Tacker's database, VIM
    drivers and key manager), so fake modules stand in for
    ``tacker.nfvo.nfvo_plugin``, ``tacker.extensions.nfvo`` and
    ``tacker.objects``: the one place in the suite a mock is right. The
    tests check what our adapter passes to Tacker, not Tacker itself."""
    FakeNfvo.vims, FakeNfvo.created, FakeNfvo.fail_with = [], [], None
    modules = {name: types.ModuleType(name) for name in (
        'tacker', 'tacker.nfvo', 'tacker.nfvo.nfvo_plugin',
        'tacker.extensions', 'tacker.extensions.nfvo', 'tacker.objects',
        'tacker.sol_refactored', 'tacker.sol_refactored.objects',
        'tacker.vnfm', 'tacker.vnfm.vim_client')}
    modules['tacker.nfvo.nfvo_plugin'].NfvoPlugin = FakeNfvo
    modules['tacker.vnfm.vim_client'].VimClient = FakeVimClient
    modules['tacker.extensions.nfvo'].VimNotFoundException = NotFound
    modules['tacker.extensions.nfvo'].VimInUseException = InUse
    for name, module in modules.items():
        parent, _, child = name.rpartition('.')
        if parent:
            setattr(modules[parent], child, module)
        monkeypatch.setitem(sys.modules, name, module)
    return modules


def test_tacker_registry_passes_the_kubernetes_vim_body(nfvo):
    registry = TackerVimRegistry()
    vim = VimSpec(name='k8s-vim', auth_url='https://10.0.0.10:16443',
                  bearer_token=TOKEN, ssl_ca_cert='-----BEGIN CERT...',
                  description='cluster of vnf-1')

    record = registry.register(CONTEXT, vim)

    assert FakeNfvo.created == [{'vim': {
        'name': 'k8s-vim', 'description': 'cluster of vnf-1',
        'type': 'kubernetes', 'auth_url': 'https://10.0.0.10:16443',
        'vim_project': {'name': 'default'},
        'auth_cred': {'bearer_token': TOKEN,
                      'ssl_ca_cert': '-----BEGIN CERT...'},
        'is_default': False, 'tenant_id': 'project-1'}}]
    assert record == VimRecord('vim-0', 'k8s-vim', 'https://10.0.0.10:16443')
    assert registry.find(CONTEXT, 'k8s-vim') == record


def test_tacker_registry_reuses_and_refuses_by_url(nfvo):
    registry = TackerVimRegistry()
    vim = VimSpec('k8s-vim', 'https://10.0.0.10:6443', TOKEN, 'CA',
                  tenant_id='project-2')
    first = registry.register(CONTEXT, vim)
    assert registry.register(CONTEXT, vim) == first
    assert len(FakeNfvo.created) == 1
    assert FakeNfvo.created[0]['vim']['tenant_id'] == 'project-2'
    both = r'10\.0\.0\.10:6443.*10\.0\.0\.11:6443'
    with pytest.raises(VimError, match=both):
        registry.register(CONTEXT, VimSpec('k8s-vim',
                                           'https://10.0.0.11:6443',
                                           TOKEN, 'CA',
                                           tenant_id='project-2'))


def test_tacker_registry_ignores_same_name_in_another_project(nfvo):
    FakeNfvo.vims.append({'id': 'theirs', 'name': 'k8s-vim',
                          'tenant_id': 'project-9',
                          'auth_url': 'https://10.9.9.9:6443'})
    record = TackerVimRegistry().register(
        CONTEXT, VimSpec('k8s-vim', 'https://10.0.0.10:6443', TOKEN, 'CA'))
    assert record.id != 'theirs' and len(FakeNfvo.created) == 1


def test_tacker_refusal_is_a_vim_error_without_the_token(nfvo):
    FakeNfvo.fail_with = RuntimeError(f'unauthorized: token {TOKEN}')
    with pytest.raises(VimError, match='did not register') as err:
        TackerVimRegistry().register(
            CONTEXT, VimSpec('k8s-vim', 'https://10.0.0.10:6443', TOKEN,
                             'CA'))
    assert TOKEN not in str(err.value)


def test_tacker_delete_tolerates_missing_and_reports_in_use(nfvo):
    registry = TackerVimRegistry()
    record = registry.register(
        CONTEXT, VimSpec('k8s-vim', 'https://10.0.0.10:6443', TOKEN, 'CA'))
    registry.delete(CONTEXT, record.id)
    assert registry.find(CONTEXT, 'k8s-vim') is None
    registry.delete(CONTEXT, record.id)
    with pytest.raises(VimError, match='refuses to delete VIM busy'):
        registry.delete(CONTEXT, 'busy')


def test_tacker_in_use_lists_instances_naming_the_vim(nfvo):
    seen = {}

    class Instances:
        @staticmethod
        def get_all(context):
            seen['context'] = context
            return [
                tacker_shapes.VnfInstance('cnf-1', vim_connection_info=[
                    tacker_shapes.VimConnectionInfo('c1', 'vim-7',
                                                    'kubernetes')]),
                tacker_shapes.VnfInstance('vnf-2', vim_connection_info=[
                    tacker_shapes.VimConnectionInfo('c2', 'os', 'openstack')
                ])]

    class InstancesV2:
        @staticmethod
        def get_all(context):
            seen['v2 context'] = context
            return [_V2Instance('cnf-v2', {'vim1': _V2Vim('vim-7')}),
                    _V2Instance('vnf-v2', {'os': _V2Vim('os')}),
                    _V2Instance('not-instantiated', None)]

    nfvo['tacker.objects'].VnfInstanceList = Instances
    nfvo['tacker.sol_refactored.objects'].VnfInstanceV2 = InstancesV2
    admin = types.SimpleNamespace(project_id=None)
    context = types.SimpleNamespace(project_id='p', elevated=lambda: admin)
    assert TackerVimRegistry().in_use(context, 'vim-7') == ['cnf-1',
                                                            'cnf-v2']
    # CNFs of every project count, v1 and v2 ones.
    assert seen['context'] is admin and seen['v2 context'] is admin


class _V2Object:
    """What of an oslo versioned object of Tacker v2 ``in_use`` reads:
    set fields only."""

    def obj_attr_is_set(self, name: str) -> bool:
        return getattr(self, name, None) is not None


class _V2Vim(_V2Object):
    def __init__(self, vim_id: str):
        self.vimId = vim_id


class _V2Instance(_V2Object):
    def __init__(self, inst_id: str, connections: dict | None):
        self.id = inst_id
        self.vimConnectionInfo = connections


# -- vim_connection_info -----------------------------------------------------

RECORD = VimRecord('vim-1', 'cluster-a', 'https://10.0.0.10:16443')


def test_vim_connection_info_names_the_cluster():
    info = vim_connection_info(RECORD)
    assert isinstance(info, tacker_shapes.VimConnectionInfo)
    assert (info.vim_id, info.vim_type) == ('vim-1', 'kubernetes')
    assert info.access_info == {'auth_url': 'https://10.0.0.10:16443'}
    assert info.interface_info == {} and info.id


def test_add_vim_connection_never_duplicates():
    openstack = tacker_shapes.VimConnectionInfo('c0', 'os-vim', 'openstack')
    instance = tacker_shapes.VnfInstance('vnf-1',
                                         vim_connection_info=[openstack])
    assert add_vim_connection(instance, RECORD) is True
    assert add_vim_connection(instance, RECORD) is False
    assert [i.vim_id for i in instance.vim_connection_info] == \
        ['os-vim', 'vim-1']

    assert remove_vim_connection(instance, 'vim-1') is True
    assert remove_vim_connection(instance, 'vim-1') is False
    assert instance.vim_connection_info == [openstack]


# -- reuse only with the cluster's CA --------------------------------------

def _flattened(pem: str) -> str:
    """The PEM as Tacker may store it: newlines turned into spaces."""
    return pem.replace('\n', ' ')


def test_file_registry_reuses_a_vim_whose_ca_is_the_clusters(registry, api):
    first = registry.register(CONTEXT, spec(api))
    # The same certificate, its PEM rewritten, is the same CA.
    again = VimSpec(name='cluster-a', auth_url=api.url, bearer_token=TOKEN,
                    ssl_ca_cert=_flattened(api.ca_pem))
    assert registry.register(CONTEXT, again) == first
    assert registry.records() == [first]


def test_file_registry_refuses_a_vim_of_another_ca(registry, api, tmp_path):
    first = registry.register(CONTEXT, spec(api))
    before = registry.credentials(first.id)
    other_ca = make_pki(str(tmp_path)).ca_pem
    with pytest.raises(VimError) as err:
        registry.register(CONTEXT, VimSpec(
            name='cluster-a', auth_url=api.url, bearer_token='new-token-1',
            ssl_ca_cert=other_ca))
    message = str(err.value)
    assert f"a VIM named 'cluster-a' already exists ({first.id}) for " \
        f'{api.url}, but its CA certificate (ssl_ca_cert) is not this ' \
        "cluster's" in message
    assert f'openstack vim delete {first.id}' in message
    assert 'another vim_name' in message
    assert TOKEN not in message and 'new-token-1' not in message
    assert registry.records() == [first]
    assert registry.credentials(first.id) == before


def test_tacker_registry_reuses_only_with_the_same_ca(nfvo):
    registry = TackerVimRegistry()
    vim = VimSpec('k8s-vim', 'https://10.0.0.10:6443', TOKEN,
                  '-----BEGIN CERTIFICATE-----\nQUJD\nREVG\n'
                  '-----END CERTIFICATE-----\n')
    first = registry.register(CONTEXT, vim)
    flattened = VimSpec('k8s-vim', vim.auth_url, TOKEN,
                        _flattened(vim.ssl_ca_cert))
    assert registry.register(CONTEXT, flattened) == first
    rebuilt = VimSpec('k8s-vim', vim.auth_url, TOKEN,
                      '-----BEGIN CERTIFICATE-----\nWFla\n'
                      '-----END CERTIFICATE-----\n')
    with pytest.raises(VimError, match=r'\(vim-0\) for https://10\.0\.0\.10'
                                       r':6443, but its CA certificate'):
        registry.register(CONTEXT, rebuilt)
    assert len(FakeNfvo.created) == 1


def test_tacker_registry_that_cannot_read_the_ca_says_so(nfvo, monkeypatch):
    registry = TackerVimRegistry()
    vim = VimSpec('k8s-vim', 'https://10.0.0.10:6443', TOKEN, 'CA')
    registry.register(CONTEXT, vim)

    def no_key(self, context, vim_id=None, region_name=None):
        raise RuntimeError(f'cannot decrypt with barbican for {vim_id}')

    monkeypatch.setattr(FakeVimClient, 'get_vim', no_key)
    with pytest.raises(VimError, match='cannot read the CA certificate of '
                                       'VIM vim-0 to check'):
        registry.register(CONTEXT, vim)
    assert len(FakeNfvo.created) == 1

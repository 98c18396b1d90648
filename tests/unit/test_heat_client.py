"""The ``tacker`` Heat client factory against OpenStack endpoints that do
not answer, and VIMs that turn certificate verification off.

Tacker cannot be imported here: fake ``tacker`` modules stand in for the
three it provides (``context``, ``vnfm.vim_client`` and
``common.clients``). The fake ``OpenstackClients`` is built as Tacker
16's is (``tacker/common/clients.py``, ``tacker/vnfm/keystone.py``): a
keystoneauth ``Adapter`` over a ``Session(auth, verify)`` without a
timeout, whose ``heat`` asks Keystone for Heat's endpoint first. Keystone
itself is a socket that accepts and never answers.
"""
from __future__ import annotations

import logging
import socket
import sys
import threading
import types

import pytest
from keystoneauth1 import adapter, exceptions, identity, session

from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.topology import heat_client


class SilentServer:
    """Accepts connections and never answers until stopped."""

    def __init__(self):
        self._listener = socket.create_server(('127.0.0.1', 0))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.url = f'http://127.0.0.1:{self._listener.getsockname()[1]}'

    def _serve(self) -> None:
        self._listener.settimeout(0.1)
        held = []
        while not self._stop.is_set():
            try:
                held.append(self._listener.accept()[0])
            except TimeoutError:
                continue
        for conn in held:
            conn.close()

    def __enter__(self) -> SilentServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._listener.close()


def outcome_of(call, server: SilentServer) -> BaseException | None:
    """Run ``call`` in a thread; without a timeout it waits until the
    server goes away (and then fails otherwise)."""
    result: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
        except BaseException as error:   # the outcome under test
            result.append(error)
        else:
            result.append(None)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(20)
    server.__exit__()
    worker.join()
    return result[0]


@pytest.fixture
def short_timeout():
    CONF.set_override('openstack_api_timeout', 1, 'kubernetes_mgmt')
    yield
    CONF.clear_override('openstack_api_timeout', 'kubernetes_mgmt')


PASSWORD_ACCESS = {'username': 'nfv', 'password': 'vim-secret',
                   'project': 'nfv', 'userDomain': 'Default',
                   'projectDomain': 'Default', 'region': 'RegionOne'}


# -- v2: a VIM connection with a password ---------------------------------

def test_v2_session_gives_up_on_a_keystone_that_never_answers(
        short_timeout):
    with SilentServer() as keystone:
        client = heat_client.keystone_heat_client(
            {'endpoint': f'{keystone.url}/v3'}, PASSWORD_ACCESS)
        error = outcome_of(lambda: client.stacks.get('stack-1'), keystone)
    assert isinstance(error, exceptions.ConnectTimeout), repr(error)


@pytest.mark.parametrize('interface, warned', [
    ({'skipCertificateVerification': True}, True),
    ({'skipCertificateVerification': False}, False),
    ({}, False),
    ({'skipCertificateVerification': True, 'cacert': '/etc/ca.pem'},
     False),
])
def test_v2_unverified_vim_is_warned_about_each_time(caplog, interface,
                                                     warned):
    caplog.set_level(logging.WARNING)
    endpoint = 'https://keystone.example:5000/v3'
    for _ in range(2):
        heat_client.keystone_heat_client({'endpoint': endpoint, **interface},
                                         PASSWORD_ACCESS)
    messages = [r.getMessage() for r in caplog.records
                if 'without verifying' in r.getMessage()]
    assert len(messages) == (2 if warned else 0)
    if warned:
        assert messages[0].startswith(
            f'the OpenStack VIM connection ({endpoint}): '
            'skipCertificateVerification is true')
    assert 'vim-secret' not in caplog.text


# -- v1: Tacker's VIM and its OpenstackClients ------------------------------

class OpenstackClients:
    """As Tacker 16's: a Keystone v3 session without a timeout, and a
    Heat client whose endpoint is asked from Keystone when first used."""

    made: list[OpenstackClients] = []

    def __init__(self, auth_attr, region_name=None):
        auth = dict(auth_attr)
        auth.pop('region', None)
        self.verify = auth.pop('cert_verify', 'True') in (True, 'True',
                                                          'true')
        auth.pop('vim_id', None)
        self.keystone_session = adapter.Adapter(
            session=session.Session(auth=identity.v3.Password(**auth),
                                    verify=self.verify),
            service_type='identity')
        self.region_name = region_name
        self.made.append(self)

    @property
    def heat(self):
        self.keystone_session.get_endpoint(service_type='orchestration',
                                           region_name=self.region_name)
        return 'the heatclient'


@pytest.fixture
def tacker(monkeypatch):
    """Fake ``tacker`` modules; returns the VIM auth VimClient gives."""
    vim_auth = {'username': 'nfv', 'password': 'vim-secret',
                'project_name': 'nfv', 'user_domain_name': 'Default',
                'project_domain_name': 'Default'}

    class VimClient:
        def get_vim(self, context, vim_id=None, region_name=None):
            return {'vim_id': vim_id, 'vim_auth': dict(vim_auth)}

    OpenstackClients.made = []
    modules = {
        'tacker': types.ModuleType('tacker'),
        'tacker.context': types.SimpleNamespace(
            get_admin_context=lambda: 'admin'),
        'tacker.vnfm': types.ModuleType('tacker.vnfm'),
        'tacker.vnfm.vim_client': types.SimpleNamespace(VimClient=VimClient),
        'tacker.common': types.ModuleType('tacker.common'),
        'tacker.common.clients': types.SimpleNamespace(
            OpenstackClients=OpenstackClients),
    }
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
        parent, _, child = name.rpartition('.')
        if parent:
            setattr(modules[parent], child, module)
    CONF.set_override('heat_client', 'tacker', 'kubernetes_mgmt')
    yield vim_auth
    CONF.clear_override('heat_client', 'kubernetes_mgmt')


def instance(region: str = 'RegionOne'):
    return types.SimpleNamespace(vim_connection_info=[types.SimpleNamespace(
        vim_id='os-vim', vim_type='openstack',
        access_info={'region': region})])


def test_v1_client_gives_up_on_a_keystone_that_never_answers(
        tacker, short_timeout):
    with SilentServer() as keystone:
        tacker['auth_url'] = f'{keystone.url}/v3'
        error = outcome_of(
            lambda: heat_client.heat_client_for(instance()), keystone)
    assert isinstance(error, exceptions.ConnectTimeout), repr(error)
    (made,) = OpenstackClients.made
    assert made.keystone_session.session.timeout == 1.0


def test_v1_client_is_tackers_heat_with_the_timeout(tacker, monkeypatch):
    monkeypatch.setattr(OpenstackClients, 'heat', 'the heatclient')
    tacker['auth_url'] = 'https://keystone.example:5000/v3'
    assert heat_client.heat_client_for(instance()) == 'the heatclient'
    (made,) = OpenstackClients.made
    assert made.keystone_session.session.timeout == 60.0
    assert made.verify is True


@pytest.mark.parametrize('cert_verify, warned', [
    ('False', True), ('false', True), (False, True), ('True', False),
    (None, False)])
def test_v1_vim_without_certificate_verification_is_warned_about(
        tacker, monkeypatch, caplog, cert_verify, warned):
    monkeypatch.setattr(OpenstackClients, 'heat', 'the heatclient')
    tacker['auth_url'] = 'https://keystone.example:5000/v3'
    if cert_verify is not None:
        tacker['cert_verify'] = cert_verify
    caplog.set_level(logging.WARNING)
    for _ in range(2):
        heat_client.heat_client_for(instance())
    messages = [r.getMessage() for r in caplog.records
                if 'without verifying' in r.getMessage()]
    assert len(messages) == (2 if warned else 0)
    if warned:
        assert messages[0].startswith(
            'OpenStack VIM os-vim (https://keystone.example:5000/v3): '
            'cert_verify is False')

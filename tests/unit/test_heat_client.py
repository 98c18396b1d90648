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
import types

import pytest
from keystoneauth1 import adapter, exceptions, identity, session

from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.topology import heat_client


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
        short_timeout, silent_server):
    with silent_server() as keystone:
        client = heat_client.keystone_heat_client(
            {'endpoint': f'{keystone.url}/v3'}, PASSWORD_ACCESS)
        error = keystone.outcome(lambda: client.stacks.get('stack-1'))
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
def tacker(fake_tacker):
    """Fake ``tacker`` modules; returns the VIM auth VimClient gives."""
    vim_auth = {'username': 'nfv', 'password': 'vim-secret',
                'project_name': 'nfv', 'user_domain_name': 'Default',
                'project_domain_name': 'Default'}

    class VimClient:
        def get_vim(self, context, vim_id=None, region_name=None):
            return {'vim_id': vim_id, 'vim_auth': dict(vim_auth)}

    OpenstackClients.made = []
    fake_tacker(VimClient, OpenstackClients)
    CONF.set_override('heat_client', 'tacker', 'kubernetes_mgmt')
    yield vim_auth
    CONF.clear_override('heat_client', 'kubernetes_mgmt')


def instance(region: str = 'RegionOne'):
    return types.SimpleNamespace(vim_connection_info=[types.SimpleNamespace(
        vim_id='os-vim', vim_type='openstack',
        access_info={'region': region})])


def test_v1_client_gives_up_on_a_keystone_that_never_answers(
        tacker, short_timeout, silent_server):
    with silent_server() as keystone:
        tacker['auth_url'] = f'{keystone.url}/v3'
        error = keystone.outcome(
            lambda: heat_client.heat_client_for(instance()))
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

"""What of reading hosts from Heat needs no Heat: attribute parsing and
the choice of the Heat client factory. The reader against real stacks:
tests/lab/test_topology_lab.py."""
from __future__ import annotations

import types

import pytest
from keystoneauth1 import session

from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.topology import heat as topology_heat
from kubernetes_mgmt.topology.heat_client import heat_client_for


def test_attachments_as_heat_string():
    attrs = {'attachments': "[{'server_id': 's', 'device': '/dev/vdc'}]"}
    assert topology_heat._attachments(attrs) == [
        {'server_id': 's', 'device': '/dev/vdc'}]
    assert topology_heat._attachments({'attachments': 'garbage'}) == []


# -- the client factory -------------------------------------------------

@pytest.fixture
def heat_options():
    from kubernetes_mgmt_lab import conf as lab_conf

    yield CONF.kubernetes_mgmt
    CONF.clear_override('heat_client', group='kubernetes_mgmt')
    CONF.clear_override('heat_auth_url', group=lab_conf.GROUP)


def test_lab_client_without_keystone_names_the_option(heat_options):
    from kubernetes_mgmt_lab import conf as lab_conf

    CONF.set_override('heat_client', 'lab', group='kubernetes_mgmt')
    CONF.set_override('heat_auth_url', None, group=lab_conf.GROUP)
    with pytest.raises(MgmtDriverError,
                       match=r'\[kubernetes_mgmt_lab\] heat_auth_url'):
        heat_client_for(types.SimpleNamespace(vim_connection_info=[]))


def test_unknown_client_factory_names_option_and_choices(heat_options):
    CONF.set_override('heat_client', 'nosuch', group='kubernetes_mgmt')
    with pytest.raises(MgmtDriverError) as err:
        heat_client_for(types.SimpleNamespace(vim_connection_info=[]))
    assert "[kubernetes_mgmt] heat_client = 'nosuch'" in str(err.value)
    assert 'available: lab, tacker' in str(err.value)


def test_client_without_tacker(heat_options, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_tacker(name, *args, **kwargs):
        if name == 'tacker' or name.startswith('tacker.'):
            raise ImportError(f'No module named {name!r}')
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, '__import__', no_tacker)
    with pytest.raises(MgmtDriverError, match='heat_client = tacker needs'):
        heat_client_for(types.SimpleNamespace(vim_connection_info=[]))


def test_client_through_tacker_vim(heat_options, fake_tacker):
    seen = {}

    class VimClient:
        def get_vim(self, context, vim_id=None, region_name=None):
            seen['get_vim'] = (context, vim_id, region_name)
            return {'vim_id': vim_id, 'vim_auth': {
                'auth_url': 'http://keystone/v3', 'username': 'nfv',
                'password': 'vim-secret', 'region': region_name}}

    class OpenstackClients:     # what Tacker's HeatClient wraps
        def __init__(self, auth_attr, region_name=None):
            seen['auth'] = (auth_attr, region_name)
            self.keystone_session = session.Session()
            self.heat = 'the heatclient'

    fake_tacker(VimClient, OpenstackClients)
    connections = [
        types.SimpleNamespace(vim_id='k8s-vim', vim_type='kubernetes',
                              access_info={}),
        types.SimpleNamespace(vim_id='os-vim', vim_type='openstack',
                              access_info={'region': 'RegionOne'})]
    heat = heat_client_for(
        types.SimpleNamespace(vim_connection_info=connections))
    assert heat == 'the heatclient'
    assert seen['get_vim'] == ('admin', 'os-vim', 'RegionOne')
    assert seen['auth'][1] == 'RegionOne'
    assert seen['auth'][0]['password'] == 'vim-secret'
    from kubernetes_mgmt import redact
    assert 'vim-secret' not in redact.redact('password vim-secret')

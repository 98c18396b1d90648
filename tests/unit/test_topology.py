"""Reading hosts from Heat, against the lab's Heat double."""
from __future__ import annotations

import dataclasses
import sys
import types

import pytest

from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import MgmtDriverError, TopologyError
from kubernetes_mgmt.topology import heat as topology_heat
from kubernetes_mgmt.topology.heat import read_members, read_topology
from kubernetes_mgmt.topology.heat_client import heat_client_for
from kubernetes_mgmt.topology.model import Role, Volume
from kubernetes_mgmt_lab import state as lab_state
from kubernetes_mgmt_lab.heat.fake import (
    FAKE_VOLUME_ID,
    STACK_ID,
    STACK_NAME,
    TENANT,
    TOKEN,
    VIP,
    client,
    make_state,
    params,
    running,
)


@pytest.fixture
def state_path(tmp_path):
    return str(tmp_path / 'lab.json')


def _read(state_path, cluster_params, stack_id=STACK_ID):
    with running(state_path) as server:
        topology = read_topology(client(server), stack_id, cluster_params)
    return topology, server.served


def test_simple_flavour(state_path):
    make_state(state_path, masters=1, workers=2)
    topology, _ = _read(state_path, params())
    master, = topology.masters
    assert (master.role, master.ssh_ip, master.nic_ip) == (
        Role.MASTER, '10.10.0.10', '10.10.0.10')
    assert master.server_id == 'server-master-0-g0'
    assert master.server_name == 'masterNode'
    assert master.member_name == 'mm0000000000'
    assert master.member_stack_id == 'stack-master-0-g0'
    assert (master.compute_host, master.zone) == ('compute-0', 'az-0')
    assert master.server_groups == ()
    assert master.floating_ip is None
    assert [w.ssh_ip for w in topology.workers] == ['10.10.0.20',
                                                   '10.10.0.21']
    assert [w.member_stack_id for w in topology.workers] == [
        'stack-worker-0-g0', 'stack-worker-1-g0']
    assert (topology.cluster_ip, topology.cluster_prefixlen) == (
        '10.10.0.10', 24)
    assert topology.storage is None and topology.cluster_fip is None
    assert not topology.is_ha
    assert topology.stack_id == STACK_ID


def test_ha_flavour_uses_the_vip(state_path):
    make_state(state_path, masters=3, workers=2, ha=True)
    topology, _ = _read(state_path, params(ha=True))
    assert [m.nic_ip for m in topology.masters] == [
        '10.10.0.10', '10.10.0.11', '10.10.0.12']
    assert len(topology.workers) == 2
    assert (topology.cluster_ip, topology.cluster_prefixlen) == (VIP, 24)
    assert topology.is_ha


def test_storage_server_with_volume(state_path):
    make_state(state_path, storage=True)
    topology, _ = _read(state_path, params(storage=True))
    storage = topology.storage
    assert storage.role == Role.STORAGE
    assert storage.ssh_ip == '10.10.0.30'
    assert storage.server_id == 'server-storage-0-g0'
    assert storage.server_name == 'storage_server'
    assert storage.member_name is None
    assert storage.volumes == {'storage_server_volume': Volume(
        id=FAKE_VOLUME_ID, size_gib=1, device='/dev/vdb')}
    assert topology.hosts[-1] is storage


def test_volume_carries_cinder_id_size_and_novas_device(state_path):
    state = make_state(state_path, storage=True)
    storage = state.hosts[-1]
    storage.volume_gib = {'storage_server_volume': 20}
    storage.reported_devices = {'storage_server_volume': '/dev/vdc'}
    lab_state.save(state, state_path)
    topology, _ = _read(state_path, params(storage=True))
    assert topology.storage.volumes['storage_server_volume'] == Volume(
        id=FAKE_VOLUME_ID, size_gib=20, device='/dev/vdc')


def test_volume_without_a_size_is_refused(state_path):
    state = make_state(state_path, storage=True)
    state.hosts[-1].volume_gib = {'storage_server_volume': 0}
    lab_state.save(state, state_path)
    with pytest.raises(TopologyError) as info:
        _read(state_path, params(storage=True))
    assert "volume 'storage_server_volume' (" + FAKE_VOLUME_ID + \
        ') has no size in GiB' in str(info.value)


def test_floating_ips_for_ssh_and_cluster(state_path):
    make_state(state_path, workers=1, floating_ips={
        'cluster_fip': '172.24.4.10',
        'master-0/masterNode_FloatingIP': '172.24.4.11'})
    topology, _ = _read(state_path, params(
        ssh_cp_name='masterNode_FloatingIP', cluster_fip_name='cluster_fip'))
    master, = topology.masters
    assert (master.ssh_ip, master.nic_ip, master.floating_ip) == (
        '172.24.4.11', '10.10.0.10', '172.24.4.11')
    assert topology.cluster_fip == '172.24.4.10'
    assert topology.cluster_ip == '10.10.0.10'


def test_members_follow_creation_order_not_names(state_path):
    state = make_state(state_path, workers=3)
    # member names sort the other way round than the hosts were created
    for host, name in zip(state.hosts[1:], ('zzz', 'mmm', 'aaa'),
                          strict=True):
        host.member_name = name
    lab_state.save(state, state_path)
    topology, _ = _read(state_path, params())
    assert [w.member_name for w in topology.workers] == ['zzz', 'mmm', 'aaa']


def test_top_level_servers_without_groups(state_path):
    state = make_state(state_path, masters=1, workers=1)
    for layout in state.layouts:
        layout.group = None
    lab_state.save(state, state_path)
    topology, _ = _read(state_path, params(master_aspect=None,
                                           worker_aspect=None))
    assert [(h.server_name, h.server_id, h.ssh_ip) for h in topology.hosts] \
        == [('masterNode', 'server-master-0-g0', '10.10.0.10'),
            ('workerNode', 'server-worker-0-g0', '10.10.0.20')]
    assert topology.masters[0].member_name is None


def test_http_calls_are_bounded(state_path):
    make_state(state_path, masters=3, workers=2, ha=True, storage=True)
    topology, served = _read(state_path, params(ha=True, storage=True))
    paths = [s.path for s in served]
    # 2 for the listing (Heat redirects the id-only URL), then per VM its
    # server and its port, the VIP port, the storage volume.
    assert len(paths) == 2 + 2 * len(topology.hosts) + 1 + 1
    assert len(set(paths)) == len(paths)  # nothing fetched twice
    assert all(s.status in (200, 302) for s in served)


def test_simple_flavour_fetches_the_cluster_port_once(state_path):
    make_state(state_path, masters=1, workers=2)
    topology, served = _read(state_path, params())
    assert len(served) == 2 + 2 * len(topology.hosts)


def test_missing_group_names_stack_and_resources(state_path):
    make_state(state_path)
    with pytest.raises(TopologyError) as caught:
        _read(state_path, params(master_aspect='masters'))
    message = str(caught.value)
    assert f'stack {STACK_ID}' in message
    assert "group 'masters' not found" in message
    assert 'master_instance, worker_instance' in message


def test_missing_port_names_member_and_resources(state_path):
    make_state(state_path)
    cluster_params = params()
    cluster_params = dataclasses.replace(
        cluster_params, worker=dataclasses.replace(
            cluster_params.worker, nic_cp_name='workerNode_CP9'))
    with pytest.raises(TopologyError) as caught:
        _read(state_path, cluster_params)
    message = str(caught.value)
    assert "member 'mw0000000000' of group 'worker_instance'" in message
    assert "'workerNode_CP9'" in message
    assert 'workerNode, workerNode_CP2' in message


def test_missing_cluster_port(state_path):
    make_state(state_path, masters=3)
    with pytest.raises(TopologyError, match="cluster_cp_name 'vip_CP' not "
                                            'found'):
        _read(state_path, params(ha=True))


def test_unknown_stack(state_path):
    make_state(state_path)
    with pytest.raises(TopologyError, match=r'stack nope: .*not found'):
        _read(state_path, params(), stack_id='nope')


def test_wrong_token(state_path):
    make_state(state_path)
    with running(state_path) as server:
        heat = client(server, token='wrong')
        with pytest.raises(TopologyError, match='Authentication failed'):
            read_topology(heat, STACK_ID, params())


def test_no_members_in_master_group(state_path):
    make_state(state_path, masters=0)
    with pytest.raises(TopologyError, match='no master VM'):
        _read(state_path, params())


def test_read_members_of_a_scale_out(state_path):
    make_state(state_path, workers=4)
    with running(state_path) as server:
        hosts = read_members(client(server), STACK_ID, params(),
                             ['stack-worker-3-g0', 'stack-worker-2-g0'])
        with pytest.raises(TopologyError, match='no group member with '
                                                'stack id gone'):
            read_members(client(server), STACK_ID, params(), ['gone'])
    assert [h.nic_ip for h in hosts] == ['10.10.0.22', '10.10.0.23']


def test_full_stack_identifier_avoids_the_redirect(state_path):
    make_state(state_path)
    topology, served = _read(state_path, params(),
                             stack_id=f'{STACK_NAME}/{STACK_ID}')
    assert len(served) == 1 + 2 * len(topology.hosts)


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
    for name in ('heat_endpoint', 'heat_token'):
        CONF.clear_override(name, group=lab_conf.GROUP)


def test_client_for_configured_endpoint(state_path, heat_options):
    """heat_client = lab: the lab's factory, its endpoint and token
    from the lab's own option group."""
    make_state(state_path)
    with running(state_path) as server:
        CONF.set_override('heat_client', 'lab', group='kubernetes_mgmt')
        CONF.set_override('heat_endpoint', server.endpoint(TENANT),
                          group='kubernetes_mgmt_lab')
        CONF.set_override('heat_token', TOKEN, group='kubernetes_mgmt_lab')
        heat = heat_client_for(types.SimpleNamespace(vim_connection_info=[]))
        assert heat.stacks.get(STACK_ID).stack_name == STACK_NAME


def test_lab_client_without_endpoint_names_the_option(heat_options):
    CONF.set_override('heat_client', 'lab', group='kubernetes_mgmt')
    with pytest.raises(MgmtDriverError,
                       match=r'\[kubernetes_mgmt_lab\] heat_endpoint'):
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


def test_client_through_tacker_vim(heat_options, monkeypatch):
    seen = {}

    class VimClient:
        def get_vim(self, context, vim_id=None, region_name=None):
            seen['get_vim'] = (context, vim_id, region_name)
            return {'vim_id': vim_id, 'vim_auth': {
                'auth_url': 'http://keystone/v3', 'username': 'nfv',
                'password': 'vim-secret', 'region': region_name}}

    class HeatClient:
        def __init__(self, auth_attr, region_name=None):
            seen['auth'] = (auth_attr, region_name)
            self.heat = 'the heatclient'

    fakes = {
        'tacker': types.ModuleType('tacker'),
        'tacker.context': types.SimpleNamespace(
            get_admin_context=lambda: 'admin'),
        'tacker.vnfm': types.ModuleType('tacker.vnfm'),
        'tacker.vnfm.vim_client': types.SimpleNamespace(VimClient=VimClient),
        'tacker.vnfm.infra_drivers': types.ModuleType('x'),
        'tacker.vnfm.infra_drivers.openstack': types.ModuleType('x'),
        'tacker.vnfm.infra_drivers.openstack.heat_client':
            types.SimpleNamespace(HeatClient=HeatClient),
    }
    for name, module in fakes.items():
        monkeypatch.setitem(sys.modules, name, module)
    for parent, child, attr in (
            ('tacker', 'tacker.context', 'context'),
            ('tacker', 'tacker.vnfm', 'vnfm'),
            ('tacker.vnfm', 'tacker.vnfm.vim_client', 'vim_client'),
            ('tacker.vnfm', 'tacker.vnfm.infra_drivers', 'infra_drivers'),
            ('tacker.vnfm.infra_drivers',
             'tacker.vnfm.infra_drivers.openstack', 'openstack'),
            ('tacker.vnfm.infra_drivers.openstack',
             'tacker.vnfm.infra_drivers.openstack.heat_client',
             'heat_client')):
        setattr(fakes[parent], attr, fakes[child])
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

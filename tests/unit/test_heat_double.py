"""The lab's Heat API double, driven only through python-heatclient."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest
from heatclient import exc

from kubernetes_mgmt_lab import state as lab_state
from kubernetes_mgmt_lab.heat import update
from kubernetes_mgmt_lab.heat.fake import (
    FAKE_VOLUME_ID,
    STACK_ID,
    STACK_NAME,
    VIP,
    StubLab,
    client,
    make_state,
    running,
)
from kubernetes_mgmt_lab.heat.update import UpdatePlan


@pytest.fixture
def state_path(tmp_path):
    return str(tmp_path / 'lab.json')


def _by_name(resources):
    return {r.resource_name: r for r in resources}


def _desired(role_server: str, size: int) -> dict:
    return {'nfv': {'VDU': {role_server: {'desired_capacity': size}}}}


# -- stacks ---------------------------------------------------------------

def test_stack_get_by_id_and_by_name_and_id(state_path):
    make_state(state_path)
    with running(state_path) as server:
        heat = client(server)
        by_id = heat.stacks.get(STACK_ID)
        by_full = heat.stacks.get(f'{STACK_NAME}/{STACK_ID}')
    for stack in (by_id, by_full):
        assert stack.stack_name == STACK_NAME
        assert stack.id == STACK_ID
        assert stack.stack_status == 'CREATE_COMPLETE'
        assert stack.outputs == []
    nfv = json.loads(by_id.parameters['nfv'])
    assert nfv == {'VDU': {'masterNode': {'desired_capacity': 1},
                           'workerNode': {'desired_capacity': 2}}}
    # the id-only URL is a lookup answered with a redirect, like Heat's
    assert [s.status for s in server.served] == [302, 200, 200]


def test_unknown_stack_is_404_with_heat_error(state_path):
    make_state(state_path)
    with running(state_path) as server:
        with pytest.raises(exc.HTTPNotFound) as caught:
            client(server).stacks.get('no-such-stack')
    assert caught.value.error['error']['type'] == 'EntityNotFound'
    assert 'no-such-stack' in str(caught.value)


def test_wrong_token_is_401(state_path):
    make_state(state_path)
    with running(state_path) as server:
        with pytest.raises(exc.HTTPUnauthorized):
            client(server, token='wrong').stacks.get(STACK_ID)
        with pytest.raises(exc.HTTPUnauthorized):
            client(server, token='wrong').resources.list(STACK_ID)


def test_nested_stacks_are_listed_by_owner(state_path):
    make_state(state_path)
    with running(state_path) as server:
        heat = client(server)
        groups = list(heat.stacks.list(
            filters={'owner_id': STACK_ID, 'show_nested': True}))
        assert {s.stack_name.split('-')[2] for s in groups} == {
            'master_instance', 'worker_instance'}
        members = list(heat.stacks.list(
            filters={'owner_id': groups[0].id, 'show_nested': True}))
        top_only = list(heat.stacks.list())
    assert all(s.parent == STACK_ID for s in groups)
    assert [s.id for s in members] == ['stack-master-0-g0']
    assert [s.id for s in top_only] == [STACK_ID]


# -- resources ------------------------------------------------------------

def test_simple_listing_mirrors_base_hot(state_path):
    make_state(state_path)
    with running(state_path) as server:
        heat = client(server)
        top = _by_name(heat.resources.list(STACK_ID))
        deep = heat.resources.list(STACK_ID, nested_depth=2)
    assert set(top) == {'master_instance', 'worker_instance'}
    assert top['master_instance'].resource_type == \
        'OS::Heat::AutoScalingGroup'
    members = [r for r in deep if r.resource_type == 'nested_worker.yaml']
    assert [m.parent_resource for m in members] == ['worker_instance'] * 2
    assert [m.physical_resource_id for m in members] == [
        'stack-worker-0-g0', 'stack-worker-1-g0']
    servers = [r for r in deep if r.resource_type == 'OS::Nova::Server']
    assert [s.physical_resource_id for s in servers] == [
        'server-master-0-g0', 'server-worker-0-g0', 'server-worker-1-g0']
    member = members[0]
    nested = [ln['href'] for ln in member.links if ln['rel'] == 'nested']
    assert nested[0].endswith('/stack-worker-0-g0')
    # a server's stack is its member's nested stack, named like Heat's
    worker_server = servers[1]
    assert worker_server.parent_resource == member.resource_name
    assert worker_server.stack_name == nested[0].split('/')[-2]
    assert worker_server.stack_name.startswith(
        f'{STACK_NAME}-worker_instance-')
    assert all(r.resource_status == 'CREATE_COMPLETE' for r in deep)


def test_port_server_and_group_attributes(state_path):
    make_state(state_path)
    with running(state_path) as server:
        heat = client(server)
        group = heat.resources.get(STACK_ID, 'worker_instance')
        port = heat.resources.get('stack-worker-1-g0', 'workerNode_CP2')
        vm = heat.resources.get('stack-worker-1-g0', 'workerNode')
    assert group.attributes['current_size'] == 2
    assert group.attributes['refs'] == ['stack-worker-0-g0',
                                        'stack-worker-1-g0']
    attrs = port.attributes
    assert attrs['fixed_ips'][0]['ip_address'] == '10.10.0.21'
    assert attrs['subnets'][0]['cidr'] == '10.10.0.0/24'
    assert attrs['fixed_ips'][0]['subnet_id'] == attrs['subnets'][0]['id']
    assert attrs['device_id'] == 'server-worker-1-g0'
    assert attrs['allowed_address_pairs'] == []
    assert attrs['mac_address'].startswith('fa:16:3e:')
    assert vm.attributes['OS-EXT-SRV-ATTR:host'] == 'compute-1'
    assert vm.attributes['OS-EXT-AZ:availability_zone'] == 'az-1'
    assert vm.attributes['server_groups'] == []
    assert vm.attributes['name'] == 'worker-1'
    assert vm.attributes['addresses']['net0'][0]['addr'] == '10.10.0.21'


def test_ha_vip_port_and_address_pairs(state_path):
    make_state(state_path, masters=3, ha=True)
    with running(state_path) as server:
        heat = client(server)
        vip = heat.resources.get(STACK_ID, 'vip_CP')
        master_port = heat.resources.get('stack-master-2-g0',
                                         'masterNode_CP1')
        worker_port = heat.resources.get('stack-worker-0-g0',
                                         'workerNode_CP2')
    assert vip.resource_type == 'OS::Neutron::Port'
    assert vip.attributes['fixed_ips'][0]['ip_address'] == VIP
    assert [p['ip_address'] for p in
            master_port.attributes['allowed_address_pairs']] == [VIP]
    assert worker_port.attributes['allowed_address_pairs'] == []


def test_storage_server_and_volume_in_top_stack(state_path):
    make_state(state_path, storage=True)
    with running(state_path) as server:
        heat = client(server)
        top = _by_name(heat.resources.list(STACK_ID))
        volume = heat.resources.get(STACK_ID, 'storage_server_volume')
    assert top['storage_server'].resource_type == 'OS::Nova::Server'
    assert top['storage_server_CP'].resource_type == 'OS::Neutron::Port'
    assert top['storage_server_volume'].physical_resource_id == \
        FAKE_VOLUME_ID
    assert volume.attributes['size'] == 1       # GiB, as Cinder says
    attachment = volume.attributes['attachments'][0]
    assert attachment == {**attachment, 'device': '/dev/vdb',
                          'server_id': 'server-storage-0-g0'}


def test_volume_device_and_size_as_set_for_nova_and_cinder(state_path):
    state = make_state(state_path, storage=True)
    state.hosts[-1].guest_devices = {'storage_server_volume': '/dev/vdc'}
    state.hosts[-1].volume_gib = {'storage_server_volume': 5}
    lab_state.save(state, state_path)
    with running(state_path) as server:
        volume = client(server).resources.get(STACK_ID,
                                              'storage_server_volume')
    assert volume.attributes['size'] == 5
    # Nova reports where the guest has it unless told otherwise ...
    assert volume.attributes['attachments'][0]['device'] == '/dev/vdc'
    state.hosts[-1].reported_devices = {'storage_server_volume': '/dev/vdb'}
    lab_state.save(state, state_path)
    with running(state_path) as server:
        volume = client(server).resources.get(STACK_ID,
                                              'storage_server_volume')
    # ... and may name another device than the guest does.
    assert volume.attributes['attachments'][0]['device'] == '/dev/vdb'


def test_floating_ips(state_path):
    make_state(state_path, floating_ips={
        'cluster_fip': '172.24.4.10',
        'worker-1/workerNode_FloatingIP': '172.24.4.21'})
    with running(state_path) as server:
        heat = client(server)
        cluster = heat.resources.get(STACK_ID, 'cluster_fip')
        member = heat.resources.get('stack-worker-1-g0',
                                    'workerNode_FloatingIP')
        other = _by_name(heat.resources.list('stack-worker-0-g0'))
    assert cluster.resource_type == 'OS::Neutron::FloatingIP'
    assert cluster.attributes['floating_ip_address'] == '172.24.4.10'
    assert member.attributes['floating_ip_address'] == '172.24.4.21'
    assert member.attributes['fixed_ip_address'] == '10.10.0.21'
    assert 'workerNode_FloatingIP' not in other


def test_unknown_resource_is_404(state_path):
    make_state(state_path)
    with running(state_path) as server:
        with pytest.raises(exc.HTTPNotFound) as caught:
            client(server).resources.get(STACK_ID, 'nothing_here')
    assert 'nothing_here' in str(caught.value)


def test_state_is_reread_on_every_request(state_path):
    make_state(state_path, workers=1)
    with running(state_path) as server:
        heat = client(server)
        before = heat.resources.get(STACK_ID, 'worker_instance')
        make_state(state_path, workers=3)
        after = heat.resources.get(STACK_ID, 'worker_instance')
    assert before.attributes['current_size'] == 1
    assert after.attributes['current_size'] == 3


# -- updates --------------------------------------------------------------

def test_scale_out_through_desired_capacity(state_path):
    make_state(state_path)
    lab = StubLab(state_path)
    with running(state_path, lab) as server:
        heat = client(server)
        heat.stacks.update(STACK_ID, existing=True,
                           parameters=_desired('workerNode', 4))
        stack = heat.stacks.get(STACK_ID)
        group = heat.resources.get(STACK_ID, 'worker_instance')
    assert lab.calls == [('add_hosts', 'worker x2')]
    assert stack.stack_status == 'UPDATE_COMPLETE'
    assert group.attributes['current_size'] == 4


def test_scale_in_removes_unhealthy_members_then_the_oldest(state_path):
    make_state(state_path, workers=4)
    lab = StubLab(state_path)
    with running(state_path, lab) as server:
        heat = client(server)
        # As Tacker does: mark the chosen member, then lower the capacity.
        heat.resources.mark_unhealthy(
            'stack-worker-2-g0', 'workerNode', True, 'Scale')
        heat.stacks.update(STACK_ID, existing=True, parameters={
            'nfv': json.dumps(_desired('workerNode', 2)['nfv'])})
    assert lab.calls == [('remove_host', 'worker-2'),
                         ('remove_host', 'worker-0')]


def test_unhealthy_member_is_replaced_on_update(state_path):
    make_state(state_path)
    lab = StubLab(state_path)
    with running(state_path, lab) as server:
        heat = client(server)
        group_id = heat.resources.get(
            STACK_ID, 'worker_instance').physical_resource_id
        # As Tacker's heal does for a group member (by the group's id).
        heat.resources.mark_unhealthy(group_id, 'mw0000000001', True,
                                      'Healing')
        marked = heat.resources.get(group_id, 'mw0000000001')
        heat.stacks.update(STACK_ID, existing=True)
        server_after = heat.resources.get('stack-worker-1-g0', 'workerNode')
    assert marked.resource_status == 'CHECK_FAILED'
    assert lab.calls == [('replace_host', 'worker-1')]
    assert server_after.physical_resource_id == 'server-worker-1-g1'
    assert not lab_state.load(state_path).host('worker-1').unhealthy


def test_unhealthy_storage_server_is_replaced(state_path):
    make_state(state_path, storage=True)
    lab = StubLab(state_path)
    with running(state_path, lab) as server:
        heat = client(server)
        heat.resources.mark_unhealthy(STACK_ID, 'storage_server', True,
                                      'Healing')
        heat.stacks.update(STACK_ID, existing=True)
    assert lab.calls == [('replace_host', 'storage-0')]


def test_mark_healthy_again_cancels_the_replacement(state_path):
    make_state(state_path)
    lab = StubLab(state_path)
    with running(state_path, lab) as server:
        heat = client(server)
        heat.resources.mark_unhealthy('stack-master-0-g0', 'masterNode_CP1',
                                      True, 'x')
        heat.resources.mark_unhealthy('stack-master-0-g0', 'masterNode_CP1',
                                      False, 'x')
        heat.stacks.update(STACK_ID, existing=True)
    assert lab.calls == []


def test_marking_a_group_is_refused(state_path):
    make_state(state_path)
    with running(state_path) as server:
        with pytest.raises(exc.HTTPBadRequest):
            client(server).resources.mark_unhealthy(
                STACK_ID, 'worker_instance', True, 'x')


def test_failed_update_shows_in_stack_status(state_path):
    make_state(state_path)
    lab = StubLab(state_path, fail=True)
    with running(state_path, lab) as server:
        heat = client(server)
        heat.stacks.update(STACK_ID, existing=True,
                           parameters=_desired('masterNode', 2))
        stack = heat.stacks.get(STACK_ID)
    assert stack.stack_status == 'UPDATE_FAILED'
    assert 'failed on purpose' in stack.stack_status_reason


def test_bad_capacity_is_400(state_path):
    make_state(state_path)
    with running(state_path) as server:
        with pytest.raises(exc.HTTPBadRequest) as caught:
            client(server).stacks.update(
                STACK_ID, existing=True,
                parameters=_desired('workerNode', 'many'))
    assert 'workerNode.desired_capacity' in str(caught.value)


def test_template_desired_capacity_is_honoured(state_path):
    state = make_state(state_path, workers=1)
    template = {'resources': {'worker_instance': {
        'type': 'OS::Heat::AutoScalingGroup',
        'properties': {'desired_capacity': 2}}}}
    assert update.desired_sizes(state, {'template': template}) == {
        'worker': 2}
    assert update.desired_sizes(state, {'template': json.dumps(template)}) \
        == {'worker': 2}


def test_plan_is_pure_and_ordered(state_path):
    state = make_state(state_path, masters=1, workers=3, storage=True)
    state.host('worker-1').unhealthy = True
    state.host('storage-0').unhealthy = True
    assert update.plan(state, {'worker': 3}) == UpdatePlan(
        replace=['worker-1', 'storage-0'])
    assert update.plan(state, {'worker': 1, 'master': 2}) == UpdatePlan(
        remove=['worker-1', 'worker-0'], replace=['storage-0'],
        add=['master'])


# -- the command line -----------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def test_cli_serves_the_state(state_path):
    make_state(state_path)
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, '-m', 'kubernetes_mgmt_lab.heat_api',
         '--state', state_path, '--listen', f'127.0.0.1:{port}'],
        stderr=subprocess.PIPE, text=True)
    try:
        from heatclient import client as heat_client
        heat = heat_client.Client(
            '1', endpoint=f'http://127.0.0.1:{port}/v1/tenant0',
            token='lab-token-123')
        deadline = time.monotonic() + 20
        while True:
            try:
                stack = heat.stacks.get(STACK_ID)
                break
            except exc.CommunicationError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert stack.stack_name == STACK_NAME
    assert f'GET /v1/tenant0/stacks/{STACK_ID}' in err
    assert 'lab-token-123' not in err


# -- placement: anti-affinity, compute hosts, admin view -------------------

GROUP = 'worker_anti_affinity_group'


def _server(heat, host: str, server: str = 'workerNode'):
    return heat.resources.get(f'stack-{host}-g0', server)


def test_anti_affinity_group_and_its_members(state_path):
    make_state(state_path, workers=2, anti_affinity=True)
    with running(state_path) as server:
        heat = client(server)
        top = _by_name(heat.resources.list(STACK_ID))
        group = heat.resources.get(STACK_ID, GROUP)
        workers = [_server(heat, f'worker-{i}') for i in range(2)]
        master = _server(heat, 'master-0', 'masterNode')
    assert top[GROUP].resource_type == 'OS::Nova::ServerGroup'
    attrs = group.attributes
    assert attrs['id'] == group.physical_resource_id
    assert (attrs['policy'], attrs['policies']) == (
        'anti-affinity', ['anti-affinity'])
    assert attrs['name'] == f'k8s-workers-{STACK_ID}'
    assert attrs['members'] == [w.physical_resource_id for w in workers]
    for worker in workers:
        assert worker.attributes['server_groups'] == [attrs['id']]
    assert master.attributes['server_groups'] == []
    assert [w.attributes['OS-EXT-SRV-ATTR:host'] for w in workers] == [
        'compute-0', 'compute-1']


def test_no_server_group_without_anti_affinity(state_path):
    make_state(state_path)
    with running(state_path) as server:
        heat = client(server)
        top = _by_name(heat.resources.list(STACK_ID))
        with pytest.raises(exc.HTTPNotFound):
            heat.resources.get(STACK_ID, GROUP)
    assert GROUP not in top


def test_scale_out_beyond_the_compute_hosts_fails_like_heat(state_path):
    make_state(state_path, workers=2, anti_affinity=True, compute_hosts=3)
    lab = StubLab(state_path)
    with running(state_path, lab) as server:
        heat = client(server)
        heat.stacks.update(STACK_ID, existing=True,
                           parameters=_desired('workerNode', 3))
        third = lab_state.load(state_path).hosts[-1]
        heat.stacks.update(STACK_ID, existing=True,
                           parameters=_desired('workerNode', 4))
        failed = heat.stacks.get(STACK_ID)
        group = heat.resources.get(STACK_ID, 'worker_instance')
        members = heat.resources.get(STACK_ID, GROUP).attributes['members']
        # The next update that succeeds clears the failure.
        heat.stacks.update(STACK_ID, existing=True,
                           parameters=_desired('workerNode', 3))
        recovered = heat.stacks.get(STACK_ID)
        group_after = heat.resources.get(STACK_ID, 'worker_instance')
    assert third.compute_host == 'compute-2'
    assert failed.stack_status == 'UPDATE_FAILED'
    assert failed.stack_status_reason.startswith(
        'Resource UPDATE failed: ResourceInError: resources.worker_instance'
        '.resources.')
    assert 'No valid host was found. There are not enough hosts ' \
        'available., Code: 500' in failed.stack_status_reason
    assert group.resource_status == 'UPDATE_FAILED'
    assert 'No valid host was found' in group.resource_status_reason
    assert group.attributes['current_size'] == 3    # nothing was added
    assert len(members) == 3
    assert recovered.stack_status == 'UPDATE_COMPLETE'
    assert group_after.resource_status == 'CREATE_COMPLETE'


def test_healed_group_member_moves_to_a_free_compute_host(state_path):
    make_state(state_path, workers=2, anti_affinity=True, compute_hosts=3)
    lab = StubLab(state_path)
    with running(state_path, lab) as server:
        heat = client(server)
        heat.resources.mark_unhealthy('stack-worker-1-g0', 'workerNode',
                                      True, 'Healing')
        heat.stacks.update(STACK_ID, existing=True)
        # The member (its nested stack) stays; its server is new.
        moved = _server(heat, 'worker-1')
        heat.resources.mark_unhealthy('stack-worker-1-g0', 'workerNode',
                                      True, 'Healing')
        heat.stacks.update(STACK_ID, existing=True)
        back = _server(heat, 'worker-1')
    assert moved.physical_resource_id == 'server-worker-1-g1'
    assert moved.attributes['OS-EXT-SRV-ATTR:host'] == 'compute-2'
    # compute-0 is taken by worker-0: the only other free one is compute-1.
    assert back.attributes['OS-EXT-SRV-ATTR:host'] == 'compute-1'


def test_healed_member_stays_when_no_other_host_is_free(state_path):
    make_state(state_path, workers=2, anti_affinity=True, compute_hosts=2)
    lab = StubLab(state_path)
    with running(state_path, lab) as server:
        heat = client(server)
        heat.resources.mark_unhealthy('stack-worker-0-g0', 'workerNode',
                                      True, 'Healing')
        heat.stacks.update(STACK_ID, existing=True)
        healed = _server(heat, 'worker-0')
        stack = heat.stacks.get(STACK_ID)
    assert stack.stack_status == 'UPDATE_COMPLETE'
    assert healed.physical_resource_id == 'server-worker-0-g1'
    assert healed.attributes['OS-EXT-SRV-ATTR:host'] == 'compute-0'


def test_non_admin_view_hides_the_compute_host(state_path):
    make_state(state_path, admin_view=False)
    with running(state_path) as server:
        heat = client(server)
        hidden = _server(heat, 'worker-1').attributes
        with lab_state.locked(state_path) as state:
            state.admin_view = True         # what Lab.set_admin_view does
        shown = _server(heat, 'worker-1').attributes
    for key in ('OS-EXT-SRV-ATTR:host', 'OS-EXT-SRV-ATTR:hypervisor_hostname',
                'OS-EXT-SRV-ATTR:hostname'):
        assert key not in hidden
        assert key in shown
    assert hidden['OS-EXT-AZ:availability_zone'] == 'az-1'
    assert shown['OS-EXT-SRV-ATTR:host'] == 'compute-1'

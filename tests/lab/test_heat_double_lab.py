"""The Heat double process of a real lab: topology, scale and heal."""
from __future__ import annotations

import json
import subprocess

import pytest
from heatclient import client as heat_client

from kubernetes_mgmt.topology.heat import read_members, read_topology
from kubernetes_mgmt_lab import placement, volumes
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.heat.fake import params

pytestmark = pytest.mark.lab


def _heat(lab):
    return heat_client.Client('1', endpoint=lab.state.heat_url,
                              token=lab.state.heat_token)


def _workers(lab):
    return [h for h in lab.state.hosts if h.role == 'worker']


def _set_workers(heat, lab, count: int) -> None:
    heat.stacks.update(lab.state.stack_id, existing=True, parameters={
        'nfv': json.dumps({'VDU': {'workerNode': {
            'desired_capacity': count}}})})
    assert heat.stacks.get(lab.state.stack_id).stack_status == \
        'UPDATE_COMPLETE'


def test_topology_matches_the_lab(lab):
    state = lab.state
    topology = read_topology(_heat(lab), state.stack_id, params())
    expected = [(h.role, h.ip, h.server_id, h.member_name)
                for h in state.hosts if h.role in ('master', 'worker')]
    assert [(h.role.value, h.ssh_ip, h.server_id, h.member_name)
            for h in topology.hosts] == expected
    assert topology.cluster_ip == topology.masters[0].nic_ip


def test_ha_topology_has_the_vip_with_its_prefix(lab):
    state = lab.state
    topology = read_topology(_heat(lab), state.stack_id, params(ha=True))
    assert len(topology.hosts) >= 5 and topology.is_ha
    assert topology.cluster_ip == state.vip
    assert topology.cluster_prefixlen == int(state.subnet.split('/')[1])
    by_ip = {h.ip: h for h in state.hosts}
    for host in topology.hosts:
        lab_host = by_ip[host.ssh_ip]
        assert host.nic_ip == lab_host.ip
        assert host.compute_host == lab_host.compute_host
        assert host.zone == lab_host.zone


def test_scale_out_heal_and_scale_in(lab):
    heat = _heat(lab)
    stack_id = lab.state.stack_id
    before = _workers(lab)
    _set_workers(heat, lab, len(before) + 1)
    new, = [h for h in _workers(lab) if h.name not in
            {b.name for b in before}]
    try:
        assert lab.ssh_accepts(new.name) >= 0  # its sshd runs
        host, = read_members(heat, stack_id, params(),
                             [new.member_stack_id])
        assert (host.nic_ip, host.server_id) == (new.ip, new.server_id)

        # heal: the server is replaced, address and member stay
        heat.resources.mark_unhealthy(new.member_stack_id, 'workerNode',
                                      True, 'Healing')
        _set_workers(heat, lab, len(before) + 1)
        healed = lab.state.host(new.name)
        assert healed.server_id != new.server_id
        assert (healed.ip, healed.member_name) == (new.ip, new.member_name)
    finally:
        # scale in as Tacker does: mark the member, lower the capacity
        group = heat.resources.get(stack_id, 'worker_instance')
        heat.resources.mark_unhealthy(group.physical_resource_id,
                                      new.member_name, True, 'Scale')
        _set_workers(heat, lab, len(before))
    assert [h.name for h in _workers(lab)] == [b.name for b in before]


def test_storage_volume_shows_its_device_and_heal_gives_a_new_one(lab):
    heat = _heat(lab)
    stack_id = lab.state.stack_id
    volume_name = 'storage_server_volume'
    storage = lab.add_host('storage')
    try:
        volume = heat.resources.get(stack_id, volume_name)
        attachment = volume.attributes['attachments'][0]
        assert volume.physical_resource_id == storage.volume_ids[volume_name]
        # Where the guest has it, with the link udev makes for virtio.
        assert attachment['device'] == volumes.GUEST_DEVICE
        assert volume.attributes['size'] == volumes.SIZE_GIB
        assert attachment['server_id'] == storage.server_id
        link = lab.run_in_host(storage.name, [
            'readlink', '-f', f'{volumes.BY_ID}/'
            f'{volumes.by_id_name(storage.volume_ids[volume_name])}'])
        assert link.stdout.strip() == volumes.GUEST_DEVICE
        blank = lab.run_in_host(storage.name, [
            'sh', '-ec', f'mkfs.ext4 -q {attachment["device"]}'])
        assert blank.returncode == 0, blank.stderr

        # Heal as Tacker does: mark the server, update the stack.
        heat.resources.mark_unhealthy(stack_id, 'storage_server', True,
                                      'Healing')
        heat.stacks.update(stack_id, existing=True)
        assert heat.stacks.get(stack_id).stack_status == 'UPDATE_COMPLETE'
        healed = lab.host(storage.name)
        volume = heat.resources.get(stack_id, volume_name)
        device = volume.attributes['attachments'][0]['device']
        assert volume.physical_resource_id == healed.volume_ids[volume_name]
        assert healed.volume_ids != storage.volume_ids
        assert device == volumes.GUEST_DEVICE
        link = lab.run_in_host(storage.name, [
            'readlink', '-f', f'{volumes.BY_ID}/'
            f'{volumes.by_id_name(healed.volume_ids[volume_name])}'])
        assert link.stdout.strip() == device
        probe = lab.run_in_host(storage.name,
                                ['blkid', '-p', '-o', 'export', device])
        assert probe.returncode == 2        # new and empty
    finally:
        lab.remove_host(storage.name)


# -- placement: anti-affinity, admin view, zones ----------------------------

@pytest.fixture(scope='module')
def affinity_lab():
    from kubernetes_mgmt_lab.testing import throwaway_lab, unavailable_reason
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with throwaway_lab(masters=1, workers=2, anti_affinity=True,
                       compute_hosts=3) as lab:
        yield lab


def _server(heat, lab, name: str):
    host = lab.host(name)
    return heat.resources.get(host.member_stack_id, 'workerNode')


def _compute_hosts(lab) -> dict[str, str]:
    return {h.name: h.compute_host for h in _workers(lab)}


def test_anti_affinity_group_places_heals_and_refuses(affinity_lab):
    lab = affinity_lab
    heat = _heat(lab)
    stack_id = lab.state.stack_id
    group = heat.resources.get(stack_id, placement.ANTI_AFFINITY_GROUP)
    assert group.resource_type == 'OS::Nova::ServerGroup'
    assert group.attributes['policies'] == ['anti-affinity']
    assert group.attributes['members'] == [h.server_id
                                           for h in _workers(lab)]
    assert _compute_hosts(lab) == {'worker-0': 'compute-0',
                                   'worker-1': 'compute-1'}
    topology = read_topology(heat, stack_id, params())
    assert {h.server_id: h.compute_host for h in topology.workers} == \
        {h.server_id: h.compute_host for h in _workers(lab)}
    for name in ('worker-0', 'worker-1'):
        attrs = _server(heat, lab, name).attributes
        assert attrs['server_groups'] == [group.physical_resource_id]
        assert attrs['OS-EXT-SRV-ATTR:host'] == lab.host(name).compute_host

    # Heal worker-1: rebuilt on the free compute host.
    heat.resources.mark_unhealthy(lab.host('worker-1').member_stack_id,
                                  'workerNode', True, 'Healing')
    _set_workers(heat, lab, 2)
    assert _compute_hosts(lab) == {'worker-0': 'compute-0',
                                   'worker-1': 'compute-2'}
    assert _server(heat, lab, 'worker-1').attributes[
        'OS-EXT-SRV-ATTR:host'] == 'compute-2'

    # Scale out onto the last free host, then beyond: NoValidHost.
    _set_workers(heat, lab, 3)
    assert sorted(_compute_hosts(lab).values()) == [
        'compute-0', 'compute-1', 'compute-2']
    netns_before = _netns()
    heat.stacks.update(stack_id, existing=True, parameters={
        'nfv': json.dumps({'VDU': {'workerNode': {
            'desired_capacity': 4}}})})
    stack = heat.stacks.get(stack_id)
    assert stack.stack_status == 'UPDATE_FAILED'
    assert 'No valid host was found' in stack.stack_status_reason
    assert heat.resources.get(stack_id, 'worker_instance'
                              ).resource_status == 'UPDATE_FAILED'
    assert len(_workers(lab)) == 3 and _netns() == netns_before
    with pytest.raises(placement.NoValidHost):
        lab.add_host('worker')
    _set_workers(heat, lab, 2)      # back to the module's shape


def _netns(prefix: str = '') -> list[str]:
    out = subprocess.run(['ip', 'netns', 'list'], capture_output=True,
                         text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines()
            if line.startswith(prefix)]


def test_admin_view_can_be_switched_off_and_on(affinity_lab):
    lab = affinity_lab
    heat = _heat(lab)
    name = _workers(lab)[0].name
    lab.set_admin_view(False)
    try:
        attrs = _server(heat, lab, name).attributes
        assert not [k for k in attrs if k.startswith('OS-EXT-SRV-ATTR:')]
        topology = read_topology(heat, lab.state.stack_id, params())
        assert {h.compute_host for h in topology.hosts} == {None}
    finally:
        lab.set_admin_view(True)
    attrs = _server(heat, lab, name).attributes
    assert attrs['OS-EXT-SRV-ATTR:host'] == lab.host(name).compute_host


def test_zones_and_moves(affinity_lab):
    lab = affinity_lab
    heat = _heat(lab)
    first, second = (h.name for h in _workers(lab))
    lab.place(first, zone='az-1')
    assert _server(heat, lab, first).attributes[
        'OS-EXT-AZ:availability_zone'] == 'az-1'
    with pytest.raises(LabError, match='anti-affinity'):
        lab.place(first, compute_host=lab.host(second).compute_host)
    free, = set(lab.state.compute_hosts) - set(
        _compute_hosts(lab).values())
    moved = lab.place(first, compute_host=free, zone='nova')
    assert (moved.compute_host, moved.zone) == (free, 'nova')
    assert _server(heat, lab, first).attributes[
        'OS-EXT-SRV-ATTR:host'] == free
    # Scale-out into a chosen zone, onto the compute host left free.
    extra = lab.add_host('worker', zone='az-2')
    try:
        attrs = _server(heat, lab, extra.name).attributes
        assert attrs['OS-EXT-AZ:availability_zone'] == 'az-2'
        assert attrs['OS-EXT-SRV-ATTR:host'] not in {
            lab.host(first).compute_host, lab.host(second).compute_host}
    finally:
        lab.remove_host(extra.name)


def test_lab_up_with_more_grouped_workers_than_hosts_fails(lab_args):
    from kubernetes_mgmt_lab.manager import Lab

    with pytest.raises(placement.NoValidHost):
        Lab.up(masters=1, workers=3, compute_hosts=2, anti_affinity=True,
               heat=False, **lab_args)
    assert volumes.attached_under(lab_args['root']) == {}
    assert _netns(lab_args['name']) == []

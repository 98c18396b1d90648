"""The Heat double process of a real lab: topology, scale and heal."""
from __future__ import annotations

import json

import pytest
from heatclient import client as heat_client

from kubernetes_mgmt.lab.heat.fake import params
from kubernetes_mgmt.topology.heat import read_members, read_topology

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

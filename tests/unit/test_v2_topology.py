"""Finding a group's VMs in a v2 stack (one top-level nested stack per VM,
``<VDU>-<index>``) and, as before, in a v1 stack (an aspect's scaling
group). Listings are built as Heat lists a stack with nested_depth=2."""
from __future__ import annotations

import types

import pytest

from kubernetes_mgmt.errors import TopologyError
from kubernetes_mgmt.params.cluster_params import NodeGroupParams
from kubernetes_mgmt.topology import heat as topology_heat
from kubernetes_mgmt.topology import heat_listing
from kubernetes_mgmt.topology.heat_listing import Listing, Row
from kubernetes_mgmt.topology.hosts import Role

STACK_ID = 'top-id'
TOP = f'vnf-inst/{STACK_ID}'
WORKERS = 12
MASTER = NodeGroupParams(ssh_cp_name='masterNode_CP1',
                         nic_cp_name='masterNode_CP1', username='ubuntu',
                         password='pw')
WORKER = NodeGroupParams(ssh_cp_name='workerNode_CP2',
                         nic_cp_name='workerNode_CP2', username='ubuntu',
                         password='pw')


def _member_rows(vdu: str, index: int, server: str, cps: tuple[str, ...],
                 created: str, links: bool) -> list[Row]:
    """A top-level ``<VDU>-<index>`` and the nested stack it owns."""
    nested_id = f'{vdu}-{index}-stack-id'
    nested = f'vnf-inst-{vdu}-{index}-abcdefgh/{nested_id}'
    rows = [Row(name=f'{vdu}-{index}', type=f'{vdu}.yaml',
                physical_id=nested_id, stack=TOP,
                nested=nested if links else None, created=created,
                parent=None),
            Row(name=vdu, type=heat_listing.SERVER, physical_id=server,
                stack=nested, nested=None, created=created,
                parent=f'{vdu}-{index}')]
    rows += [Row(name=cp, type=heat_listing.PORT, physical_id=f'port-{cp}-'
                 f'{server}', stack=nested, nested=None, created=created,
                 parent=f'{vdu}-{index}') for cp in cps]
    return rows


def v2_listing(links: bool = True, workers: int = WORKERS) -> Listing:
    rows = _member_rows('masterNode', 0, 'srv-m0', ('masterNode_CP1',),
                        '2024-05-01T10:00:00Z', links)
    for i in range(workers):
        # Created in the opposite order of their indexes: not what counts.
        rows += _member_rows('workerNode', i, f'srv-w{i}',
                             ('workerNode_CP1', 'workerNode_CP2'),
                             f'2024-05-01T10:{59 - i:02d}:00Z', links)
    rows += [
        Row('vip_CP', heat_listing.PORT, 'port-vip', TOP, None,
            '2024-05-01T09:00:00Z', None),
        Row('internal_SG', 'OS::Neutron::SecurityGroup', 'sg-1', TOP, None,
            '2024-05-01T09:00:00Z', None),
        # Named like a VDU instance, but owns no stack.
        Row('mgmt-0', heat_listing.PORT, 'port-mgmt', TOP, None,
            '2024-05-01T09:00:00Z', None),
    ]
    return Listing(STACK_ID, list(reversed(rows)))


@pytest.mark.parametrize('links', [True, False])
def test_v2_workers_in_index_order(links):
    listing = v2_listing(links=links)
    vms = topology_heat._group_vms(listing, Role.WORKER, WORKER)
    assert [vm.member.name for vm in vms] == [
        f'workerNode-{i}' for i in range(WORKERS)]
    for i, vm in enumerate(vms):
        assert vm.role is Role.WORKER
        assert vm.server.physical_id == f'srv-w{i}'
        assert vm.member.physical_id == f'workerNode-{i}-stack-id'
        assert vm.stack == \
            f'vnf-inst-workerNode-{i}-abcdefgh/workerNode-{i}-stack-id'
        assert (vm.ssh_cp, vm.nic_cp) == ('workerNode_CP2',
                                          'workerNode_CP2')
        assert listing.find(vm.stack, vm.ssh_cp).physical_id == \
            f'port-workerNode_CP2-srv-w{i}'


def test_v2_masters_are_only_the_master_vdu():
    vms = topology_heat._group_vms(v2_listing(), Role.MASTER, MASTER)
    assert [(vm.member.name, vm.server.physical_id) for vm in vms] == [
        ('masterNode-0', 'srv-m0')]


def test_v2_group_with_an_aspect_id_not_in_the_stack():
    # An aspect id given in the request (as for v1) while the stack has
    # one nested stack per VM: the VMs are still found.
    worker = NodeGroupParams('workerNode_CP2', 'workerNode_CP2', 'ubuntu',
                             'pw', aspect_id='worker_instance')
    vms = topology_heat._group_vms(v2_listing(), Role.WORKER, worker)
    assert len(vms) == WORKERS
    assert vms[10].member.name == 'workerNode-10'


def test_v2_member_without_the_nic_port_is_named():
    worker = NodeGroupParams('workerNode_CP2', 'workerNode_CP9', 'ubuntu',
                             'pw')
    with pytest.raises(TopologyError) as caught:
        topology_heat._group_vms(v2_listing(), Role.WORKER, worker)
    message = str(caught.value)
    assert "member 'workerNode-0' of group 'workerNode'" in message
    assert "'workerNode_CP9'" in message
    assert 'workerNode_CP1, workerNode_CP2' in message


def test_v2_member_with_two_servers_is_refused():
    rows = [row for stack in v2_listing(workers=2).by_stack.values()
            for row in stack.values()]
    nested = next(r.stack for r in rows if r.parent == 'workerNode-1')
    rows.append(Row('extra', heat_listing.SERVER, 'srv-x', nested, None,
                    '2024-05-01T10:00:00Z', 'workerNode-1'))
    with pytest.raises(TopologyError, match='holds 2 servers'):
        topology_heat._group_vms(Listing(STACK_ID, rows), Role.WORKER,
                                 WORKER)


def test_no_v2_member_and_no_group_falls_back_to_a_top_level_vm():
    rows = [Row('workerNode', heat_listing.SERVER, 'srv-1', TOP, None,
                '', None),
            Row('workerNode_CP2', heat_listing.PORT, 'p-1', TOP, None,
                '', None)]
    vms = topology_heat._group_vms(Listing(STACK_ID, rows), Role.WORKER,
                                   WORKER)
    assert len(vms) == 1
    assert (vms[0].stack, vms[0].member, vms[0].server) == (TOP, None,
                                                            None)


def test_a_missing_aspect_group_is_named():
    rows = [Row('vip_CP', heat_listing.PORT, 'p', TOP, None, '', None)]
    worker = NodeGroupParams('workerNode_CP2', 'workerNode_CP2', 'ubuntu',
                             'pw', aspect_id='worker_instance')
    with pytest.raises(TopologyError, match="group 'worker_instance' not "
                                            'found'):
        topology_heat._group_vms(Listing(STACK_ID, rows), Role.WORKER,
                                 worker)


# -- v1: an aspect's scaling group --------------------------------------------

def v1_listing() -> Listing:
    group = 'vnf-worker_instance-zzz/group-id'
    rows = [Row('worker_instance', 'OS::Heat::AutoScalingGroup', 'group-id',
                TOP, group, '2024-05-01T09:00:00Z', None),
            Row('vip_CP', heat_listing.PORT, 'port-vip', TOP, None,
                '2024-05-01T09:00:00Z', None)]
    # Member names are random; Heat orders by creation time, then name.
    members = (('q7rm', '2024-05-01T10:02:00Z', 'srv-c'),
               ('a1bx', '2024-05-01T10:01:00Z', 'srv-b'),
               ('zz00', '2024-05-01T10:00:00Z', 'srv-a'),
               ('b2cy', '2024-05-01T10:01:00Z', 'srv-b2'))
    for name, created, server in members:
        nested = f'vnf-worker_instance-zzz-{name}-x/{name}-id'
        rows += [
            Row(name, 'worker_instance.hot.yaml', f'{name}-id', group,
                nested, created, 'worker_instance'),
            Row('workerNode', heat_listing.SERVER, server, nested, None,
                created, name),
            Row('workerNode_CP2', heat_listing.PORT, f'port-{server}',
                nested, None, created, name)]
    return Listing(STACK_ID, rows)


def test_v1_group_members_in_heat_order():
    worker = NodeGroupParams('workerNode_CP2', 'workerNode_CP2', 'ubuntu',
                             'pw', aspect_id='worker_instance')
    vms = topology_heat._group_vms(v1_listing(), Role.WORKER, worker)
    assert [(vm.member.name, vm.server.physical_id) for vm in vms] == [
        ('zz00', 'srv-a'), ('a1bx', 'srv-b'), ('b2cy', 'srv-b2'),
        ('q7rm', 'srv-c')]
    assert vms[0].stack == 'vnf-worker_instance-zzz-zz00-x/zz00-id'


# -- read_members: the hosts of a scale-out's new members --------------------

def _resource(row: Row) -> types.SimpleNamespace:
    """``row`` as heatclient lists it (links, parent_resource)."""
    links = [{'rel': 'self', 'href': 'http://heat:8004/v1/t/stacks/'
              f'{row.stack}/resources/{row.name}'},
             {'rel': 'stack', 'href': f'http://heat:8004/v1/t/stacks/'
                                      f'{row.stack}'}]
    if row.nested:
        links.append({'rel': 'nested', 'href': 'http://heat:8004/v1/t/'
                                               f'stacks/{row.nested}'})
    resource = types.SimpleNamespace(
        resource_name=row.name, resource_type=row.type,
        physical_resource_id=row.physical_id, links=links,
        creation_time=row.created)
    if row.parent:
        resource.parent_resource = row.parent
    return resource


class FakeHeat:
    """Heat's resource API over a listing: list, and get with the
    attributes of ports and servers."""

    def __init__(self, listing: Listing):
        self.listing = listing
        self.resources = self
        self.got: list[tuple[str, str]] = []

    def list(self, stack_id, nested_depth):
        assert (stack_id, nested_depth) == (STACK_ID, 2)
        return [_resource(r) for stack in self.listing.by_stack.values()
                for r in stack.values()]

    def get(self, stack, name, with_attr=None):
        self.got.append((stack, name))
        row = self.listing.require(stack, name, 'resource')
        if row.type == heat_listing.PORT:
            index = row.physical_id.rsplit('-w', 1)[-1]
            attrs = {'fixed_ips': [{'ip_address': f'10.0.1.{index}',
                                    'subnet_id': 'sub'}]}
        else:
            attrs = {'OS-EXT-AZ:availability_zone': 'az-1',
                     'OS-EXT-SRV-ATTR:host': 'compute-1'}
        return types.SimpleNamespace(attributes=attrs)


def _params():
    return types.SimpleNamespace(master=MASTER, worker=WORKER)


def test_read_members_finds_the_new_members_by_their_stack_ids():
    heat = FakeHeat(v2_listing())
    hosts = topology_heat.read_members(
        heat, STACK_ID, _params(),
        ['workerNode-10-stack-id', 'workerNode-2-stack-id'])
    assert [(h.member_name, h.server_id, h.ssh_ip) for h in hosts] == [
        ('workerNode-2', 'srv-w2', '10.0.1.2'),
        ('workerNode-10', 'srv-w10', '10.0.1.10')]
    assert all(h.role is Role.WORKER for h in hosts)
    assert hosts[1].member_stack_id == 'workerNode-10-stack-id'
    assert hosts[1].zone == 'az-1'
    # Only the chosen members were read.
    assert {name for _, name in heat.got} == {'workerNode',
                                              'workerNode_CP2'}
    assert len(heat.got) == 4


def test_read_members_names_an_unknown_stack_id():
    with pytest.raises(TopologyError) as caught:
        topology_heat.read_members(FakeHeat(v2_listing(workers=2)),
                                   STACK_ID, _params(), ['nosuch-id'])
    message = str(caught.value)
    assert 'nosuch-id' in message
    assert 'workerNode-1-stack-id' in message
    assert 'masterNode-0-stack-id' in message

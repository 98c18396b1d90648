"""Placement labels: which node gets which label, from the Heat topology
(server groups, compute hosts) and the Grant (zones)."""
from __future__ import annotations

import pytest

from kubernetes_mgmt.cluster.cluster_plan import Node
from kubernetes_mgmt.cluster.placement import (
    VNF_INSTANCE_LABEL,
    VNFC_LABEL,
    node_labels,
)
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.remote.ssh import Endpoint, Login
from kubernetes_mgmt.shim.tacker_objects import grant_zones
from kubernetes_mgmt.topology.hosts import Host, Role, ServerGroup, Topology
from kubernetes_mgmt_lab import tacker_shapes as shapes

ZONES = ('topology.kubernetes.io/zone', 'kubernetes.io/zone')


def node(role: Role, index: int, compute: str | None = 'compute-0',
         groups: tuple[str, ...] = ()) -> Node:
    host = Host(role=role, server_id=f'{role.value}-server-{index}',
                server_name=f'{role.value}Node', ssh_ip=f'10.0.0.{index}',
                nic_ip=f'10.0.0.{index}', compute_host=compute,
                server_groups=groups)
    name = f'{role.value}-{index}'
    endpoint = Endpoint(host.ssh_ip, Login('u', 'p'),
                        label=f'{name}@{host.ssh_ip}')
    return Node(host, name, endpoint)


def topology(*groups: ServerGroup) -> Topology:
    return Topology(stack_id='s', masters=(), workers=(),
                    cluster_ip='10.0.0.1', server_groups=groups)


def group(*members: str, policy: str = 'anti-affinity') -> ServerGroup:
    return ServerGroup('group-1', 'worker_anti_affinity_group', (policy,),
                       members)


def test_workers_of_an_anti_affinity_group_get_their_compute_host():
    master = node(Role.MASTER, 1)
    by_member = node(Role.WORKER, 2, 'compute-1')
    by_attribute = node(Role.WORKER, 3, 'compute-2', groups=('group-1',))
    outside = node(Role.WORKER, 4, 'compute-0')
    labels = node_labels(topology(group(by_member.host.server_id)),
                         [master, by_member, by_attribute, outside], {})
    assert labels == {'worker-2': {'CIS-node': 'compute-1'},
                      'worker-3': {'CIS-node': 'compute-2'}}


def test_affinity_groups_are_not_labelled():
    worker = node(Role.WORKER, 2)
    assert node_labels(topology(group(worker.host.server_id,
                                      policy='affinity')), [worker], {}) == {}


def test_granted_zone_labels_any_node():
    master, worker = node(Role.MASTER, 1), node(Role.WORKER, 2)
    labels = node_labels(topology(), [master, worker],
                         {worker.host.server_id: 'az-1'})
    assert labels == {'worker-2': dict.fromkeys(ZONES, 'az-1')}


def test_every_node_names_its_vnf_instance_and_vnfc():
    master, worker = node(Role.MASTER, 1), node(Role.WORKER, 2)
    vnfcs = {master.host.server_id: 'masterNode-m1',
             worker.host.server_id: 'workerNode-w2'}
    labels = node_labels(topology(), [master, worker],
                         {worker.host.server_id: 'az-1'}, 'inst-1', vnfcs)
    assert labels['master-1'] == {VNF_INSTANCE_LABEL: 'inst-1',
                                  VNFC_LABEL: 'masterNode-m1'}
    assert labels['worker-2'] == {VNF_INSTANCE_LABEL: 'inst-1',
                                  VNFC_LABEL: 'workerNode-w2',
                                  **dict.fromkeys(ZONES, 'az-1')}
    # A server Tacker has not recorded yet: the instance only.
    assert node_labels(topology(), [worker], {}, 'inst-1', {}) == {
        'worker-2': {VNF_INSTANCE_LABEL: 'inst-1'}}


def test_hidden_compute_host_is_an_error_with_the_remedy():
    worker = node(Role.WORKER, 2, compute=None)
    with pytest.raises(MgmtDriverError) as info:
        node_labels(topology(group(worker.host.server_id)), [worker], {})
    message = str(info.value)
    assert 'do not show the OS-EXT-SRV-ATTR:host attribute' in message
    assert 'worker-2@10.0.0.2' in message
    assert 'register the OpenStack VIM with an admin user' in message


def test_a_value_that_is_no_label_value_is_refused():
    worker = node(Role.WORKER, 2, compute='host with spaces')
    with pytest.raises(MgmtDriverError, match='not a valid label value'):
        node_labels(topology(group(worker.host.server_id)), [worker], {})


# -- zones from the Grant ---------------------------------------------------

def instance(*vnfcs: tuple[str, str]):
    info = shapes.InstantiatedVnfInfo(instance_id='stack', vnfc_resource_info=[
        shapes.VnfcResourceInfo(id=vnfc, vdu_id='workerNode',
                                compute_resource=shapes.ResourceHandle(
                                    resource_id=server))
        for vnfc, server in vnfcs])
    return shapes.VnfInstance(id='vnf', instantiated_vnf_info=info)


def test_grant_zones_follow_vnfc_to_resource_to_zone():
    grant = shapes.Grant(
        zones=[shapes.ZoneInfo('z1', 'az-1'), shapes.ZoneInfo('z2', 'az-2')],
        add_resources=[shapes.GrantInfo('vnfc-a', 'z1'),
                       shapes.GrantInfo('vnfc-b', 'z2'),
                       shapes.GrantInfo('vnfc-c', None),
                       shapes.GrantInfo('unknown', 'z1')],
        update_resources=[shapes.GrantInfo('vnfc-d', 'z2')])
    found = grant_zones(grant, None, instance(
        ('vnfc-a', 'srv-a'), ('vnfc-b', 'srv-b'), ('vnfc-c', 'srv-c'),
        ('vnfc-d', 'srv-d')))
    assert found == {'srv-a': 'az-1', 'srv-b': 'az-2', 'srv-d': 'az-2'}


def test_grant_zones_through_the_grant_request_and_as_dicts():
    grant = {'zones': [{'id': 'z1', 'zoneId': 'az-9'}],
             'updateResources': [{'resourceDefinitionId': 'rd-1',
                                  'zoneId': 'z1'}]}
    request = {'updateResources': [{'id': 'rd-1', 'type': 'COMPUTE',
                                    'resource': {'resourceId': 'srv-x'}}]}
    assert grant_zones(grant, request, instance()) == {'srv-x': 'az-9'}
    assert grant_zones(None, request, instance()) == {}

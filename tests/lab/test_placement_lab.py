"""Hardware-aware pod affinity against the lab: the podaffinity layout
(3 masters behind the VIP, workers in an anti-affinity server group spread
over the lab cloud's three compute hosts), labels read back from the
emulated API server. One cluster goes through the tests in file order.
Real: SSH, Keystone and Heat (server groups, what a user without the
admin role sees), the install script; emulated: Nova's scheduler and
policy in the lab cloud, the Kubernetes binaries.
"""
from __future__ import annotations

import pytest

from kubernetes_mgmt.cluster.naming import member_node_name
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.topology.hosts import Role
from kubernetes_mgmt_lab import driving
from kubernetes_mgmt_lab.emulated import ClusterView
from kubernetes_mgmt_lab.testing import throwaway_lab, unavailable_reason

pytestmark = pytest.mark.lab

ZONE_KEYS = ('topology.kubernetes.io/zone', 'kubernetes.io/zone')


@pytest.fixture(scope='module')
def podaffinity(site):
    """The cluster, instantiated with a Grant that puts the first worker
    in zone az-a and the second in az-b."""
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with throwaway_lab(3, 2, site=site, anti_affinity=True) as lab:
        with driving.driver_options(lab):
            request, instance = driving.new_instance(lab)
            driving.refresh_vnfc_resources(lab, instance)
            grant = driving.grant_zones(instance, list(zip(
                workers(lab), ('az-a', 'az-b'), strict=True)))
            driving.instantiate_end(request, instance, lab, grant=grant)
        yield lab, instance


@pytest.fixture
def lab(podaffinity):
    with driving.driver_options(podaffinity[0]):
        yield podaffinity


def workers(lab):
    return [h for h in lab.state.hosts if h.role == 'worker']


def labels(lab, host) -> dict[str, str]:
    name = member_node_name(Role(host.role), host.member_name)
    node = ClusterView(lab.state.cluster_dir).node(name)
    assert node is not None, f'{name} is not a node'
    return node['metadata'].get('labels') or {}


def test_workers_carry_their_compute_host_and_grant_zone(lab):
    lab, _ = lab
    found = {h.name: labels(lab, h) for h in workers(lab)}
    hosts = [h.compute_host for h in workers(lab)]
    assert len(set(hosts)) == len(hosts) == 2       # anti-affinity
    for host, zone in zip(workers(lab), ('az-a', 'az-b'), strict=True):
        assert found[host.name]['CIS-node'] == host.compute_host
        for key in ZONE_KEYS:
            assert found[host.name][key] == zone


def test_masters_carry_no_placement_label(lab):
    lab, _ = lab
    for master in (h for h in lab.state.hosts if h.role == 'master'):
        assert not {'CIS-node', *ZONE_KEYS} & set(labels(lab, master))


def test_hidden_compute_host_fails_naming_attribute_and_remedy(lab):
    lab, instance = lab
    nodes = ClusterView(lab.state.cluster_dir).node_names()
    with driving.heat_as_member(lab), \
            pytest.raises(MgmtDriverError) as info:
        driving.scale_out(lab, instance, 1)
    message = str(info.value)
    assert 'OS-EXT-SRV-ATTR:host' in message
    assert 'register the OpenStack VIM with an admin user' in message
    # Refused before the new VM was touched: it never joined.
    assert ClusterView(lab.state.cluster_dir).node_names() == nodes
    new = [h for h in workers(lab) if member_node_name(
        Role.WORKER, h.member_name) not in nodes]
    driving.rollback_scale_out(lab, instance, new)
    assert len(workers(lab)) == 2


def test_healed_worker_on_another_host_gets_the_new_label(lab):
    lab, instance = lab
    worker = workers(lab)[0]
    driving.heal(lab, instance, [driving.vnfc_of(instance, worker)])
    healed = lab.host_at(worker.ip)        # a new VM on the same port
    assert healed.compute_host != worker.compute_host
    assert labels(lab, healed)['CIS-node'] == healed.compute_host


def test_scale_out_labels_the_new_worker(lab):
    lab, instance = lab
    (new,) = driving.scale_out(lab, instance, 1, zone='az-c')
    assert len({h.compute_host for h in workers(lab)}) == 3
    found = labels(lab, new)
    assert found['CIS-node'] == new.compute_host
    assert all(found[key] == 'az-c' for key in ZONE_KEYS)

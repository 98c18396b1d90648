"""Resume decisions: how far a node got, from the facts gathered on it
and in the cluster (``cluster.node_state``)."""
from __future__ import annotations

import pytest

from kubernetes_mgmt.cluster.cluster_plan import Node
from kubernetes_mgmt.cluster.etcd import EtcdMember
from kubernetes_mgmt.cluster.node_state import (
    ClusterFacts,
    HostFacts,
    Stage,
    init_stage,
    join_stage,
    parse_status,
    reported_facts,
)
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.remote.ssh import Endpoint, Login
from kubernetes_mgmt.topology.hosts import Host, Role

FILES = ('kubelet.conf', 'admin.conf', 'manifests/kube-apiserver.yaml',
         'pki/ca.crt')


def node(name: str, ip: str, role: Role = Role.MASTER) -> Node:
    host = Host(role=role, server_id=f'srv-{name}', server_name='n',
                ssh_ip=ip, nic_ip=ip)
    return Node(host, name, Endpoint(ip, Login('u', 'p'),
                                     label=f'{name}@{ip}'))


def member(name: str, ip: str) -> EtcdMember:
    return EtcdMember(id=7, name=name, peer_urls=(f'https://{ip}:2380',))


def test_status_output_is_parsed_per_role_with_contract_versions():
    facts = parse_status({
        'CONTRACT_VERSION': '3', 'DONE_PREPARE': '3', 'DONE_JOIN_MASTER': '2',
        'DONE_KUBEADM_JOIN': '3',
        'KUBEADM_FILES': 'kubelet.conf,pki/ca.crt', 'API_READY': '1'},
        'm1')
    assert facts == HostFacts(3, {'prepare': 3, 'join-master': 2,
                                  'kubeadm-join': 3},
                              ('kubelet.conf', 'pki/ca.crt'), True)
    assert facts.kubeadm_join and not facts.kubeadm_init
    bare = parse_status({'CONTRACT_VERSION': '3', 'KUBEADM_FILES': '',
                         'API_READY': '0'}, 'm1')
    assert bare == HostFacts(3)


@pytest.mark.parametrize('values', [
    {}, {'CONTRACT_VERSION': 'x'},
    {'CONTRACT_VERSION': '3', 'DONE_INIT': 'three'}])
def test_status_output_that_is_not_the_contract_is_an_error(values):
    with pytest.raises(MgmtDriverError, match=r'\[m1\] status: unexpected'):
        parse_status(values, 'm1')


def test_prepare_output_carries_the_facts_when_the_script_prints_them():
    printed = {'SANDBOX_IMAGE': 'registry.k8s.io/pause:3.10',
               'CONTRACT_VERSION': '3', 'DONE_PREPARE': '3',
               'KUBEADM_FILES': '', 'API_READY': '0'}
    assert reported_facts(printed, 'w1') == HostFacts(3, {'prepare': 3})
    # A script that prints none: the driver asks the status role.
    assert reported_facts({'SANDBOX_IMAGE': 'x/pause:1'}, 'w1') is None
    with pytest.raises(MgmtDriverError, match=r'\[w1\] status'):
        reported_facts({'CONTRACT_VERSION': 'x'}, 'w1')


def test_init_half_finished_when_kubeadm_left_files_but_did_not_finish():
    # admin.conf written, then kubeadm init died: the API never answered.
    host = HostFacts(3, {'prepare': 3}, FILES, api_ready=False)
    assert init_stage(host, None, 'm0') is Stage.HALF


def test_init_not_started_on_a_clean_node():
    assert init_stage(HostFacts(3, {'prepare': 3}), None, 'm0') is Stage.NONE


def test_init_resumed_when_kubeadm_finished_but_the_role_did_not():
    # kubeadm init exited 0, then the CNI apply failed.
    host = HostFacts(3, {'prepare': 3, 'kubeadm-init': 3}, FILES, True)
    cluster = ClusterFacts({'m0': False})
    assert init_stage(host, cluster, 'm0') is Stage.RESUME
    # Its API is restarting: still resumed (waited for), never reset.
    assert init_stage(HostFacts(3, {'kubeadm-init': 3, 'init': 3}, FILES),
                      None, 'm0') is Stage.RESUME


def test_init_done_needs_its_record_and_a_serving_api_with_the_node():
    done = {'prepare': 3, 'kubeadm-init': 3, 'init': 3}
    host = HostFacts(3, done, FILES, True)
    assert init_stage(host, ClusterFacts({'m0': True}), 'm0') is Stage.DONE
    assert init_stage(host, ClusterFacts({}), 'm0') is Stage.RESUME


def test_init_of_a_cluster_built_before_records_counts_as_finished():
    host = HostFacts(3, {}, FILES, True)
    assert init_stage(host, ClusterFacts({'m0': True}), 'm0') is \
        Stage.RESUME


def test_master_join_with_kubelet_conf_but_no_etcd_member_is_half():
    """kubelet.conf alone is no proof of a control-plane join."""
    m1 = node('m1', '10.0.0.2')
    host = HostFacts(3, {'prepare': 3}, ('kubelet.conf', 'pki/ca.crt'))
    cluster = ClusterFacts({'m0': True}, (member('m0', '10.0.0.1'),))
    assert join_stage(host, cluster, m1, True) is Stage.HALF


def test_master_join_whose_etcd_member_was_added_is_half():
    m1 = node('m1', '10.0.0.2')
    cluster = ClusterFacts({'m0': True}, (member('m0', '10.0.0.1'),
                                          member('', '10.0.0.2')))
    assert join_stage(HostFacts(3, {}, ('kubelet.conf',)), cluster, m1,
                      True) is Stage.HALF
    # A rebuilt VM: nothing on it, but its old member is still there.
    assert join_stage(HostFacts(3), cluster, m1, True) is Stage.HALF


def test_master_join_done_resumed_or_not_started():
    m1 = node('m1', '10.0.0.2')
    cluster = ClusterFacts({'m0': True, 'm1': True},
                           (member('m0', '10.0.0.1'),
                            member('m1', '10.0.0.2')))
    files = ('kubelet.conf', 'admin.conf')
    done = HostFacts(3, {'kubeadm-join': 3, 'join-master': 3}, files)
    assert join_stage(done, cluster, m1, True) is Stage.DONE
    resumed = HostFacts(3, {'kubeadm-join': 3}, files)
    assert join_stage(resumed, cluster, m1, True) is Stage.RESUME
    fresh = ClusterFacts({'m0': True}, (member('m0', '10.0.0.1'),))
    assert join_stage(HostFacts(3), fresh, m1, True) is Stage.NONE


def test_worker_join_states():
    w = node('w0', '10.0.0.9', Role.WORKER)
    none = ClusterFacts({'m0': True})
    joined = ClusterFacts({'m0': True, 'w0': True})
    assert join_stage(HostFacts(3), none, w, False) is Stage.NONE
    # kubelet.conf written, the node never registered.
    assert join_stage(HostFacts(3, {}, ('kubelet.conf',)), none, w,
                      False) is Stage.HALF
    done = HostFacts(3, {'kubeadm-join': 3, 'join-worker': 3},
                     ('kubelet.conf', 'pki/ca.crt'))
    assert join_stage(done, joined, w, False) is Stage.DONE
    # Recorded as joined but the Node object is gone: joined again.
    assert join_stage(done, none, w, False) is Stage.HALF
    # Joined by a release before records: registered, kubelet.conf.
    legacy = HostFacts(3, {}, ('kubelet.conf',))
    assert join_stage(legacy, joined, w, False) is Stage.RESUME

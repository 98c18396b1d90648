"""Re-running instantiate_end after a failure at one step: it completes
the cluster and redoes only what was missing, judged by facts.

Each failure is injected into the emulated binaries (``inject_fault``):
before a command starts, or half-way through it (``'kubeadm
init@kubeconfig'``: after kubeadm wrote admin.conf). The emulated event
log shows what the re-run did.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt_lab import driving, tacker_shapes
from kubernetes_mgmt_lab.emulated import ClusterView, inject_fault
from kubernetes_mgmt_lab.testing import throwaway_lab, unavailable_reason

pytestmark = pytest.mark.lab
MESSAGE = 'injected: the VM lost power'


def _require_lab() -> None:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)


@dataclass
class Rerun:
    """What the failed first run left and what the re-run did."""

    lab: object
    first_error: str
    redone: list[dict]
    request: object = None
    instance: object = None

    def commands(self, *words: str) -> list[str]:
        """Hosts (in order) of redone commands starting with ``words``
        (``kubeadm init`` leaves out ``kubeadm init phase ...``)."""
        found = []
        for event in self.redone:
            argv = event['argv']
            if argv[:len(words)] != list(words):
                continue
            if words == ('kubeadm', 'init') and argv[2:3] == ['phase']:
                continue
            found.append(event['host'])
        return found

    def etcd_removals(self) -> list[dict]:
        return [e for e in self.redone if e['argv'][0] == 'kubectl'
                and 'exec' in e['argv'] and 'member' in e['argv']
                and 'remove' in e['argv']]


def node_names(lab) -> dict[str, str]:
    """Lab host name -> its Node's name (by the node's InternalIP)."""
    by_ip = {h.ip: h.name for h in lab.state.hosts}
    names = {}
    for node in ClusterView(lab.state.cluster_dir).nodes():
        ip = next(a['address'] for a in node['status']['addresses']
                  if a['type'] == 'InternalIP')
        names[by_ip[ip]] = node['metadata']['name']
    return names


def _every_node_ready(lab) -> None:
    view = ClusterView(lab.state.cluster_dir)
    names = node_names(lab)
    assert sorted(names) == sorted(h.name for h in lab.state.hosts)
    assert all(view.node_ready(n) for n in names.values()), names


def _fail_then_rerun(lab, host: str, rule: str, left_behind=None) -> Rerun:
    view = ClusterView(lab.state.cluster_dir)
    inject_fault(lab.state.cluster_dir, host, rule, MESSAGE)
    request, instance = driving.new_instance(lab)
    with driving.driver_options(lab):
        with pytest.raises(MgmtDriverError) as info:
            driving.instantiate_end(request, instance)
        assert MESSAGE in str(info.value)
        if left_behind:
            left_behind(lab)
        before = len(view.events())
        driving.instantiate_end(request, instance)
    _every_node_ready(lab)
    assert len(driving.registered_vims(lab)) == 1
    return Rerun(lab, str(info.value), view.events()[before:], request,
                 instance)


def _ip(lab, host: str) -> str:
    return next(h.ip for h in lab.state.hosts if h.name == host)


def _exists(lab, host: str, path: str) -> bool:
    return os.path.exists(lab.host_path(host, path))


def _cni_applies(run: Rerun) -> list[dict]:
    return [e for e in run.redone if e['argv'][0] == 'kubectl'
            and 'apply' in e['argv'] and any('cni' in a for a in e['argv'])]


def _no_package_installed_again(run: Rerun) -> list[list[str]]:
    """The Kubernetes packages and containerd (the prepare role's) are
    not installed again."""
    installs = [e['argv'] for e in run.redone
                if e['argv'][0] == 'apt-get' and 'install' in e['argv']]
    kube = [a for a in installs if any(
        arg.split('=')[0] in ('kubeadm', 'kubelet', 'kubectl', 'containerd')
        for arg in a)]
    assert not kube, kube
    return installs


def test_failure_at_the_cni_apply_is_finished_without_a_second_init(site):
    _require_lab()
    with throwaway_lab(1, 1, site=site) as lab:
        master, worker = (h.name for h in lab.state.hosts)
        run = _fail_then_rerun(lab, master, 'kubectl apply')
        assert f'@{_ip(lab, master)}] init' in run.first_error
        # The CNI is applied once, by the re-run; kubeadm init is not
        # run again and nothing is reset.
        applies = _cni_applies(run)
        assert [(e['host'], e['rc']) for e in applies] == [(master, 0)]
        assert run.commands('kubeadm', 'init') == []
        assert run.commands('kubeadm', 'reset') == []
        assert run.commands('kubeadm', 'join') == [worker]
        assert _no_package_installed_again(run) == []


def test_half_finished_init_is_reset_and_done_again(site):
    _require_lab()
    with throwaway_lab(1, 1, site=site) as lab:
        master, worker = (h.name for h in lab.state.hosts)

        def admin_conf_written(lab):
            # What an earlier release took for "initialized".
            assert _exists(lab, master, '/etc/kubernetes/admin.conf')

        run = _fail_then_rerun(lab, master, 'kubeadm init@kubeconfig',
                               admin_conf_written)
        assert run.commands('kubeadm', 'reset') == [master]
        assert run.commands('kubeadm', 'init') == [master]
        order = [e['argv'][1] for e in run.redone if e['host'] == master
                 and e['argv'][:2] in (['kubeadm', 'reset'],
                                       ['kubeadm', 'init'])]
        assert order == ['reset', 'init']
        assert run.commands('kubeadm', 'join') == [worker]
        assert _no_package_installed_again(run) == []


@pytest.mark.parametrize('stage', ['kubelet-start', 'etcd-member'])
def test_half_finished_control_plane_join_is_undone_and_joined_again(
        site, stage):
    """kubelet.conf written (kubelet-start), or the etcd member added
    too (etcd-member): the node is reset, its member removed through the
    first master, and it joins again; the first master is untouched."""
    _require_lab()
    with throwaway_lab(3, 1, site=site) as lab:
        hosts = lab.state.hosts
        first, victim, third, worker = (h.name for h in hosts)
        view = ClusterView(lab.state.cluster_dir)
        member_added = []

        def left_behind(lab):
            assert _exists(lab, victim, '/etc/kubernetes/kubelet.conf')
            victim_ip = next(h.ip for h in hosts if h.name == victim)
            member_added.extend(m for m in view.etcd_members()
                                if f'https://{victim_ip}:2380'
                                in m['peerURLs'])

        run = _fail_then_rerun(lab, victim, f'kubeadm join@{stage}',
                               left_behind)
        assert f'@{_ip(lab, victim)}] join-master' in run.first_error
        assert len(member_added) == (1 if stage == 'etcd-member' else 0)
        removals = run.etcd_removals()
        assert [e['host'] for e in removals] == [first] * len(member_added)
        if member_added:
            assert f'{member_added[0]["id"]:x}' in removals[0]['argv']
        assert run.commands('kubeadm', 'reset') == [victim]
        assert run.commands('kubeadm', 'init') == []
        assert sorted(run.commands('kubeadm', 'join')) == sorted(
            [victim, third, worker])
        names = node_names(lab)
        assert sorted(m['name'] for m in view.etcd_members()) == sorted(
            names[h] for h in (first, victim, third))
        assert _no_package_installed_again(run) == []


def test_half_finished_worker_join_is_reset_and_joined_again(site):
    _require_lab()
    with throwaway_lab(1, 2, site=site) as lab:
        master, done, victim = (h.name for h in lab.state.hosts)

        def left_behind(lab):
            assert _exists(lab, victim, '/etc/kubernetes/kubelet.conf')
            assert set(node_names(lab)) == {master, done}

        run = _fail_then_rerun(lab, victim, 'kubeadm join@kubelet-start',
                               left_behind)
        assert f'@{_ip(lab, victim)}] join-worker' in run.first_error
        assert run.commands('kubeadm', 'reset') == [victim]
        # The other worker finished its join in the first run.
        assert run.commands('kubeadm', 'join') == [victim]
        assert run.commands('kubeadm', 'init') == []
        assert _no_package_installed_again(run) == []
        # init was done: its join credentials were refreshed, and the CNI,
        # checked, was already there.
        assert _cni_applies(run) == []

        # The pod network lost (its DaemonSet deleted): the next re-run
        # sets the control plane up again and applies the CNI once more.
        cni = [d for d in ClusterView(lab.state.cluster_dir).objects(
            'DaemonSet') if d['metadata']['name'] in ('calico-node',
                                                      'kube-flannel-ds')]
        assert len(cni) == 1
        meta = cni[0]['metadata']
        deleted = lab.run_in_host(master, [
            'kubectl', '--kubeconfig', '/etc/kubernetes/admin.conf', '-n',
            meta['namespace'], 'delete', 'daemonset', meta['name']])
        assert deleted.returncode == 0, deleted.stderr
        view = ClusterView(lab.state.cluster_dir)
        before = len(view.events())
        with driving.driver_options(lab):
            driving.instantiate_end(run.request, run.instance)
        _every_node_ready(lab)
        assert len(driving.registered_vims(lab)) == 1
        again = Rerun(lab, '', view.events()[before:])
        assert [e['host'] for e in _cni_applies(again)] == [master]
        assert again.commands('kubeadm', 'join') == []
        assert again.commands('kubeadm', 'init') == []


def test_heal_end_rerun_completes_a_master_join_that_failed_before_etcd(site):
    """The rebuilt master's join dies after writing kubelet.conf, before
    its etcd member: heal_end run again resets it and joins it, and
    nothing else joins or resets."""
    _require_lab()
    with driving.instantiated_lab(3, 1, site=site) as (lab, instance), \
            driving.driver_options(lab):
        view = ClusterView(lab.state.cluster_dir)
        old = lab.state.hosts[2]
        request = tacker_shapes.HealVnfRequest(
            vnfc_instance_id=[driving.vnfc_of(instance, old)])
        driving.hook('heal_start', instance, heal_vnf_request=request)
        driving.rebuild_vnfcs(lab, instance,
                              request.vnfc_instance_id)
        victim = lab.host_at(old.ip)    # the rebuilt VM, on the same port
        inject_fault(lab.state.cluster_dir, victim.name,
                     'kubeadm join@kubelet-start', MESSAGE)
        with pytest.raises(MgmtDriverError) as info:
            driving.hook('heal_end', instance, heal_vnf_request=request,
                         vnf=driving.vnf_dict(instance))
        assert MESSAGE in str(info.value)
        assert f'@{victim.ip}] join-master' in str(info.value)
        assert _exists(lab, victim.name, '/etc/kubernetes/kubelet.conf')
        before = len(view.events())

        driving.hook('heal_end', instance, heal_vnf_request=request,
                     vnf=driving.vnf_dict(instance))
        _every_node_ready(lab)
        run = Rerun(lab, '', view.events()[before:])
        assert run.commands('kubeadm', 'reset') == [victim.name]
        assert run.commands('kubeadm', 'join') == [victim.name]
        assert run.commands('kubeadm', 'init') == []
        # What the rebuilt master had not got yet: its load balancer.
        installs = _no_package_installed_again(run)
        assert [a[a.index('install') + 1:] for a in installs] == [
            ['haproxy', 'keepalived']], installs
        names = node_names(lab)
        masters = [h.name for h in lab.state.hosts if h.role == 'master']
        assert sorted(m['name'] for m in view.etcd_members()) == sorted(
            names[h] for h in masters)
        assert not driving.stored_state(lab, instance).healing

"""scale, heal and terminate against the lab, hooks driven as Tacker does
(``driving``: *_start hook, the stack update in the services' real Heat,
vnfc_resource_info refreshed, *_end hook).

One HA cluster (3 masters + 2 workers) goes through the whole lifecycle,
test by test in file order; a simple cluster checks the refusal that only
it can show. Real: SSH, Keystone and Heat, install script, HAProxy,
keepalived. Emulated: the compute and network APIs below Heat, the
Kubernetes binaries.
"""
from __future__ import annotations

import dataclasses
import datetime
import itertools
import json
import logging
import os
import re
import signal
import ssl
import textwrap
import threading
import time
import urllib.request
from types import SimpleNamespace

import pytest
import yaml

from kubernetes_mgmt.cluster import certificates as certs
from kubernetes_mgmt.cluster import etcd_snapshot
from kubernetes_mgmt.cluster.naming import member_node_name
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import MgmtDriverError, ValidationError
from kubernetes_mgmt.remote.retry import poll
from kubernetes_mgmt.remote.ssh import Endpoint, Login, Sessions
from kubernetes_mgmt.state import instance_state
from kubernetes_mgmt.topology.hosts import Role
from kubernetes_mgmt.vim import probe
from kubernetes_mgmt.vim.release import VimInUse
from kubernetes_mgmt_lab import driving, pki
from kubernetes_mgmt_lab.emulated import ClusterView, inject_fault
from kubernetes_mgmt_lab.emulated.config import set_clock_offset
from kubernetes_mgmt_lab.file_registry import FileVimRegistry
from kubernetes_mgmt_lab.testing import unavailable_reason

pytestmark = pytest.mark.lab

ADMIN_CONF = '/etc/kubernetes/admin.conf'
PAUSE = {'name': 'pause', 'image': 'registry.k8s.io/pause:3.10'}
WATCHED_FILES = ('/etc/hosts', '/etc/haproxy/haproxy.cfg',
                 '/etc/keepalived/keepalived.conf')


def _instantiated(site, masters: int, workers: int):
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with driving.instantiated_lab(masters, workers, site=site) as pair:
        yield pair


@pytest.fixture
def ha_lab(ha):
    """The HA cluster, with the driver pointed at its lab."""
    with driving.driver_options(ha[0]):
        yield ha


@pytest.fixture
def simple_lab(simple):
    with driving.driver_options(simple[0]):
        yield simple


@pytest.fixture(scope='module')
def ha(site):
    yield from _instantiated(site, 3, 2)


@pytest.fixture(scope='module')
def simple(site):
    yield from _instantiated(site, 1, 1)


# -- helpers ------------------------------------------------------------------

def node_name(host) -> str:
    return member_node_name(Role(host.role), host.member_name)


def expected_nodes(lab) -> set[str]:
    return {node_name(h) for h in lab.state.hosts}


def view(lab) -> ClusterView:
    return ClusterView(lab.state.cluster_dir)


def assert_cluster_matches_lab(lab, instance) -> None:
    """Every lab VM is a Ready node, nothing else is; the stored state
    knows exactly these VMs and their current host keys."""
    v = view(lab)
    assert set(v.node_names()) == expected_nodes(lab)
    assert all(v.node_ready(n) for n in v.node_names())
    state = driving.stored_state(lab, instance)
    assert {sid: r.name for sid, r in state.node_records().items()} == \
        {h.server_id: node_name(h) for h in lab.state.hosts}
    # Keys by Nova server: a new VM on an old address is not its
    # predecessor.
    assert set(state.host_keys) == {h.server_id for h in lab.state.hosts}
    for host in lab.state.hosts:
        kind, blob = state.host_keys[host.server_id].split()
        assert lab.host_public_keys(host.name)[kind] == blob
    assert not state.healing


def read(lab, host, path) -> str | None:
    try:
        with open(lab.host_path(host, path), encoding='utf-8') as f:
            return f.read()
    except FileNotFoundError:
        return None


def hosts_block(lab, host) -> set[str]:
    text = read(lab, host, '/etc/hosts')
    start = text.index('# BEGIN kubernetes-mgmt nodes\n')
    end = text.index('# END kubernetes-mgmt nodes')
    return set(text[start:end].splitlines()[1:])


def assert_hosts_files(lab) -> None:
    wanted = {f'{h.ip} {node_name(h)}' for h in lab.state.hosts}
    for host in lab.state.hosts:
        assert hosts_block(lab, host.name) == wanted, host.name


def registry(lab) -> FileVimRegistry:
    return FileVimRegistry(lab.vim_registry_file)


def snapshot(lab, instance) -> dict:
    """Everything a refused request must leave as it was."""
    v = view(lab)
    return {
        'nodes': json.dumps(v.nodes(), sort_keys=True),
        'etcd': v.etcd_members(),
        'events': len(v.events()),
        'ssh logins': {h.name: lab.ssh_accepts(h.name)
                       for h in lab.state.hosts},
        'files': {(h.name, p): read(lab, h.name, p)
                  for h in lab.state.hosts for p in WATCHED_FILES},
        'hosts': [(h.name, h.server_id) for h in lab.state.hosts],
        'metadata': dict(instance.vnf_metadata),
        'vim connections': [c.vim_id for c in instance.vim_connection_info],
        'vims': registry(lab).records(),
    }


def kube_events(lab, node: str) -> list[str]:
    """The verbs of the kubectl commands that named node ``node``."""
    return [e['argv'][3] for e in view(lab).events(command='kubectl')
            if e['argv'][1:3] == ['--kubeconfig', ADMIN_CONF]
            and node in e['argv'][4:]]


def bootstrap_tokens(lab) -> list[str]:
    """``kubeadm token list`` on a master, as an operator runs it: the
    tokens a node could still join with."""
    master = next(h for h in lab.state.hosts if h.role == 'master')
    result = lab.run_in_host(master.name, [
        'kubeadm', 'token', 'list', '--kubeconfig', ADMIN_CONF])
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def tokens_ever(lab) -> int:
    return len(view(lab).join_secrets_ever()[0])


def apply(lab, instance, manifest: list[dict]) -> None:
    master = lab.state.hosts[0].name
    text = yaml.safe_dump_all(manifest)
    result = lab.run_in_host(master, [
        'kubectl', '--kubeconfig', '/etc/kubernetes/admin.conf', 'apply',
        '-f', '-'], input=text)
    assert result.returncode == 0, result.stderr


def masters(lab) -> list:
    return [h for h in lab.state.hosts if h.role == 'master']


def certificate_expiry(lab, host) -> certs.Expiration:
    """``kubeadm certs check-expiration -o json`` on ``host``."""
    result = lab.run_in_host(host.name, [
        'kubeadm', 'certs', 'check-expiration', '-o', 'json'])
    assert result.returncode == 0, result.stderr
    return certs.parse_expiration(result.stdout, host.name)


def served_expiry(host):
    """When the certificate the master's API server serves expires."""
    pem = ssl.get_server_certificate((host.ip, 6443)).encode()
    return pki.not_after(pem)


def assert_renewed_one_master_at_a_time(lab, since: int) -> None:
    """Each master renewed, then served again (its API server asked
    through its own address), before the next master renewed."""
    log = view(lab).argv_log()[since:]
    order = []
    for entry in log:
        argv = entry['argv']
        if argv[:4] == ['kubeadm', 'certs', 'renew', 'all']:
            order.append((entry['host'], 'renew'))
        elif argv[0] == 'kubectl' and '/readyz' in argv and '--server' in argv:
            order.append((entry['host'], 'serving?'))
    renewing = [h for h, what in order if what == 'renew']
    assert sorted(renewing) == sorted(m.name for m in masters(lab)), order
    for earlier, later in itertools.pairwise(renewing):
        between = order[order.index((earlier, 'renew')):
                        order.index((later, 'renew'))]
        assert (earlier, 'serving?') in between, order


# -- scale ------------------------------------------------------------------

def test_scale_out_by_two_then_in_by_one(ha_lab):
    """The scale-out also finds the certificates aged to 20 days left
    (by the lab's clock): it renews them on every master, one at a time,
    and the instance's metadata shows the new expiry."""
    lab, instance = ha_lab
    before = expected_nodes(lab)
    # instantiate deleted the token its joins used
    assert tokens_ever(lab) >= 1 and bootstrap_tokens(lab) == []
    installed = instance.vnf_metadata[instance_state.EXPIRY_KEY]
    vim = registry(lab).credentials(
        driving.stored_state(lab, instance).vim_id)

    made = tokens_ever(lab)
    set_clock_offset(lab.state.cluster_dir, days=345)
    try:
        aged = {m.name: certificate_expiry(lab, m) for m in masters(lab)}
        assert all(19 < e.earliest().days_left < 20.1
                   for e in aged.values()), aged
        since = len(view(lab).argv_log())
        started = time.monotonic()
        new = driving.scale_out(lab, instance, 2)
        out_seconds = time.monotonic() - started
        renewed = {m.name: certificate_expiry(lab, m) for m in masters(lab)}
    finally:
        set_clock_offset(lab.state.cluster_dir, days=0)
    assert_renewed_one_master_at_a_time(lab, since)
    assert all(e.earliest().days_left > 364 for e in renewed.values())
    shown = instance.vnf_metadata[instance_state.EXPIRY_KEY]
    assert shown == certs.iso_utc(min(e.earliest().expires
                                      for e in renewed.values()))
    assert (certs.parse_time(shown) - certs.parse_time(installed)).days \
        >= 344
    for master in masters(lab):
        # Its API server restarted on the renewed certificate ...
        apiserver, = [c for c in renewed[master.name].certificates
                      if c.name == 'apiserver']
        assert abs(served_expiry(master) - apiserver.expires) \
            .total_seconds() < 1
        # ... and the VIM's token and the unchanged CA still work, through
        # the master and through the VIP.
        probe.check_api(f'https://{master.ip}:6443', vim.bearer_token,
                        vim.ssl_ca_cert, deadline=10)
    probe.check_api(vim.auth_url, vim.bearer_token, vim.ssl_ca_cert,
                    deadline=10)
    assert len(new) == 2
    assert tokens_ever(lab) > made and bootstrap_tokens(lab) == []
    assert expected_nodes(lab) == before | {node_name(h) for h in new}
    assert_cluster_matches_lab(lab, instance)
    assert_hosts_files(lab)      # old nodes know the new ones, and back

    oldest = driving.scale_in_members(lab, 1)
    leaving = next(h for h in lab.state.hosts
                   if h.member_name == oldest[0])
    started = time.monotonic()
    assert driving.scale_in(lab, instance, 1) == oldest
    in_seconds = time.monotonic() - started
    gone = node_name(leaving)
    assert gone not in view(lab).node_names()
    assert expected_nodes(lab) == (before | {node_name(h) for h in new}) \
        - {gone}
    assert_cluster_matches_lab(lab, instance)
    assert_hosts_files(lab)
    # cordoned, then drained, then deleted
    assert kube_events(lab, gone)[-3:] == ['cordon', 'drain', 'delete']
    drain, = [e for e in view(lab).events(command='kubectl drain')
              if gone in e['argv']]
    assert {'--ignore-daemonsets', '--delete-emptydir-data'} <= \
        set(drain['argv'])
    print(f'\nscale-out by 2: {out_seconds:.1f} s, scale-in by 1: '
          f'{in_seconds:.1f} s')


def test_drain_blocked_by_a_disruption_budget_fails_clearly(ha_lab):
    lab, instance = ha_lab
    oldest = driving.scale_in_members(lab, 1)[0]
    victim = node_name(next(h for h in lab.state.hosts
                            if h.member_name == oldest))
    labels = {'app': 'guarded'}
    # On the node the scale-in removes, whatever the scheduler prefers.
    spec = {'containers': [PAUSE],
            'nodeSelector': {'kubernetes.io/hostname': victim}}
    apply(lab, instance, [
        {'apiVersion': 'apps/v1', 'kind': 'Deployment',
         'metadata': {'name': 'guarded', 'namespace': 'default'},
         'spec': {'replicas': 2, 'selector': {'matchLabels': labels},
                  'template': {'metadata': {'labels': labels},
                               'spec': spec}}},
        {'apiVersion': 'policy/v1', 'kind': 'PodDisruptionBudget',
         'metadata': {'name': 'guarded', 'namespace': 'default'},
         'spec': {'maxUnavailable': 0, 'selector': {'matchLabels': labels}}},
    ])
    assert len(view(lab).pods('default', node=victim)) >= 2
    CONF.set_override('drain_timeout', 2, 'kubernetes_mgmt')
    try:
        with pytest.raises(MgmtDriverError) as info:
            driving.scale_in(lab, instance, 1)
    finally:
        CONF.clear_override('drain_timeout', 'kubernetes_mgmt')
    message = str(info.value)
    assert f'node {victim} could not be drained within 2 s' in message
    assert 'drain_timeout' in message
    # The budget that holds the node is named, with its pods there.
    assert 'held by PodDisruptionBudget default/guarded (pods guarded-' \
        in message
    node = view(lab).node(victim)
    assert node is not None and node['spec'].get('unschedulable')
    assert expected_nodes(lab) == set(view(lab).node_names())

    # The budget relaxed, the same scale-in completes.
    result = lab.run_in_host(lab.state.hosts[0].name, [
        'kubectl', '--kubeconfig', '/etc/kubernetes/admin.conf', 'delete',
        'pdb', 'guarded'])
    assert result.returncode == 0, result.stderr
    assert driving.scale_in(lab, instance, 1) == [oldest]
    assert victim not in view(lab).node_names()
    assert not view(lab).pods(node=victim)
    assert_cluster_matches_lab(lab, instance)
    # Its pods, pinned to the node that went, would stay Pending.
    result = lab.run_in_host(lab.state.hosts[0].name, [
        'kubectl', '--kubeconfig', '/etc/kubernetes/admin.conf', 'delete',
        'deployment', 'guarded'])
    assert result.returncode == 0, result.stderr


def test_scale_out_rollback_removes_half_joined_nodes(ha_lab):
    lab, instance = ha_lab
    before = expected_nodes(lab)
    new = driving.add_workers(lab, instance, 2)
    inject_fault(lab.state.cluster_dir, new[1].name, 'kubeadm join',
                 'injected: join refused')
    made = tokens_ever(lab)
    with pytest.raises(MgmtDriverError, match='injected: join refused'):
        driving.hook('scale_end', instance,
                     scale_vnf_request=driving.scale_request('SCALE_OUT', 2),
                     scale_out_id_list=[h.member_stack_id for h in new],
                     vnf=driving.vnf_dict(instance))
    joined = node_name(new[0])
    assert joined in view(lab).node_names()     # half of it worked
    # The failed operation's token is gone all the same.
    assert tokens_ever(lab) > made and bootstrap_tokens(lab) == []

    driving.rollback_scale_out(lab, instance, new)
    assert set(view(lab).node_names()) == before == expected_nodes(lab)
    assert kube_events(lab, joined)[-3:] == ['cordon', 'drain', 'delete']
    assert_cluster_matches_lab(lab, instance)
    assert_hosts_files(lab)


# -- refusals ---------------------------------------------------------------

def test_refused_requests_change_nothing(ha_lab):
    lab, instance = ha_lab
    master = next(h for h in lab.state.hosts if h.role == 'master')
    before = snapshot(lab, instance)

    with pytest.raises(ValidationError, match='is the master aspect'):
        driving.hook('scale_start', instance,
                     scale_vnf_request=driving.scale_request(
                         'SCALE_IN', 1, aspect='master_instance'),
                     scale_name_list=[master.member_name],
                     scale_out_id_list=[master.member_stack_id],
                     vnf=driving.vnf_dict(instance))
    with pytest.raises(ValidationError, match='is the master aspect'):
        driving.hook('scale_end', instance,
                     scale_vnf_request=driving.scale_request(
                         'SCALE_OUT', 1, aspect='master_instance'),
                     scale_out_id_list=[master.member_stack_id],
                     vnf=driving.vnf_dict(instance))
    with pytest.raises(ValidationError, match='not a VNFC of'):
        driving.heal(lab, instance, ['no-such-vnfc'])

    vim_id = driving.stored_state(lab, instance).vim_id
    registry(lab).record_use(vim_id, 'cnf-instance-1')
    try:
        with pytest.raises(VimInUse, match='cnf-instance-1'):
            driving.terminate(instance)
        with pytest.raises(VimInUse, match='cnf-instance-1'):
            driving.heal_whole(lab, instance)
    finally:
        registry(lab).record_use(vim_id, 'cnf-instance-1', used=False)
    # A CNF on another VIM of the same cluster (a namespace's) counts too.
    stored = registry(lab).credentials(vim_id)
    other = registry(lab).register(None, dataclasses.replace(
        stored, name='ns-a-of-this-cluster'))
    registry(lab).record_use(other.id, 'cnf-instance-2')
    try:
        with pytest.raises(VimInUse, match='cnf-instance-2'):
            driving.terminate(instance)
    finally:
        registry(lab).delete(None, other.id)
    assert snapshot(lab, instance) == before


def test_heal_of_the_only_master_is_refused(simple_lab):
    lab, instance = simple_lab
    master = next(h for h in lab.state.hosts if h.role == 'master')
    before = snapshot(lab, instance)
    with pytest.raises(ValidationError, match='only master of this '
                       'single-master cluster') as info:
        driving.heal(lab, instance, [driving.vnfc_of(instance, master)])
    assert 'heal request without vnfcInstanceId' in str(info.value)
    assert snapshot(lab, instance) == before


# -- heal ---------------------------------------------------------------------

class VipProbe:
    """GET https://VIP:port/healthz every 0.1 s in a thread; the longest
    stretch of failures is the outage a client of the VIP saw."""

    def __init__(self, url: str):
        self.url = url
        self.results: list[tuple[float, bool]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._context = ssl.create_default_context()
        self._context.check_hostname = False
        self._context.verify_mode = ssl.CERT_NONE

    def _once(self) -> bool:
        try:
            with urllib.request.urlopen(  # noqa: S310 - https only
                    self.url, context=self._context, timeout=1) as reply:
                return reply.read() == b'ok'
        except OSError:
            return False

    def _run(self) -> None:
        while not self._stop.is_set():
            self.results.append((time.monotonic(), self._once()))
            self._stop.wait(0.1)

    def __enter__(self) -> VipProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def longest_outage(self) -> float:
        worst, last_ok = 0.0, None
        for when, ok in self.results:
            if ok:
                last_ok = when
            elif last_ok is not None:
                worst = max(worst, when - last_ok)
        return worst

    @property
    def failures(self) -> int:
        return sum(1 for _, ok in self.results if not ok)


def _vip_holder(lab):
    for host in lab.state.hosts:
        if host.role == 'master' and f' {lab.state.vip}/' in \
                lab.run_in_host(host.name, ['ip', '-o', '-4', 'addr',
                                            'show']).stdout:
            return host
    return None


def test_heal_of_the_master_holding_the_vip(ha_lab, caplog):
    caplog.set_level(logging.INFO)
    lab, instance = ha_lab
    old = poll(lambda: _vip_holder(lab), deadline=15, what='VIP held')
    name = node_name(old)
    old_member = next(m for m in view(lab).etcd_members()
                      if m['name'] == name)
    url = f'https://{lab.state.vip}:16443/healthz'
    started = time.monotonic()
    with VipProbe(url) as probe:
        driving.heal(lab, instance, [driving.vnfc_of(instance, old)])
        heal_seconds = time.monotonic() - started
        # heal_end waited until the rebuilt VRRP MASTER took the VIP back
        assert _vip_holder(lab).ip == old.ip
        time.sleep(1.0)
    healed = lab.host_at(old.ip)     # a new VM on the same port
    assert healed.server_id != old.server_id
    assert lab.host_public_keys(healed.name) != {}

    members = view(lab).etcd_members()
    assert len(members) == 3
    assert old_member['id'] not in {m['id'] for m in members}
    assert name in {m['name'] for m in members}
    masters = [h for h in lab.state.hosts if h.role == 'master']
    for master in masters:
        cfg = read(lab, master.name, '/etc/haproxy/haproxy.cfg')
        for other in masters:
            assert f'server {node_name(other)} {other.ip}:6443' in cfg, \
                master.name
    assert_cluster_matches_lab(lab, instance)
    # The old node taken out, then the new one labelled (its VNFC id).
    assert kube_events(lab, name)[-4:] == ['cordon', 'drain', 'delete',
                                           'label']
    outage = probe.longest_outage()
    print(f'\nheal of the VIP master: {heal_seconds:.1f} s; VIP probed '
          f'{len(probe.results)} times, {probe.failures} failed, longest '
          f'outage {outage:.2f} s')
    assert probe.results and outage <= 5.0
    # The heal's summary accounts for the wait for the VIP (heal_end's
    # critical path ends with it).
    summaries = [r.getMessage() for r in caplog.records
                 if r.getMessage().startswith('heal ') and
                 ' finished in ' in r.getMessage()]
    assert any('VIP back on' in s for s in summaries), summaries


def test_heal_of_a_worker(ha_lab):
    lab, instance = ha_lab
    old = next(h for h in lab.state.hosts if h.role == 'worker')
    name = node_name(old)
    events = len(view(lab).events())
    driving.heal(lab, instance, [driving.vnfc_of(instance, old)])
    healed = lab.host_at(old.ip)
    assert healed.server_id != old.server_id
    assert_cluster_matches_lab(lab, instance)
    recent = [(e['host'], e['argv'][3] if e['argv'][0] == 'kubectl'
               else ' '.join(e['argv'][:2]))
              for e in view(lab).events()[events:]
              if name in e['argv'] or e['host'] == healed.name]
    helper = recent[0][0]
    assert recent[:3] == [(helper, 'cordon'), (helper, 'drain'),
                          (helper, 'delete')]
    assert (healed.name, 'kubeadm join') in recent[3:]
    assert bootstrap_tokens(lab) == []


RESTORE_DOC = os.path.join(os.path.dirname(__file__), '..', '..', 'docs',
                           'etcd-restore.rst')


def documented_restore() -> str:
    """Steps 1 to 4 of the restore procedure: the literal blocks of the
    docs' section, in order."""
    with open(RESTORE_DOC, encoding='utf-8') as f:
        text = f.read()
    section = text.split('\nRestoring after a lost quorum\n')[1]
    section = section.split('\nIn the lab\n')[0]
    blocks = re.findall(r'::\n\n((?:     .*\n|\n)+)', section)
    assert len(blocks) == 4, blocks
    return 'set -euo pipefail\n' + ''.join(
        textwrap.dedent(b) for b in blocks)


def config_map(name: str) -> str:
    return json.dumps({'apiVersion': 'v1', 'kind': 'ConfigMap',
                       'metadata': {'name': name, 'namespace': 'default'},
                       'data': {'written': name}})


def kubectl_on(lab, host, *args: str, input: str | None = None):
    return lab.run_in_host(host.name, ['kubectl', '--kubeconfig',
                                       ADMIN_CONF, *args], input=input,
                           timeout=90)


def _snapshot_sessions(lab, masters):
    """The plan and login etcd_snapshot.take needs for the masters."""
    nodes = tuple(SimpleNamespace(name=node_name(h), label=h.name, ip=h.ip)
                  for h in masters)
    plan = SimpleNamespace(masters=nodes, storage=None, vim_name='lab')
    login = Login(lab.state.username, lab.state.password)
    return plan, login


def test_snapshots_beyond_the_retention_are_removed_everywhere(ha_lab):
    """Four snapshots with a retention of 2: on the master that saved
    them and on every master holding copies, the two newest are kept
    with their checksums, the older two are gone. They are dated a day
    ahead (retention goes by the time in the name), so the module's
    earlier snapshots are older, and removed at the end."""
    lab, _ = ha_lab
    masters = [h for h in lab.state.hosts if h.role == 'master']
    plan, login = _snapshot_sessions(lab, masters)
    start = datetime.datetime.now(datetime.timezone.utc).replace(
        microsecond=0) + datetime.timedelta(days=1)
    taken = []
    with Sessions(lab.known_hosts()) as sessions:
        for minute in range(4):
            taken.append(etcd_snapshot.take(
                plan, lambda n: sessions.get(Endpoint(n.ip, login,
                                                      label=n.label)),
                'retention test', 2,
                now=lambda m=minute: start + datetime.timedelta(minutes=m)))
    kept = {t.name for t in taken[2:]}
    for host in masters:
        listed = set(lab.run_in_host(
            host.name, ['ls', etcd_snapshot.MASTER_DIR]).stdout.split())
        assert listed == kept | {f'{n}.sha256' for n in kept}, (host.name,
                                                                listed)
        lab.run_in_host(host.name, ['sh', '-c', 'rm -f '
                                    f'{etcd_snapshot.MASTER_DIR}/*retention*'])


def test_lost_quorum_is_restored_from_the_snapshot(ha_lab):
    """The driver's snapshot, two of three etcd members killed (writes
    refused), the documented restore on the survivor: the objects of the
    snapshot are back, the API serves, and healing the two masters
    through the driver's hooks gives three members again."""
    lab, instance = ha_lab
    masters = [h for h in lab.state.hosts if h.role == 'master']
    survivor, lost = masters[0], masters[1:]
    assert kubectl_on(lab, survivor, 'apply', '-f', '-',
                      input=config_map('before-snapshot')).returncode == 0
    plan, login = _snapshot_sessions(lab, masters)
    with Sessions(lab.known_hosts()) as sessions:
        snapshot = etcd_snapshot.take(
            plan, lambda n: sessions.get(Endpoint(n.ip, login,
                                                  label=n.label)),
            'restore test', CONF.kubernetes_mgmt.etcd_snapshot_retention)
    assert snapshot.master == node_name(survivor)
    assert kubectl_on(lab, survivor, 'apply', '-f', '-',
                      input=config_map('after-snapshot')).returncode == 0

    records = view(lab).state()['hosts']
    for host in lost:
        os.kill(records[host.name]['etcd']['pid'], signal.SIGKILL)
    refused = kubectl_on(lab, survivor, 'apply', '-f', '-',
                         input=config_map('without-quorum'))
    assert refused.returncode != 0
    assert 'etcdserver' in refused.stderr, refused.stderr

    path = snapshot.copies[0].split(':', 1)[1]
    restore = lab.run_in_host(
        survivor.name, ['env', f'NODE={node_name(survivor)}',
                        f'IP={survivor.ip}', f'SNAPSHOT={path}', 'bash',
                        '-c', documented_restore()], timeout=240)
    assert restore.returncode == 0, restore.stdout + restore.stderr
    assert restore.stdout.count(f'https://{survivor.ip}:2380') == 1

    names = kubectl_on(lab, survivor, 'get', 'configmaps', '-o', 'name')
    found = set(names.stdout.split())
    assert 'configmap/before-snapshot' in found
    assert not found & {'configmap/after-snapshot',
                        'configmap/without-quorum'}
    assert kubectl_on(lab, survivor, 'apply', '-f', '-',
                      input=config_map('after-restore')).returncode == 0
    assert [m['name'] for m in view(lab).etcd_members()] == \
        [node_name(survivor)]

    driving.heal(lab, instance, [driving.vnfc_of(instance, h)
                                 for h in lost])
    members = view(lab).etcd_members()
    assert sorted(m['name'] for m in members) == sorted(
        node_name(h) for h in masters)
    assert_cluster_matches_lab(lab, instance)
    # The heal took its own snapshot first, on the survivor.
    recorded = driving.stored_state(lab, instance).etcd_snapshot
    assert recorded['master'] == node_name(survivor)
    assert recorded['name'].endswith('-heal.db')


def test_heal_of_the_whole_vnf_reinstalls_and_registers_again(ha_lab):
    lab, instance = ha_lab
    old_stack = lab.state.stack_id
    old_vim = driving.stored_state(lab, instance).vim_id
    driving.heal_whole(lab, instance)
    assert lab.state.stack_id != old_stack
    assert_cluster_matches_lab(lab, instance)
    assert bootstrap_tokens(lab) == []
    state = driving.stored_state(lab, instance)
    assert state.stack_id == lab.state.stack_id
    records = registry(lab).records()
    assert [r.id for r in records] == [state.vim_id] and \
        state.vim_id != old_vim
    kube = [c for c in instance.vim_connection_info
            if c.vim_type == 'kubernetes']
    assert [c.vim_id for c in kube] == [state.vim_id]
    assert instance.vim_connection_info[0].vim_type == 'openstack'


def test_terminate_removes_the_vim_and_the_stored_state(ha_lab):
    lab, instance = ha_lab
    driving.terminate(instance)
    assert registry(lab).records() == []
    assert not instance_state.holds_state(instance.vnf_metadata)
    assert [c.vim_type for c in instance.vim_connection_info] == \
        ['openstack']
    with open(lab.vim_registry_file, encoding='utf-8') as f:
        assert json.load(f) == {'vims': []}
    # An instantiate rollback after that finds nothing and is fine.
    driving.hook('terminate_end', instance, terminate_vnf_request=None)
    assert os.path.exists(lab.vim_registry_file)

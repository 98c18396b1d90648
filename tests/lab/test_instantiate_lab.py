"""instantiate_end against the lab, with Tacker-shaped objects.

Real: SSH, Keystone and Heat (through python-heatclient), the install
script, HAProxy and keepalived. Emulated: the compute and network APIs
below Heat, the Kubernetes binaries.
"""
import base64
import json
import logging
import re
import shutil
import ssl
import urllib.request
from pathlib import Path

import pytest

from kubernetes_mgmt.cluster.script import CONTRACT_VERSION
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.remote.retry import poll
from kubernetes_mgmt_lab import driving
from kubernetes_mgmt_lab.emulated import ClusterView, inject_fault
from kubernetes_mgmt_lab.emulated.kubeadm import ADDON_TAGS
from kubernetes_mgmt_lab.testing import throwaway_lab, unavailable_reason

pytestmark = pytest.mark.lab


def _require_lab() -> None:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)


def _instantiated(site, masters: int, workers: int):
    _require_lab()
    with driving.instantiated_lab(masters, workers, site=site) as pair:
        yield pair


@pytest.fixture(scope='module')
def simple(site):
    yield from _instantiated(site, 1, 2)


@pytest.fixture(scope='module')
def ha(site):
    yield from _instantiated(site, 3, 2)


def nodes_by_role(lab):
    view = ClusterView(lab.state.cluster_dir)
    result = {}
    for node in view.nodes():
        labels = node['metadata'].get('labels', {})
        role = ('master' if 'node-role.kubernetes.io/control-plane'
                in labels else 'worker')
        ready = any(c['type'] == 'Ready' and c['status'] == 'True'
                    for c in node['status']['conditions'])
        address = next(a['address'] for a in node['status']['addresses']
                       if a['type'] == 'InternalIP')
        result[address] = (role, ready)
    return result


def registered_vims(lab):
    with open(f'{lab.root}/vims.json', encoding='utf-8') as f:
        data = json.load(f)
    return data['vims'] if isinstance(data, dict) and 'vims' in data \
        else data


def assert_cluster_and_vim(lab, instance, auth_url):
    expected = {h.ip: (h.role, True) for h in lab.state.hosts}
    assert nodes_by_role(lab) == expected
    vims = registered_vims(lab)
    assert len(vims) == 1
    vim = vims[0] if isinstance(vims, list) else next(iter(vims.values()))
    assert vim['auth_url'] == auth_url
    view = ClusterView(lab.state.cluster_dir)
    tokens = [s for s in view.secrets()
              if s.get('type') == 'kubernetes.io/service-account-token']
    assert any(base64.b64decode(s['data']['token']).decode()
               == vim['bearer_token'] for s in tokens)
    ca = lab.host_path(lab.state.hosts[0].name, '/etc/kubernetes/pki/ca.crt')
    with open(ca, encoding='utf-8') as f:
        assert vim['ssl_ca_cert'] == f.read()
    kube = [c for c in instance.vim_connection_info
            if c.vim_type == 'kubernetes']
    assert len(kube) == 1 and kube[0].vim_id == vim['id']
    assert kube[0].access_info == {'auth_url': auth_url}


def test_simple_cluster_is_installed_and_registered(simple):
    lab, instance = simple
    master = lab.state.hosts[0]
    assert_cluster_and_vim(lab, instance, f'https://{master.ip}:6443')
    stored = driving.stored_state(lab, instance)
    assert stored.control_plane_endpoint == f'{master.ip}:6443'
    assert len(stored.nodes) == 3 and len(stored.host_keys) == 3


def test_ha_cluster_is_installed_and_registered(ha):
    lab, instance = ha
    assert_cluster_and_vim(lab, instance, f'https://{lab.state.vip}:16443')


def _vip_holders(lab):
    masters = [h for h in lab.state.hosts if h.role == 'master']
    return [h.name for h in masters
            if f' {lab.state.vip}/' in lab.run_in_host(
                h.name, ['ip', '-o', '-4', 'addr', 'show']).stdout]


def _healthz_through_vip(lab) -> str:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    url = f'https://{lab.state.vip}:16443/healthz'
    with urllib.request.urlopen(url, context=context,
                                timeout=5) as reply:
        return reply.read().decode()


def test_vip_fails_over_when_haproxy_stops(ha):
    lab, _ = ha
    holders = poll(lambda: _vip_holders(lab), deadline=15, what='VIP held')
    assert len(holders) == 1
    assert _healthz_through_vip(lab) == 'ok'
    for host in lab.state.hosts:
        if host.role == 'master':
            check = lab.run_in_host(host.name, [
                'haproxy', '-c', '-f', '/etc/haproxy/haproxy.cfg'])
            assert check.returncode == 0, check.stderr
            check = lab.run_in_host(host.name, [
                'keepalived', '-t', '-f', '/etc/keepalived/keepalived.conf'])
            assert check.returncode == 0, check.stderr

    lab.run_in_host(holders[0], ['systemctl', 'stop', 'haproxy'])
    moved = poll(lambda: [h for h in _vip_holders(lab) if h != holders[0]],
                 deadline=10, what='VIP moved to another master')
    assert len(moved) == 1
    assert poll(lambda: _healthz_through_vip(lab) == 'ok', deadline=10,
                what='API through the VIP')
    lab.run_in_host(holders[0], ['systemctl', 'start', 'haproxy'])


def test_failed_join_names_host_and_step_and_rerun_completes(site, caplog):
    _require_lab()
    caplog.set_level(logging.WARNING, 'kubernetes_mgmt.remote.ssh')
    with throwaway_lab(1, 2, site=site) as lab, driving.driver_options(lab):
        victim = lab.state.hosts[2]
        inject_fault(lab.state.cluster_dir, victim.name, 'kubeadm join',
                     'injected: connection reset')
        request, instance = driving.new_instance(lab)
        with pytest.raises(MgmtDriverError) as info:
            driving.instantiate_end(request, instance)
        message = str(info.value)
        assert f'@{victim.ip}] join-worker' in message
        assert 'injected: connection reset' in message
        view = ClusterView(lab.state.cluster_dir)
        before = len(view.events())

        driving.instantiate_end(request, instance)
        assert nodes_by_role(lab) == {
            h.ip: (h.role, True) for h in lab.state.hosts}
        redone = view.events()[before:]
        commands = [(e['host'], ' '.join(e['argv'][:2]))
                    for e in redone]
        # Only the join credentials are refreshed (upload-certs is an
        # init *phase*); the control plane is not initialized again.
        assert not [e for e in redone if e['argv'][:2] == [
            'kubeadm', 'init'] and e['argv'][2:3] != ['phase']]
        assert not [c for c in commands if c[1] == 'apt-get install']
        joins = [h for h, c in commands if c == 'kubeadm join']
        assert joins == [victim.name]
    # These VMs took no user data: the request's password logs in, and
    # each of the two operations says so once, for all its VMs.
    fallbacks = [r for r in caplog.records
                 if 'logged in with the VM password' in r.getMessage()]
    assert len(fallbacks) == 2


MIRROR = 'mirror.example:5000/k8s'


def _package_of_another_contract(lab) -> str:
    """The lab's package, its install script declaring the contract
    before this plugin's (a package built by an older release)."""
    package = Path(lab.root) / 'old-package'
    shutil.copytree(lab.package_dir, package)
    script = package / 'Scripts' / 'install_k8s_cluster.sh'
    text = script.read_text(encoding='utf-8')
    ours = f'readonly CONTRACT_VERSION={CONTRACT_VERSION}\n'
    assert ours in text
    script.write_text(text.replace(
        ours, f'readonly CONTRACT_VERSION={CONTRACT_VERSION - 1}\n'),
        encoding='utf-8')
    return str(package)


def test_old_contract_refused_untouched_then_air_gapped_sandbox_image(site):
    """A package whose script speaks another contract, or a setting that
    makes a role's configuration break the contract, is refused before
    any VM is touched; with the right package and image_repository set,
    containerd on every node pins the sandbox image from the mirror."""
    _require_lab()
    with throwaway_lab(1, 1, site=site) as lab:
        view = ClusterView(lab.state.cluster_dir)
        hosts = lab.state.hosts
        logins = {h.name: lab.ssh_accepts(h.name) for h in hosts}
        events = len(view.events())
        request, instance = driving.new_instance(lab)
        with driving.driver_options(
                lab, vnf_package_dir=_package_of_another_contract(lab)):
            with pytest.raises(MgmtDriverError) as info:
                driving.instantiate_end(request, instance, lab)
        message = str(info.value)
        assert (f'speaks install-script contract version '
                f'{CONTRACT_VERSION - 1}, this plugin speaks version '
                f'{CONTRACT_VERSION}') in message
        assert 'kubernetes-mgmt package build' in message
        assert {h.name: lab.ssh_accepts(h.name) for h in hosts} == logins
        assert len(view.events()) == events
        assert not driving.stored_state(lab, instance).host_keys

        # The script would refuse this repository (uppercase) on each VM.
        with driving.driver_options(lab, image_repository='Mirror.X/k8s'):
            with pytest.raises(MgmtDriverError) as info:
                driving.instantiate_end(request, instance, lab)
        message = str(info.value)
        assert 'breaks the script contract; no host was touched' in message
        # Named once, with every node it concerns.
        found = re.findall(r'role prepare \(([^)]*)\): invalid '
                           'IMAGE_REPOSITORY', message)
        assert len(found) == 1 and len(found[0].split(', ')) == len(hosts)
        assert 'role init (' in message
        assert 'Mirror.X' not in message
        assert {h.name: lab.ssh_accepts(h.name) for h in hosts} == logins
        assert len(view.events()) == events
        assert not driving.stored_state(lab, instance).host_keys

        with driving.driver_options(lab, image_repository=MIRROR):
            driving.instantiate_end(request, instance, lab)
        assert nodes_by_role(lab) == {h.ip: (h.role, True) for h in hosts}
        # Positive control: logins are counted (the refusal made none).
        assert all(lab.ssh_accepts(h.name, at_least=logins[h.name] + 1)
                   > logins[h.name] for h in hosts)
        for host in hosts:
            version = lab.run_in_host(host.name, [
                'kubeadm', 'version', '-o', 'short']).stdout.strip()
            pause = ADDON_TAGS[int(version.split('.')[1])][1]
            with open(lab.host_path(host.name,
                                    '/etc/containerd/config.toml'),
                      encoding='utf-8') as f:
                config = f.read()
            assert f'sandbox_image = "{MIRROR}/pause:{pause}"' in [
                line.strip() for line in config.splitlines()], host.name
        # kubeadm init was given the mirror (its ClusterConfiguration).
        assert view.info()['image_repository'] == MIRROR

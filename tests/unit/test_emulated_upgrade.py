"""The lab's two Kubernetes minors and the emulated kubeadm upgrade and
certificate commands, run as subprocesses on simulated hosts: apt's
per-minor repositories, kubeadm's skew refusals with its wording, the
atomic rollback of a failed control-plane upgrade, the kubelet reporting
its version only after a restart, certificates judged and renewed by the
lab's clock, and the change log that replays each node's history."""
from __future__ import annotations

import json
import os
import ssl
import urllib.request

import pytest

from kubernetes_mgmt.remote.retry import wait_until
from kubernetes_mgmt_lab.emulated import testing
from kubernetes_mgmt_lab.emulated.config import set_clock_offset
from kubernetes_mgmt_lab.emulated.faults import (
    fail_upgrade_apply_midway,
    fail_upgrade_node,
)
from kubernetes_mgmt_lab.emulated.view import (
    ClusterView,
    half_upgraded,
    node_histories,
)

OLD, NEW = 'v1.36.4', 'v1.37.1'
SOURCES = '/etc/apt/sources.list.d/kubernetes.list'
PKGS_K8S = 'https://pkgs.k8s.io/core:/stable:/v{minor}/deb/'
KUBE = ('kubelet', 'kubeadm', 'kubectl')
HA_INIT = """\
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
controlPlaneEndpoint: "{ip}:6443"
networking:
  podSubnet: 10.244.0.0/16
"""
DAY = 86400


def _repo(host, url: str) -> None:
    path = host.path(SOURCES)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as f:
        f.write(f'deb [signed-by=/etc/apt/keyrings/k.gpg] {url} /\n')


def _installed(host) -> dict[str, str]:
    out = host.run('dpkg-query', '-W', '-f', '${Package} ${Version}\n',
                   *KUBE, check=True).stdout
    return dict(line.split() for line in out.splitlines())


@pytest.fixture
def lab(tmp_path):
    """Hosts whose repository is the 1.36 one, with the base packages."""
    made: list[testing.SimHost] = []
    prefix = testing.random_loopback_base()
    cluster_dir = str(tmp_path / 'cluster')

    def host(name: str, last: int):
        h = testing.make_host(str(tmp_path), cluster_dir, name,
                              f'{prefix}{last}')
        _repo(h, PKGS_K8S.format(minor='1.36'))
        h.install_base()
        made.append(h)
        return h
    host.cluster_dir = cluster_dir
    yield host
    testing.cleanup(made)


def _cluster(lab, workers: int = 1, masters: int = 1):
    """A 1.36 cluster (nodes Ready: the CNI stand-in is applied)."""
    m0 = lab('master-0', 10)
    conf = m0.path('/etc/kubeadm/init.yaml')
    os.makedirs(os.path.dirname(conf), exist_ok=True)
    with open(conf, 'w', encoding='utf-8') as f:
        f.write(HA_INIT.format(ip=m0.ip))
    m0.run('kubeadm', 'init', '--config', '/etc/kubeadm/init.yaml',
           '--upload-certs', check=True)
    m0.run('kubectl', '--kubeconfig', '/etc/kubernetes/admin.conf',
           'apply', '-f', '-', stdin=testing.CNI_MANIFEST, check=True)
    hosts = [m0]
    for i in range(1, masters):
        m = lab(f'master-{i}', 10 + i)
        key = m0.run('kubeadm', 'init', 'phase', 'upload-certs',
                     '--upload-certs', check=True).stdout.split()[-1]
        join = m0.run('kubeadm', 'token', 'create', '--print-join-command',
                      check=True).stdout.split()[1:]
        m.run('kubeadm', *join, '--control-plane', '--certificate-key', key,
              '--apiserver-advertise-address', m.ip, check=True)
        hosts.append(m)
    for i in range(workers):
        w = lab(f'worker-{i}', 20 + i)
        join = m0.run('kubeadm', 'token', 'create', '--print-join-command',
                      check=True).stdout.split()[1:]
        w.run('kubeadm', *join, check=True)
        hosts.append(w)
    return hosts


def _server_version(host) -> str:
    with open(host.path('/etc/kubernetes/pki/ca.crt'), encoding='utf-8') as f:
        ctx = ssl.create_default_context(cadata=f.read())
    with urllib.request.urlopen(
            f'https://{host.ip}:6443/version', context=ctx,
            timeout=10) as resp:
        return json.load(resp)['gitVersion']


def _apiserver_pid(host) -> str:
    with open(host.path('/run/klab/kube-apiserver.pid'),
              encoding='utf-8') as f:
        return f.read().strip()


def _kubelet_versions(host) -> dict[str, str]:
    nodes = json.loads(host.kubectl('get', 'nodes', '-o', 'json').stdout)
    return {n['metadata']['name']: n['status']['nodeInfo']['kubeletVersion']
            for n in nodes['items']}


def _manifest_images(host) -> set[str]:
    images = set()
    for comp in ('kube-apiserver', 'kube-controller-manager',
                 'kube-scheduler'):
        with open(host.path(f'/etc/kubernetes/manifests/{comp}.yaml'),
                  encoding='utf-8') as f:
            images |= {line.split(':')[-1].strip() for line in f
                       if 'image:' in line}
    return images


def _cluster_config_version(host) -> str:
    cm = json.loads(host.kubectl('-n', 'kube-system', 'get', 'configmap',
                                 'kubeadm-config', '-o', 'json').stdout)
    text = cm['data']['ClusterConfiguration']
    return next(line.split(':', 1)[1].strip() for line in text.splitlines()
                if line.startswith('kubernetesVersion:'))


def _kubeadm_to(host, minor: str) -> None:
    _repo(host, PKGS_K8S.format(minor=minor))
    host.run('apt-get', 'install', '-y', f'kubeadm={minor}.*', check=True)


def _changes(lab, host, *kinds: str) -> list[str]:
    return [c['what'] for c in node_histories(lab.cluster_dir)[host.name]
            if not kinds or c['what'] in kinds]


# ---- apt: one minor per repository -------------------------------------

def test_apt_offers_only_the_minor_its_repository_names(tmp_path):
    host = testing.make_host(str(tmp_path), str(tmp_path / 'c'), 'h',
                             '127.0.0.1')
    _repo(host, PKGS_K8S.format(minor='1.36'))
    host.run('apt-get', 'install', '-y', *KUBE, check=True)
    assert _installed(host) == dict.fromkeys(KUBE, '1.36.4-1.1')
    refused = host.run('apt-get', 'install', '-y', 'kubeadm=1.37.*')
    assert refused.returncode == 100
    assert refused.stderr.strip() == \
        "E: Version '1.37.*' for 'kubeadm' was not found"
    assert _installed(host)['kubeadm'] == '1.36.4-1.1'
    # The lab site's form of the URL ({site}apt/v{minor}/) names a minor
    # the same way.
    _repo(host, 'http://10.10.0.1:8090/apt/v1.37/')
    host.run('apt-get', 'install', '-y', 'kubeadm=1.37.*', check=True)
    assert _installed(host)['kubeadm'] == '1.37.1-1.1'
    assert host.run('apt-get', 'install', '-y',
                    'kubelet=1.36.4-1.1').returncode == 100
    # A repository that names no minor offers both.
    _repo(host, 'http://10.10.0.1:8090/apt/')
    host.run('apt-get', 'install', '-y', '--allow-downgrades',
             'kubeadm=1.36.*', check=True)
    assert _installed(host)['kubeadm'] == '1.36.4-1.1'


def test_kubectl_is_the_release_of_its_package(tmp_path):
    host = testing.make_host(str(tmp_path), str(tmp_path / 'c'), 'h',
                             '127.0.0.1')
    _repo(host, PKGS_K8S.format(minor='1.36'))
    host.run('apt-get', 'install', '-y', 'kubectl', check=True)
    client = json.loads(host.run('kubectl', 'version', '--client', '-o',
                                 'json', check=True).stdout)
    assert client['clientVersion']['gitVersion'] == OLD


# ---- kubeadm upgrade ---------------------------------------------------

def test_skips_downgrades_and_targets_newer_than_kubeadm_are_refused(lab):
    m0, _ = _cluster(lab)
    before = _changes(lab, m0)
    skip = m0.run('kubeadm', 'upgrade', 'apply', 'v1.38.0', '-y')
    assert skip.returncode == 1
    assert 'error execution phase preflight: the version argument is ' \
        'invalid due to these fatal errors:' in skip.stderr
    assert '\t- Specified version to upgrade to "v1.38.0" is too high; ' \
        'kubeadm can upgrade only 1 minor version at a time' in skip.stderr
    newer = m0.run('kubeadm', 'upgrade', 'apply', NEW, '-y')
    assert newer.returncode == 1
    assert f'Specified version to upgrade to "{NEW}" is at least one ' \
        'minor release higher than the kubeadm minor release (37 > 36). ' \
        'Such an upgrade is not supported' in newer.stderr
    _kubeadm_to(m0, '1.37')
    down = m0.run('kubeadm', 'upgrade', 'apply', 'v1.36.0', '-y')
    assert down.returncode == 1
    assert 'Kubeadm version v1.37.1 can only be used to upgrade to ' \
        'Kubernetes version 1.37\n\nCan be bypassed if you pass the ' \
        '--force flag' in down.stderr
    # Nothing changed: no upgrade started, the control plane is 1.36.
    assert _changes(lab, m0, 'upgrade-apply-start') == []
    assert _changes(lab, m0)[len(before):] == ['package']
    assert _server_version(m0) == OLD
    assert _manifest_images(m0) == {OLD}
    assert ClusterView(lab.cluster_dir).info()['kubernetes_version'] == OLD


def test_apply_then_kubelet_upgrade_and_restart(lab):
    m0, w0 = _cluster(lab)
    _kubeadm_to(m0, '1.37')
    plan = m0.run('kubeadm', 'upgrade', 'plan', check=True).stdout
    assert f'kubeadm upgrade apply {NEW}' in plan
    apiserver_crt = m0.path('/etc/kubernetes/pki/apiserver.crt')
    with open(apiserver_crt, 'rb') as f:
        old_cert = f.read()
    out = m0.run('kubeadm', 'upgrade', 'apply', NEW, '--yes',
                 check=True).stdout
    assert f'SUCCESS! A control plane node of your cluster was upgraded ' \
        f'to "{NEW}"' in out
    assert _server_version(m0) == NEW
    assert _manifest_images(m0) == {NEW}
    assert _cluster_config_version(m0) == NEW
    with open(apiserver_crt, 'rb') as f:
        assert f.read() != old_cert          # renewed by the upgrade
    # The kubelets still run 1.36: only their package and a restart move
    # them.
    assert _kubelet_versions(m0) == {'master-0': OLD, 'worker-0': OLD}
    m0.run('apt-get', 'install', '-y', 'kubelet=1.37.*', 'kubectl=1.37.*',
           check=True)
    assert m0.run('kubelet', '--version').stdout.strip() == \
        f'Kubernetes {NEW}'
    assert _kubelet_versions(m0)['master-0'] == OLD
    m0.run('systemctl', 'restart', 'kubelet', check=True)
    assert _kubelet_versions(m0) == {'master-0': NEW, 'worker-0': OLD}
    version = json.loads(m0.kubectl('version', '-o', 'json').stdout)
    assert version['serverVersion']['gitVersion'] == NEW
    assert version['clientVersion']['gitVersion'] == NEW
    # Applying again (a retry) leaves an upgraded control plane alone.
    pid = _apiserver_pid(m0)
    again = m0.run('kubeadm', 'upgrade', 'apply', NEW, '-y',
                   check=True).stdout
    assert 'Current and new manifests of kube-apiserver are equal, ' \
        'skipping upgrade' in again
    assert _apiserver_pid(m0) == pid
    # The worker: kubeadm upgrade node touches only its kubelet config.
    _kubeadm_to(w0, '1.37')
    node = w0.run('kubeadm', 'upgrade', 'node', check=True).stdout
    assert 'Skipping phase. Not a control plane node.' in node
    assert _changes(lab, w0, 'upgrade-node-start', 'upgrade-node-end') == \
        ['upgrade-node-start', 'upgrade-node-end']


def _etcd(host) -> tuple[str, bytes]:
    """The real etcd's pid and its manifest."""
    with open(host.path('/run/klab/etcd.pid'), encoding='utf-8') as f:
        pid = f.read().strip()
    with open(host.path('/etc/kubernetes/manifests/etcd.yaml'), 'rb') as f:
        return pid, f.read()


def test_failure_in_the_middle_of_apply_rolls_the_node_back(lab):
    """... and etcd, one version for both minors in the lab, is neither
    rewritten nor restarted by the upgrade, its rollback or the retry."""
    m0, _ = _cluster(lab)
    m0.kubectl('cordon', 'master-0')
    _kubeadm_to(m0, '1.37')
    etcd = _etcd(m0)
    fail_upgrade_apply_midway(lab.cluster_dir, message='etcd went away')
    failed = m0.run('kubeadm', 'upgrade', 'apply', NEW, '-y')
    assert failed.returncode == 1
    assert 'Current and new manifests of etcd are equal, skipping ' \
        'upgrade' in failed.stdout
    assert _etcd(m0) == etcd
    assert 'error execution phase control-plane: couldn\'t complete the ' \
        'static pod upgrade: couldn\'t upgrade control plane. kubeadm has ' \
        'tried to recover everything into the earlier state. Errors ' \
        'faced: etcd went away' in failed.stderr
    assert _server_version(m0) == OLD
    assert _manifest_images(m0) == {OLD}
    view = ClusterView(lab.cluster_dir)
    assert view.info()['kubernetes_version'] == OLD
    assert _changes(lab, m0, 'upgrade-apply-start', 'upgrade-rollback',
                    'upgrade-apply-end') == ['upgrade-apply-start',
                                             'upgrade-rollback']
    # The retry (the fault was used up) completes.
    m0.run('kubeadm', 'upgrade', 'apply', NEW, '-y', check=True)
    assert _server_version(m0) == NEW
    assert view.info()['kubernetes_version'] == NEW
    assert _etcd(m0) == etcd
    m0.etcdctl('endpoint', 'health', check=True)


def test_upgrade_node_brings_another_master_to_the_cluster_version(lab):
    m0, m1 = _cluster(lab, workers=0, masters=2)
    for m in (m0, m1):
        _kubeadm_to(m, '1.37')
    out = m0.run('kubeadm', 'upgrade', 'apply', NEW, '-y', check=True)
    assert 'Skipping upgrade of addons because control plane instances ' \
        '[master-1] have not been upgraded' in out.stdout
    assert _server_version(m1) == OLD
    fail_upgrade_node(lab.cluster_dir, 'master-1', 'node fault',
                      midway=True)
    failed = m1.run('kubeadm', 'upgrade', 'node')
    assert failed.returncode == 1 and 'node fault' in failed.stderr
    assert _server_version(m1) == OLD and _manifest_images(m1) == {OLD}
    m1_crt = m1.path('/etc/kubernetes/pki/apiserver.crt')
    with open(m1_crt, 'rb') as f:
        before = f.read()
    done = m1.run('kubeadm', 'upgrade', 'node',
                  '--certificate-renewal=false', check=True).stdout
    assert 'control plane instance for this node was successfully ' \
        'upgraded' in done
    assert _server_version(m1) == NEW and _manifest_images(m1) == {NEW}
    with open(m1_crt, 'rb') as f:
        assert f.read() == before       # not renewed, as asked
    proxy = json.loads(m0.kubectl('-n', 'kube-system', 'get', 'daemonset',
                                  'kube-proxy', '-o', 'json').stdout)
    assert proxy['spec']['template']['spec']['containers'][0]['image'] == \
        f'registry.k8s.io/kube-proxy:{NEW}'


# ---- certificates and the lab clock --------------------------------------

def _served_der(host) -> bytes:
    pem = ssl.get_server_certificate((host.ip, 6443), timeout=5)
    return ssl.PEM_cert_to_DER_cert(pem)


def _expiration(host) -> dict:
    return json.loads(host.run('kubeadm', 'certs', 'check-expiration',
                               '-o', 'json', check=True).stdout)


def test_certs_check_expiration_and_renew_follow_the_lab_clock(lab):
    m0, w0 = _cluster(lab)
    info = _expiration(m0)
    assert (info['kind'], info['apiVersion']) == (
        'CertificateExpirationInfo', 'output.kubeadm.k8s.io/v1alpha3')
    certs = {c['name']: c for c in info['certificates']}
    assert set(certs) == {
        'admin.conf', 'apiserver', 'apiserver-etcd-client',
        'apiserver-kubelet-client', 'controller-manager.conf',
        'etcd-healthcheck-client', 'etcd-peer', 'etcd-server',
        'front-proxy-client', 'scheduler.conf', 'super-admin.conf'}
    assert set(certs['apiserver']) == {'name', 'expirationDate',
                                       'residualTime', 'externallyManaged',
                                       'caName', 'missing'}
    assert certs['apiserver']['caName'] == 'ca'
    assert certs['etcd-peer']['caName'] == 'etcd-ca'
    for cert in certs.values():         # one year, as kubeadm issues
        assert 364 * DAY < cert['residualTime'] <= 365 * DAY
        assert not cert['missing']
    cas = {c['name']: c for c in info['certificateAuthorities']}
    assert set(cas) == {'ca', 'etcd-ca', 'front-proxy-ca'}
    assert all('caName' not in c and c['residualTime'] > 9 * 365 * DAY
               for c in cas.values())

    set_clock_offset(lab.cluster_dir, days=345)
    aged = {c['name']: c for c in _expiration(m0)['certificates']}
    assert all(19 * DAY < c['residualTime'] <= 20 * DAY
               for c in aged.values())
    table = m0.run('kubeadm', 'certs', 'check-expiration',
                   check=True).stdout
    assert 'CERTIFICATE                EXPIRES' in table
    row = next(line for line in table.splitlines()
               if line.startswith('apiserver '))
    assert row.split()[6:8] == ['19d', 'ca']

    renew = m0.run('kubeadm', 'certs', 'renew', 'all', check=True).stdout
    assert 'certificate for serving the Kubernetes API renewed' in renew
    assert 'You must restart the kube-apiserver, kube-controller-manager, ' \
        'kube-scheduler and etcd' in renew
    renewed = {c['name']: c for c in _expiration(m0)['certificates']}
    assert all(364 * DAY < c['residualTime'] <= 365 * DAY
               for c in renewed.values())
    # Renewed "in the future" by the lab clock, the admin kubeconfig still
    # works for a client on the machine's clock.
    assert 'master-0' in m0.kubectl('get', 'nodes', '-o', 'name').stdout
    # The API server serves its renewed certificate without a restart,
    # as kube-apiserver reloads it.
    with open(m0.path('/etc/kubernetes/pki/apiserver.crt'),
              encoding='utf-8') as f:
        on_disk = ssl.PEM_cert_to_DER_cert(f.read())
    assert wait_until(lambda: _served_der(m0) == on_disk, deadline=10,
                      ceiling=0.5)
    # A worker has none of the control plane's certificates.
    assert all(c['missing'] for c in _expiration(w0)['certificates'])


# ---- the change log ------------------------------------------------------

def test_change_log_finds_a_node_returned_to_service_half_upgraded(lab):
    m0, w0 = _cluster(lab)
    assert half_upgraded(lab.cluster_dir) == []
    m0.kubectl('cordon', 'worker-0')
    _repo(w0, PKGS_K8S.format(minor='1.37'))
    w0.run('apt-get', 'install', '-y', *(f'{p}=1.37.*' for p in KUBE),
           check=True)
    m0.kubectl('uncordon', 'worker-0')     # kubelet not restarted
    assert half_upgraded(lab.cluster_dir) == [
        'worker-0: uncordoned with kubelet v1.36.4 runs but 1.37.1 is '
        'installed (not restarted)',
        'worker-0: at the end, in service with kubelet v1.36.4 runs but '
        '1.37.1 is installed (not restarted)']
    history = _changes(lab, w0)
    assert history[-5:] == ['cordon', 'package', 'package', 'package',
                            'uncordon']
    w0.run('systemctl', 'restart', 'kubelet', check=True)
    # The moment it was uncordoned stays on record; now it is whole.
    assert half_upgraded(lab.cluster_dir) == [
        'worker-0: uncordoned with kubelet v1.36.4 runs but 1.37.1 is '
        'installed (not restarted)']
    assert _kubelet_versions(m0)['worker-0'] == NEW

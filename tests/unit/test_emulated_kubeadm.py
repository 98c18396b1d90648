"""kubeadm stand-ins building a cluster over the shared state, run as
subprocesses against simulated hosts, with the real etcd (Debian's) on
the masters; the real kubectl talks to the cluster's API servers."""
from __future__ import annotations

import json
import os
import re
import shutil
import ssl
import urllib.request
from types import SimpleNamespace

import pytest

from kubernetes_mgmt.remote.retry import poll
from kubernetes_mgmt_lab.emulated import store, testing
from kubernetes_mgmt_lab.emulated.view import (
    ClusterView,
    expire_certificate_key,
    expire_tokens,
    set_host_down,
)

HA_CONFIG = """\
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: {ip}
nodeRegistration:
  name: master-0
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.31.4
controlPlaneEndpoint: "{ip}:6443"
networking:
  podSubnet: 10.244.0.0/16
  serviceSubnet: 10.96.0.0/12
"""


@pytest.fixture
def lab(tmp_path):
    """Hosts made on demand; every process they start is stopped."""
    made: list[testing.SimHost] = []
    prefix = testing.random_loopback_base()
    cluster_dir = str(tmp_path / 'cluster')

    def host(name: str, last: int, role: str = 'worker'):
        h = testing.make_host(str(tmp_path), cluster_dir, name,
                              f'{prefix}{last}', role)
        h.install_base()
        made.append(h)
        return h
    host.cluster_dir = cluster_dir
    yield host
    testing.cleanup(made)


def _init_ha(master) -> str:
    cfg = master.path('/etc/kubeadm/init.yaml')
    os.makedirs(os.path.dirname(cfg), exist_ok=True)
    with open(cfg, 'w', encoding='utf-8') as f:
        f.write(HA_CONFIG.format(ip=master.ip))
    proc = master.run('kubeadm', 'init', '--config',
                      '/etc/kubeadm/init.yaml', '--upload-certs',
                      check=True)
    return proc.stdout


def _join_parts(init_out: str) -> tuple[str, str, str]:
    token = re.search(r'--token (\S+)', init_out).group(1)
    ca_hash = re.search(r'--discovery-token-ca-cert-hash (\S+)',
                        init_out).group(1)
    key = re.search(r'--certificate-key (\S+)', init_out).group(1)
    return token, ca_hash, key


def test_init_join_worker_and_control_plane(lab):
    m0, m1, w0 = lab('master-0', 10), lab('master-1', 11), lab('w-0', 20)
    out = _init_ha(m0)
    assert 'initialized successfully' in out
    token, ca_hash, key = _join_parts(out)
    endpoint = f'{m0.ip}:6443'
    w0.run('kubeadm', 'join', endpoint, '--token', token,
           '--discovery-token-ca-cert-hash', ca_hash, check=True)
    m1.run('kubeadm', 'join', endpoint, '--token', token,
           '--discovery-token-ca-cert-hash', ca_hash, '--control-plane',
           '--certificate-key', key, '--apiserver-advertise-address',
           m1.ip, check=True)
    nodes = json.loads(m0.kubectl('get', 'nodes', '-o', 'json').stdout)
    assert nodes['kind'] == 'List'
    by_name = {n['metadata']['name']: n for n in nodes['items']}
    assert set(by_name) == {'master-0', 'master-1', 'w-0'}
    labels = by_name['master-1']['metadata']['labels']
    assert 'node-role.kubernetes.io/control-plane' in labels
    assert by_name['master-1']['spec']['taints'][0]['effect'] == \
        'NoSchedule'
    assert 'taints' not in by_name['w-0']['spec']
    # the second master serves too and has its own admin.conf
    assert m1.kubectl('get', 'node', 'w-0', '-o', 'name').stdout.strip() \
        == 'node/w-0'
    # The real etcd: the second master joined as a learner and was
    # promoted (no member is a learner any more).
    members = json.loads(m0.etcdctl('member', 'list', '-w', 'json',
                                    check=True).stdout)
    assert sorted(m['name'] for m in members['members']) == ['master-0',
                                                             'master-1']
    assert all(isinstance(m['ID'], int) and not m.get('isLearner')
               for m in members['members'])
    by_name = {m['name']: m for m in
               ClusterView(lab.cluster_dir).etcd_members()}
    assert by_name['master-1']['peerURLs'] == [f'https://{m1.ip}:2380']
    # The objects' durable copy is in etcd, one key per object.
    keys = m1.etcdctl('get', '--prefix', '--keys-only', '/registry/Node/',
                      check=True).stdout.split()
    assert sorted(keys) == ['/registry/Node/master-0',
                            '/registry/Node/master-1', '/registry/Node/w-0']


def test_nodes_deserialize_with_kubernetes_client(lab):
    kubernetes = pytest.importorskip('kubernetes')
    m0 = lab('master-0', 10)
    m0.run('kubeadm', 'init', check=True)
    text = m0.kubectl('get', 'nodes', '-o', 'json').stdout
    api = kubernetes.client.ApiClient()
    try:        # the client's signature changed over the versions
        nodes = api.deserialize(text, 'V1NodeList', 'application/json')
    except (TypeError, AttributeError):
        nodes = api.deserialize(SimpleNamespace(data=text), 'V1NodeList')
    node = nodes.items[0]
    assert node.metadata.name == 'master-0'
    ready = next(c for c in node.status.conditions if c.type == 'Ready')
    assert ready.status == 'False'      # no CNI yet
    assert node.status.node_info.kubelet_version == 'v1.31.4'


def test_init_can_withhold_token_and_certificate_key(lab):
    """--skip-token-print / --skip-certificate-key-print: kubeadm prints
    "<value withheld>" instead of the secrets."""
    m0 = lab('master-0', 10)
    cfg = m0.path('/etc/kubeadm/init.yaml')
    os.makedirs(os.path.dirname(cfg), exist_ok=True)
    token, key = 'abcdef.0123456789abcdef', 'ab' * 32
    with open(cfg, 'w', encoding='utf-8') as f:
        # The InitConfiguration of HA_CONFIG, with a token and a key.
        f.write(HA_CONFIG.format(ip=m0.ip).replace(
            'kind: InitConfiguration\n',
            f'kind: InitConfiguration\nbootstrapTokens:\n  - token: {token}\n'
            f'certificateKey: "{key}"\n', 1))
    out = m0.run('kubeadm', 'init', '--config', '/etc/kubeadm/init.yaml',
                 '--upload-certs', '--skip-token-print',
                 '--skip-certificate-key-print', check=True)
    text = out.stdout + out.stderr
    assert token not in text and key not in text
    assert '--token <value withheld>' in text
    assert '--certificate-key <value withheld>' in text
    assert '"kubeadm-certs"' in text
    assert [t['token'] for t in ClusterView(lab.cluster_dir).tokens()] == \
        [token]


def test_second_init_is_refused(lab):
    m0, m1 = lab('master-0', 10), lab('master-1', 11)
    m0.run('kubeadm', 'init', check=True)
    again = m0.run('kubeadm', 'init')
    assert again.returncode == 1
    assert 'kube-apiserver.yaml already exists' in again.stderr
    other = m1.run('kubeadm', 'init')
    assert other.returncode == 1
    assert 'already initialized' in other.stderr
    assert ClusterView(lab.cluster_dir).node_names() == ['master-0']


def test_bad_tokens_and_hashes_are_refused(lab):
    m0, w0 = lab('master-0', 10), lab('w-0', 20)
    out = m0.run('kubeadm', 'init', check=True).stdout
    token = re.search(r'--token (\S+)', out).group(1)
    ca_hash = re.search(r'--discovery-token-ca-cert-hash (\S+)',
                        out).group(1)
    endpoint = f'{m0.ip}:6443'
    unknown = w0.run('kubeadm', 'join', endpoint, '--token',
                     'abcdef.0123456789abcdef',
                     '--discovery-token-ca-cert-hash', ca_hash)
    assert unknown.returncode == 1
    assert 'could not find a JWS signature' in unknown.stderr
    wrong = w0.run('kubeadm', 'join', endpoint, '--token', token,
                   '--discovery-token-ca-cert-hash', 'sha256:' + '0' * 64)
    assert wrong.returncode == 1 and 'are pinned' in wrong.stderr
    expire_tokens(lab.cluster_dir)
    expired = w0.run('kubeadm', 'join', endpoint, '--token', token,
                     '--discovery-token-ca-cert-hash', ca_hash)
    assert expired.returncode == 1
    assert 'could not find a JWS signature' in expired.stderr
    assert ClusterView(lab.cluster_dir).node_names() == ['master-0']


def test_unreachable_endpoint_fails_join(lab):
    from kubernetes_mgmt_lab.emulated.config import update_config
    m0, w0 = lab('master-0', 10), lab('w-0', 20)
    m0.run('kubeadm', 'init', check=True)
    update_config(lab.cluster_dir, join_timeout=0.5)
    cmd = m0.run('kubeadm', 'token', 'create', '--print-join-command',
                 check=True).stdout.split()
    cmd[2] = f'{m0.ip}:16443'   # nothing listens there
    proc = w0.run('kubeadm', 'join', *cmd[2:])
    assert proc.returncode == 1
    assert 'connection refused' in proc.stderr


def test_control_plane_join_needs_valid_certificate_key(lab):
    m0, m1 = lab('master-0', 10), lab('master-1', 11)
    token, ca_hash, key = _join_parts(_init_ha(m0))
    base = ['kubeadm', 'join', f'{m0.ip}:6443', '--token', token,
            '--discovery-token-ca-cert-hash', ca_hash, '--control-plane']
    wrong = m1.run(*base, '--certificate-key', 'f' * 64)
    assert wrong.returncode == 1 and 'authentication failed' in wrong.stderr
    expire_certificate_key(lab.cluster_dir)
    old = m1.run(*base, '--certificate-key', key)
    assert old.returncode == 1 and 'kubeadm-certs' in old.stderr
    new = m0.run('kubeadm', 'init', 'phase', 'upload-certs',
                 '--upload-certs', check=True).stdout.strip().splitlines()
    assert re.fullmatch(r'[0-9a-f]{64}', new[-1])
    m1.run(*base, '--certificate-key', new[-1], check=True)
    again = m1.run(*base, '--certificate-key', new[-1])
    assert again.returncode == 1 and 'kubelet.conf already exists' in \
        again.stderr


def test_etcd_member_remove_by_exact_id(lab):
    m0, m1 = lab('master-0', 10), lab('master-1', 11)
    token, ca_hash, key = _join_parts(_init_ha(m0))
    m1.run('kubeadm', 'join', f'{m0.ip}:6443', '--token', token,
           '--discovery-token-ca-cert-hash', ca_hash, '--control-plane',
           '--certificate-key', key, check=True)
    members = ClusterView(lab.cluster_dir).etcd_members()
    victim = next(m for m in members if m['name'] == 'master-1')
    hex_id = f'{victim["id"]:x}'
    unknown = m0.etcdctl('member', 'remove', hex_id[:-1] + (
        '0' if hex_id[-1] != '0' else '1'))
    assert unknown.returncode == 1
    assert 'member not found' in unknown.stderr
    # etcd takes a removal once every member has been connected for 5 s.
    done = poll(lambda: m0.etcdctl('member', 'remove', hex_id).stdout,
                deadline=20, what='member removed', ceiling=1.0)
    # etcdctl pads the id to 16 columns ("Member %16x removed").
    assert re.search(rf'Member +{hex_id} removed', done)
    assert [m['name'] for m in ClusterView(lab.cluster_dir).etcd_members()
            ] == ['master-0']


def test_reset_keeps_node_and_stops_apiserver(lab):
    m0, w0 = lab('master-0', 10), lab('w-0', 20)
    m0.run('kubeadm', 'init', check=True)
    join = m0.run('kubeadm', 'token', 'create', '--print-join-command',
                  check=True).stdout.split()
    w0.run('kubeadm', *join[1:], check=True)
    m0.run('kubectl', '--kubeconfig', '/etc/kubernetes/admin.conf', 'apply',
           '-f', '-', stdin=testing.CNI_MANIFEST, check=True)
    view = ClusterView(lab.cluster_dir)
    assert view.node_ready('w-0')
    w0.run('kubeadm', 'reset', '-f', check=True)
    assert 'w-0' in view.node_names()
    assert not view.node_ready('w-0')
    assert not os.path.exists(w0.path('/etc/kubernetes/kubelet.conf'))
    # an unconfigured kubelet does not bring the node back
    w0.run('systemctl', 'start', 'kubelet', check=True)
    assert not view.node_ready('w-0')
    m0.run('kubeadm', 'reset', '--force', check=True)
    proc = m0.kubectl('get', 'nodes', check=False)
    assert proc.returncode == 1
    assert 'admin.conf: no such file' in proc.stderr
    assert not ClusterView(lab.cluster_dir).etcd_members()


def _uids(view: ClusterView, kind: str) -> dict[str, str]:
    return {o['metadata']['name']: o['metadata']['uid']
            for o in view.objects(kind)}


def test_init_on_new_vms_keeps_the_new_clusters_objects(lab):
    """A cluster's VMs deleted and new ones (same names, addresses)
    made by the lab's cloud, then ``kubeadm init`` again in the same
    lab: the new cluster holds what its init wrote, in the state and in
    its new etcd, whatever etcd bookkeeping the old one left (here: its
    last write to etcd had failed before etcd held any marker of it, as
    an init whose write timed out leaves it)."""
    m0 = lab('master-0', 10, 'master')
    m0.run('kubeadm', 'init', check=True)
    m0.run('kubectl', '--kubeconfig', '/etc/kubernetes/admin.conf',
           'apply', '-f', '-', stdin=testing.CNI_MANIFEST, check=True)
    view = ClusterView(lab.cluster_dir)
    old = _uids(view, 'Namespace')
    # The cloud deletes the server: its processes, then the cluster is
    # told the host is gone (hosts.destroy), then its disk.
    testing.cleanup([m0])
    set_host_down(lab.cluster_dir, m0.name)
    shutil.rmtree(m0.root)
    with store.exclusive(lab.cluster_dir, mirrored=False) as (state, save):
        state['etcd_mirror'] = {'stale': True}
        save()

    m0 = lab('master-0', 10, 'master')
    m0.run('kubeadm', 'init', check=True)
    new = _uids(view, 'Namespace')
    assert sorted(new) == ['default', 'kube-node-lease', 'kube-public',
                           'kube-system']
    assert not set(new.values()) & set(old.values())
    # No CNI in the new cluster yet; its RBAC lets the admin apply one.
    assert [d['metadata']['name'] for d in view.objects('DaemonSet')] == \
        ['kube-proxy']
    assert 'kubeadm:cluster-admins' in _uids(view, 'ClusterRoleBinding')
    m0.run('kubectl', '--kubeconfig', '/etc/kubernetes/admin.conf',
           'apply', '-f', '-', stdin=testing.CNI_MANIFEST, check=True)
    stored = json.loads(m0.etcdctl('get', '--print-value-only',
                                   '/registry/Namespace/kube-system',
                                   check=True).stdout)
    assert stored['metadata']['uid'] == new['kube-system']


def test_apiserver_answers_health_and_version(lab):
    m0 = lab('master-0', 10)
    m0.run('kubeadm', 'init', check=True)
    with open(m0.path('/etc/kubernetes/pki/ca.crt'), encoding='utf-8') as f:
        ctx = ssl.create_default_context(cadata=f.read())
    url = f'https://{m0.ip}:6443'
    with urllib.request.urlopen(  # noqa: S310
            f'{url}/readyz', context=ctx) as resp:
        assert resp.read() == b'ok'
    with urllib.request.urlopen(  # noqa: S310
            f'{url}/version', context=ctx) as resp:
        assert json.load(resp)['gitVersion'] == 'v1.31.4'
    raw = m0.kubectl('get', '--raw', '/healthz').stdout.strip()
    assert raw == 'ok'


def test_commands_need_their_packages(tmp_path):
    host = testing.make_host(str(tmp_path), str(tmp_path / 'c'), 'bare',
                             '127.0.0.1')
    proc = host.run('kubeadm', 'version', '-o', 'short')
    assert proc.returncode == 127
    host.run('apt-get', 'install', '-y', 'kubeadm=1.30.2-1.1', check=True)
    assert host.run('kubeadm', 'version', '-o', 'short',
                    check=True).stdout.strip() == 'v1.30.2'


HAPROXY_CFG = """\
defaults
    mode tcp
    timeout connect 2s
    timeout client 30s
    timeout server 30s
frontend kube-apiserver
    bind {ip}:16443
    default_backend masters
backend masters
    option tcp-check
{servers}
"""
JOIN_CONFIG = """\
apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken:
    apiServerEndpoint: "{endpoint}"
    token: "{token}"
    caCertHashes: ["{ca_hash}"]
"""


def _haproxy(host, backends) -> None:
    servers = '\n'.join(f'    server {n} {ip}:6443 check inter 200ms'
                        for n, ip in backends)
    path = host.path('/etc/haproxy/haproxy.cfg')
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as f:
        f.write(HAPROXY_CFG.format(ip=host.ip, servers=servers))
    host.run('systemctl', 'restart', 'haproxy', check=True)


@pytest.mark.skipif(shutil.which('haproxy') is None,
                    reason='haproxy not installed')
def test_joins_go_through_a_real_haproxy(lab):
    from kubernetes_mgmt_lab.emulated.config import update_config
    update_config(lab.cluster_dir, join_timeout=3.0)
    m0, w0 = lab('master-0', 10), lab('w-0', 20)
    m0.run('apt-get', 'install', '-y', 'haproxy', check=True)
    _haproxy(m0, [('master-0', m0.ip)])
    cfg = HA_CONFIG.format(ip=m0.ip).replace(f'{m0.ip}:6443',
                                            f'{m0.ip}:16443')
    with open(m0.path('/etc/kubeadm.yaml'), 'w', encoding='utf-8') as f:
        f.write(cfg)
    out = m0.run('kubeadm', 'init', '--config', '/etc/kubeadm.yaml',
                 check=True).stdout
    token = re.search(r'--token (\S+)', out).group(1)
    ca_hash = re.search(r'sha256:\S+', out).group(0)
    os.makedirs(w0.path('/etc'), exist_ok=True)
    with open(w0.path('/etc/join.yaml'), 'w', encoding='utf-8') as f:
        f.write(JOIN_CONFIG.format(endpoint=f'{m0.ip}:16443', token=token,
                                   ca_hash=ca_hash)
                + 'nodeRegistration:\n  name: w-0\n')
    # a proxy whose only backend is down drops the TLS handshake
    _haproxy(m0, [('nowhere', f'{m0.ip[:-2]}99')])
    down = w0.run('kubeadm', 'join', '--config', '/etc/join.yaml')
    assert down.returncode == 1 and 'EOF' in down.stderr
    _haproxy(m0, [('master-0', m0.ip)])
    w0.run('kubeadm', 'join', '--config', '/etc/join.yaml', check=True)
    assert ClusterView(lab.cluster_dir).node_names() == ['master-0', 'w-0']
    server = m0.kubectl('config', 'view', '-o',
                        'jsonpath={.clusters[0].cluster.server}').stdout
    assert server == f'https://{m0.ip}:16443'


def test_config_images_list_names_the_tags_of_kubeadms_version(tmp_path):
    host = testing.make_host(str(tmp_path), str(tmp_path / 'c'), 'bare',
                             '127.0.0.1')
    host.run('apt-get', 'install', '-y', 'kubeadm=1.34.2-1.1', check=True)
    listed = host.run('kubeadm', 'config', 'images', 'list',
                      '--kubernetes-version', 'v1.34.2', '--image-repository',
                      'mirror.example:5000/k8s', check=True).stdout.split()
    assert listed == [
        'mirror.example:5000/k8s/kube-apiserver:v1.34.2',
        'mirror.example:5000/k8s/kube-controller-manager:v1.34.2',
        'mirror.example:5000/k8s/kube-scheduler:v1.34.2',
        'mirror.example:5000/k8s/kube-proxy:v1.34.2',
        'mirror.example:5000/k8s/coredns/coredns:v1.12.1',
        'mirror.example:5000/k8s/pause:3.10.1',
        'mirror.example:5000/k8s/etcd:3.6.4-0']
    # Without a repository: registry.k8s.io; another minor, other tags.
    older = host.run('kubeadm', 'config', 'images', 'list',
                     '--kubernetes-version', 'v1.33.0',
                     check=True).stdout.split()
    assert 'registry.k8s.io/pause:3.10' in older


def _write(host, path: str, text: str) -> None:
    os.makedirs(os.path.dirname(host.path(path)), exist_ok=True)
    with open(host.path(path), 'w', encoding='utf-8') as f:
        f.write(text)


SECRETS_CONFIG = """\
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
bootstrapTokens:
  - token: "{token}"
    ttl: 2h0m0s
    description: "from the file"
certificateKey: "{key}"
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.31.4
"""


def test_join_secrets_from_a_config_file_let_nodes_join(lab):
    """token create / upload-certs read the token and the key from
    --config as kubeadm does; a master and a worker join with them
    (JoinConfiguration), and the argv log shows every command, none with
    a secret."""
    m0, m1, w0 = lab('master-0', 10), lab('master-1', 11), lab('w-0', 20)
    _, ca_hash, _ = _join_parts(_init_ha(m0))
    token, key = 'abcdef.0123456789abcdef', '0a' * 32
    _write(m0, '/run/s/secrets.yaml', SECRETS_CONFIG.format(token=token,
                                                            key=key))
    created = m0.run('kubeadm', 'token', 'create', '--config',
                     '/run/s/secrets.yaml', '--kubeconfig',
                     '/etc/kubernetes/admin.conf', check=True)
    assert created.stdout.strip() == token
    listed = m0.run('kubeadm', 'token', 'list', check=True).stdout
    assert token in listed and 'from the file' in listed
    m0.run('kubeadm', 'init', 'phase', 'upload-certs', '--upload-certs',
           '--skip-certificate-key-print', '--config', '/run/s/secrets.yaml',
           check=True)
    for host, control_plane in ((m1, True), (w0, False)):
        join = JOIN_CONFIG.format(endpoint=f'{m0.ip}:6443', token=token,
                                  ca_hash=ca_hash)
        if control_plane:
            join += (f'controlPlane:\n  localAPIEndpoint:\n    '
                     f'advertiseAddress: {host.ip}\n  certificateKey: '
                     f'"{key}"\n')
        _write(host, '/run/s/join.yaml', join)
        host.run('kubeadm', 'join', '--config', '/run/s/join.yaml',
                 check=True)
    view = ClusterView(lab.cluster_dir)
    assert {'master-1', 'w-0'} <= set(view.node_names())
    tokens_ever, keys_ever = view.join_secrets_ever()
    assert token in tokens_ever and key in keys_ever
    log = view.argv_log()
    assert ['kubeadm', 'token', 'list'] in [e['argv'] for e in log]
    started = [(e['host'], e['argv'][:3]) for e in log]
    assert ('w-0', ['kubeadm', 'join', '--config']) in started
    assert not [e for e in log if token in ' '.join(e['argv'])
                or key in ' '.join(e['argv'])]


def test_token_create_config_cannot_be_mixed_with_token_flags(lab):
    m0 = lab('master-0', 10)
    _init_ha(m0)
    _write(m0, '/run/s/secrets.yaml', SECRETS_CONFIG.format(
        token='abcdef.0123456789abcdef', key='0a' * 32))
    mixed = m0.run('kubeadm', 'token', 'create', '--config',
                   '/run/s/secrets.yaml', '--ttl', '1h')
    assert mixed.returncode == 1
    assert "can not mix '--config' with arguments ['ttl']" in mixed.stderr
    assert 'abcdef.0123456789abcdef' not in [
        t['token'] for t in ClusterView(lab.cluster_dir).tokens()]

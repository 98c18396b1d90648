"""scripts/install_k8s_cluster.sh on lab VMs, every role, over SSH.

One throw-away lab (3 masters, 2 workers) is built into an HA cluster by
the script alone, as the driver runs it: uploaded to
/var/lib/kubernetes-mgmt, configuration on stdin. The tests run in file
order and build on each other. The lab has no internet: a small HTTP
server on the lab bridge serves the apt key and a stand-in CNI manifest.

Golden files (tests/data/golden/install_k8s_cluster/) pin every file the
script renders, with the lab's addresses and secrets replaced by
placeholders; ``UPDATE_GOLDEN=1`` rewrites them.
"""
from __future__ import annotations

import hashlib
import os
import re
import secrets
import socket
import ssl
import threading
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest

try:
    import tomllib
except ModuleNotFoundError:     # Python 3.10
    import tomli as tomllib

from kubernetes_mgmt.cluster.contract import CONTRACT_VERSION
from kubernetes_mgmt.remote.retry import poll
from kubernetes_mgmt.remote.ssh import Endpoint, Login, Sessions
from kubernetes_mgmt_lab.emulated import ClusterView, inject_fault
from kubernetes_mgmt_lab.emulated.kubeadm import ADDON_TAGS
from kubernetes_mgmt_lab.mirror import fingerprint_of, new_release_key

pytestmark = pytest.mark.lab

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / 'scripts' / 'install_k8s_cluster.sh'
GOLDEN = ROOT / 'tests' / 'data' / 'golden' / 'install_k8s_cluster'
REMOTE = '/var/lib/kubernetes-mgmt/install_k8s_cluster.sh'
K8S = '1.37'
POD_CIDR = '10.244.0.0/16'
LB_PORT = 16443
# Nothing listens there: downloads from the lab's server must bypass it.
PROXY = 'http://kmgmt:pr0xy%21pw@proxy.invalid:3128'
# worker-1's sandbox image comes from here (an air-gapped site's mirror).
IMAGE_REPOSITORY = 'mirror.example:5000/k8s'
PAUSE_TAG = ADDON_TAGS[int(K8S.split('.')[1])][1]    # kubeadm's, for 1.37

CALICO = """\
# Stand-in for Calico's calico.yaml: the lab's kubelets count a
# DaemonSet named calico-node as a pod network.
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: calico-node
  namespace: kube-system
spec:
  selector:
    matchLabels: {k8s-app: calico-node}
  template:
    metadata:
      labels: {k8s-app: calico-node}
    spec:
      hostNetwork: true
      tolerations: [{operator: Exists}]
      containers:
        - name: calico-node
          image: docker.io/calico/node:v3.28.0
          env:
            # The default IPv4 pool to create on startup if none exists.
            # - name: CALICO_IPV4POOL_CIDR
            #   value: "192.168.0.0/16"
            - name: CALICO_IPV4POOL_IPIP
              value: "Always"
"""
CALICO_SHA256 = hashlib.sha256(CALICO.encode()).hexdigest()


class _Files(BaseHTTPRequestHandler):
    files: dict[str, bytes] = {}

    def do_GET(self) -> None:
        body = self.files.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header('Content-Length', str(len(body or b'')))
        self.end_headers()
        self.wfile.write(body or b'')

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope='module')
def env():
    from kubernetes_mgmt_lab.testing import throwaway_lab, unavailable_reason
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with throwaway_lab(3, 2) as lab:
        yield from _environment(lab)


def _dearmored(armored: str) -> bytes:
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as home:
        return subprocess.run(['gpg', '--batch', '--homedir', home,
                               '--dearmor'], input=armored.encode(),
                              capture_output=True, check=True).stdout


def _environment(lab):
    armored_key, second_key = new_release_key(), new_release_key()
    key = _dearmored(armored_key)
    handler = type('Files', (_Files,), {'files': {
        f'/k8s/v{K8S}/deb/Release.key': key,
        # A second key, armoured (as pkgs.k8s.io serves its keys).
        '/armored/Release.key': second_key.encode(),
        '/cni/calico.yaml': CALICO.encode(),
        # What a compromised mirror might serve under the pinned name.
        '/cni/tampered.yaml': (CALICO + '      hostPID: true\n').encode()}})
    server = ThreadingHTTPServer((lab.state.gateway, 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state = lab.state
    login = Login(state.username, state.password)
    pool = Sessions(lab.known_hosts())
    hosts = {h.name: h for h in state.hosts}
    e = SimpleNamespace(
        lab=lab, state=state, hosts=hosts, key=key, pool=pool,
        fingerprint=fingerprint_of(armored_key), second_key=second_key,
        masters=[h for h in state.hosts if h.role == 'master'],
        workers=[h for h in state.hosts if h.role == 'worker'],
        www=f'http://{state.gateway}:{server.server_address[1]}',
        token=f'{secrets.token_hex(3)}.{secrets.token_hex(8)}',
        cert_key=secrets.token_hex(32), vrrp_password='Vr-' +
        secrets.token_hex(2), view=ClusterView(state.cluster_dir),
        configs={}, uploaded=set(), ca_hash=None, handler=handler)
    e.session = lambda name: pool.get(Endpoint(hosts[name].ip, login,
                                               label=name))
    try:
        yield e
    finally:
        pool.close()
        server.shutdown()
        server.server_close()


def run(env, host: str, role: str, config: dict | str, check: bool = True):
    """Run ``role`` on ``host`` as the driver does; return the Result."""
    session = env.session(host)
    if host not in env.uploaded:
        session.upload(SCRIPT.read_text(), REMOTE, step='upload', sudo=True,
                       mode=0o755)
        env.uploaded.add(host)
    text = config if isinstance(config, str) else ''.join(
        f'{k}={v}\n' for k, v in config.items() if v is not None)
    result = session.run(['bash', REMOTE, role, '-'], sudo=True, input=text,
                         step=role, check=False, timeout=300)
    if check:
        assert result.exit_status == 0, (
            f'{role} on {host} failed:\n{result.stderr}')
    for secret in (env.token, env.cert_key, env.vrrp_password, PROXY,
                   'proxy.invalid'):
        assert secret not in result.stdout + result.stderr
    return result


def on_all(fn, names):
    with ThreadPoolExecutor(len(names)) as ex:
        return list(ex.map(fn, names))


# ---------------------------------------------------------------- configs

def base(env, name: str) -> dict:
    return {'NODE_NAME': name, 'NODE_IP': env.hosts[name].ip,
            'DEADLINE': 120}


def prepare_config(env, name: str) -> dict:
    config = {**base(env, name), 'K8S_VERSION': K8S,
              'K8S_APT_REPO': f'{env.www}/k8s/v{K8S}/deb/',
              'K8S_APT_KEY_FINGERPRINTS': env.fingerprint,
              'HOSTS': ','.join(f'{h.ip}={h.name}'
                                for h in env.state.hosts)}
    if name == 'worker-1':     # proxies and mirrors on one node
        config.update(
            IMAGE_REPOSITORY=IMAGE_REPOSITORY,
            HTTP_PROXY=PROXY, HTTPS_PROXY=PROXY,
            NO_PROXY=f'{env.state.gateway},localhost,127.0.0.1,'
                     f'{env.state.subnet},.svc,.cluster.local',
            REGISTRY_MIRRORS='docker.io=https://mirror.example:5000,'
                             f'registry.k8s.io={env.www}/registry,'
                             'docker.io=https://mirror2.example')
    return config


def lb_config(env, rank: int) -> dict:
    me = env.masters[rank]
    return {**base(env, me.name), 'LB_PORT': LB_PORT,
            'LB_BACKENDS': ','.join(f'{m.name}={m.ip}'
                                    for m in env.masters),
            'VIP': env.state.vip, 'VIP_PREFIX': 24, 'VRRP_ROUTER_ID': 51,
            'VRRP_PRIORITY': 150 - rank,
            'VRRP_STATE': 'MASTER' if rank == 0 else 'BACKUP',
            'VRRP_PASSWORD': env.vrrp_password,
            'VRRP_PEERS': ','.join(m.ip for m in env.masters if m is not me)}


def init_config(env) -> dict:
    return {**base(env, 'master-0'), 'K8S_VERSION': K8S,
            'CONTROL_PLANE_ENDPOINT': f'{env.state.vip}:{LB_PORT}',
            'POD_CIDR': POD_CIDR, 'SERVICE_CIDR': '10.96.0.0/12',
            'API_CERT_SANS': f'{env.state.vip},k8s.example.com',
            'BOOTSTRAP_TOKEN': env.token, 'CERTIFICATE_KEY': env.cert_key,
            'CNI': 'calico', 'CNI_MANIFEST': f'{env.www}/cni/calico.yaml',
            'CNI_SHA256': CALICO_SHA256}


def join_config(env, name: str, master: bool) -> dict:
    config = {**base(env, name),
              'CONTROL_PLANE_ENDPOINT': f'{env.state.vip}:{LB_PORT}',
              'BOOTSTRAP_TOKEN': env.token, 'CA_CERT_HASH': env.ca_hash}
    if master:
        config['CERTIFICATE_KEY'] = env.cert_key
    return config


def do(env, host: str, role: str, config: dict, check: bool = True):
    """Run and remember the configuration for the second run."""
    env.configs[(host, role)] = config
    return run(env, host, role, config, check)


def ca_hash_of(result) -> str:
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith('CA_CERT_HASH=sha256:')
    return lines[0].split('=', 1)[1]


# Every file the script renders, by the role that renders it.
RENDERED = {
    'prepare': ['/etc/modules-load.d/kubernetes.conf',
                '/etc/sysctl.d/99-kubernetes.conf', '/etc/hosts',
                '/etc/fstab', '/etc/apt/keyrings/kubernetes-apt-keyring.gpg',
                '/etc/apt/sources.list.d/kubernetes.list',
                '/etc/apt/apt.conf.d/95kubernetes-mgmt-proxy',
                '/etc/systemd/system/containerd.service.d/http-proxy.conf',
                '/etc/systemd/system/kubelet.service.d/http-proxy.conf',
                '/etc/containerd/config.toml',
                '/etc/containerd/certs.d/docker.io/hosts.toml',
                '/etc/containerd/certs.d/registry.k8s.io/hosts.toml'],
    'lb': ['/etc/haproxy/haproxy.cfg', '/etc/keepalived/keepalived.conf',
           '/etc/keepalived/check_apiserver_lb.sh'],
    'init': ['/var/lib/kubernetes-mgmt/cni-applied.yaml'],
}
# kubeadm's configurations hold the token and certificate key: they live
# in this private directory while a role runs, and never after
# (tests/unit/test_install_script.py pins their content).
SECRET_DIR = '/run/kubernetes-mgmt-secrets'


def snapshot(env) -> dict:
    """Content and mtime of every rendered file on every host, the
    cluster's event count, and the pids of the real daemons."""
    files = {}
    for name in env.hosts:
        for paths in RENDERED.values():
            for path in [*paths, '/run/haproxy.pid', '/run/keepalived.pid']:
                disk = env.lab.host_path(name, path)
                if os.path.exists(disk):
                    st = os.stat(disk)
                    with open(disk, 'rb') as f:
                        files[(name, path)] = (
                            st.st_mtime_ns, st.st_mode,
                            hashlib.sha256(f.read()).hexdigest())
    return {'files': files, 'events': len(env.view.events())}


def new_events(env, before: dict) -> list:
    return [(e['host'], ' '.join(e['argv']))
            for e in env.view.events()[before['events']:]]


def in_host(env, name: str, *argv: str):
    return env.lab.run_in_host(name, list(argv))


def vip_holders(env) -> list[str]:
    return [m.name for m in env.masters
            if f' {env.state.vip}/' in in_host(
                env, m.name, 'ip', '-br', 'addr', 'show').stdout]


def api_health_via_vip(env) -> bytes:
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    url = f'https://{env.state.vip}:{LB_PORT}/healthz'
    with urllib.request.urlopen(url, context=ctx, timeout=10) as resp:
        return resp.read()


# ------------------------------------------------------------------ roles

def sandbox_image(name: str) -> str:
    repo = IMAGE_REPOSITORY if name == 'worker-1' else 'registry.k8s.io'
    return f'{repo}/pause:{PAUSE_TAG}'


def test_prepare_every_node(env):
    # worker-0 already has containerd 2.x (config version 3 layout).
    in_host(env, 'worker-0', 'apt-get', 'install', '-y', 'containerd=2.1.4-1')
    results = on_all(lambda n: do(env, n, 'prepare', prepare_config(env, n)),
                     list(env.hosts))
    for name, result in zip(env.hosts, results, strict=True):
        # The image containerd uses, then the node's facts as the status
        # role reports them: prepared, nothing of kubeadm yet.
        assert result.stdout == (
            f'SANDBOX_IMAGE={sandbox_image(name)}\n'
            f'CONTRACT_VERSION={CONTRACT_VERSION}\n'
            f'DONE_PREPARE={CONTRACT_VERSION}\nKUBEADM_FILES=\n'
            'API_READY=0\n')
        assert '[prepare] packages' in result.stderr
    for name in env.hosts:
        versions = in_host(env, name, 'dpkg-query', '-W', '-f',
                           '${Package}=${Version}\\n', 'kubeadm', 'kubelet',
                           'kubectl', 'containerd').stdout.split()
        assert [v.split('=')[0] for v in versions] == [
            'kubeadm', 'kubelet', 'kubectl', 'containerd']
        assert all(v.split('=')[1].startswith(f'{K8S}.')
                   for v in versions[:3])
        held = in_host(env, name, 'apt-mark', 'showhold').stdout.split()
        assert held == ['kubeadm', 'kubectl', 'kubelet']
        with open(env.lab.host_path(
                name, '/etc/apt/keyrings/kubernetes-apt-keyring.gpg'),
                'rb') as f:
            assert f.read() == env.key     # binary key stored as it is
        assert_sandbox_image(env, name)
    modes = {'/etc/apt/apt.conf.d/95kubernetes-mgmt-proxy': 0o600,
             '/etc/systemd/system/containerd.service.d/http-proxy.conf':
             0o640}
    for path, mode in modes.items():
        st = os.stat(env.lab.host_path('worker-1', path))
        assert st.st_mode & 0o777 == mode and st.st_uid == 0
        assert not os.path.exists(env.lab.host_path('worker-0', path))


def assert_sandbox_image(env, name: str) -> None:
    """containerd's configuration names the pause image kubeadm wants,
    from the node's image repository, in the layout it has."""
    with open(env.lab.host_path(name, '/etc/containerd/config.toml'),
              'rb') as f:
        config = tomllib.load(f)
    plugins = config['plugins']
    if config['version'] == 3:
        sandbox = plugins['io.containerd.cri.v1.images']['pinned_images'][
            'sandbox']
    else:
        sandbox = plugins['io.containerd.grpc.v1.cri']['sandbox_image']
    assert (name, config['version'], sandbox) == (
        name, 3 if name == 'worker-0' else 2, sandbox_image(name))


def test_lb_on_every_master_before_init(env):
    for rank, master in enumerate(env.masters):
        do(env, master.name, 'lb', lb_config(env, rank))
    for master in env.masters:
        checked = in_host(env, master.name, 'haproxy', '-c', '-f',
                          '/etc/haproxy/haproxy.cfg')
        assert checked.returncode == 0, checked.stdout + checked.stderr
        checked = in_host(env, master.name, 'keepalived', '-t', '-f',
                          '/etc/keepalived/keepalived.conf')
        assert checked.returncode == 0, checked.stderr
        conf = os.stat(env.lab.host_path(master.name,
                                         '/etc/keepalived/keepalived.conf'))
        assert conf.st_mode & 0o777 == 0o600

    assert poll(lambda: vip_holders(env) == ['master-0'] and ['master-0'],
                deadline=20, what='VIP on master-0') == ['master-0']
    with socket.create_connection((env.state.vip, LB_PORT), timeout=5):
        pass    # HAProxy answers on the VIP before any API server runs


def test_init_first_master(env):
    result = do(env, 'master-0', 'init', init_config(env))
    env.ca_hash = ca_hash_of(result)
    assert env.ca_hash == env.view.info()['ca_hash']
    assert env.view.info()['control_plane_endpoint'] == \
        f'{env.state.vip}:{LB_PORT}'
    assert '<value withheld>' in result.stderr
    calico = [d for d in env.view.objects('DaemonSet', 'kube-system')
              if d['metadata']['name'] == 'calico-node']
    container = calico[0]['spec']['template']['spec']['containers'][0]
    assert {'name': 'CALICO_IPV4POOL_CIDR', 'value': POD_CIDR} in \
        container['env']
    assert [t['token'] for t in env.view.tokens()] == [env.token]


def test_cni_manifest_with_another_content_is_refused(env):
    config = {**env.configs[('master-0', 'init')],
              'CNI_MANIFEST': f'{env.www}/cni/tampered.yaml'}
    served = hashlib.sha256(env.handler.files['/cni/tampered.yaml'])
    before = snapshot(env)
    result = run(env, 'master-0', 'init', config, check=False)
    assert result.exit_status == 1
    assert result.stderr.strip().splitlines()[-1] == (
        'ERROR [init/pod network]: the CNI manifest '
        f'{env.www}/cni/tampered.yaml has SHA-256 {served.hexdigest()}, '
        f'expected {CALICO_SHA256} (CNI_SHA256): not applied')
    assert snapshot(env) == before      # nothing applied, nothing written
    daemonsets = env.view.objects('DaemonSet', 'kube-system')
    assert [d['spec']['template']['spec'].get('hostPID')
            for d in daemonsets if d['metadata']['name'] == 'calico-node'
            ] == [None]


def test_join_masters_one_at_a_time(env):
    for master in env.masters[1:]:
        do(env, master.name, 'join-master',
           join_config(env, master.name, True))
        assert env.view.node_ready(master.name)
    # etcd lists its members by id, not in the order they joined.
    assert sorted(m['name'] for m in env.view.etcd_members()) == sorted(
        m.name for m in env.masters)


def test_join_worker(env):
    do(env, 'worker-0', 'join-worker', join_config(env, 'worker-0', False))


def test_failed_join_names_role_and_step_and_can_be_rerun(env):
    inject_fault(env.state.cluster_dir, 'worker-1', 'kubeadm join', 'boom')
    config = join_config(env, 'worker-1', False)
    result = do(env, 'worker-1', 'join-worker', config, check=False)
    assert result.exit_status != 0
    assert 'boom' in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        'ERROR [join-worker/kubeadm join]: command failed (exit 1): '
        'kubeadm join --config "$SECRET_DIR/join.yaml"')
    assert 'worker-1' not in env.view.node_names()
    # The failed role left no file with the token behind.
    for path in (SECRET_DIR, '/etc/kubernetes/bootstrap-kubelet.conf'):
        assert not os.path.exists(env.lab.host_path('worker-1', path))
    do(env, 'worker-1', 'join-worker', config)
    assert env.view.node_ready('worker-1')


def test_every_node_ready_with_its_role(env):
    roles = {}
    for node in env.view.nodes():
        labels = node['metadata']['labels']
        roles[node['metadata']['name']] = \
            'node-role.kubernetes.io/control-plane' in labels
    assert roles == {h.name: h.role == 'master' for h in env.state.hosts}
    assert all(env.view.node_ready(n) for n in roles)
    internal = {n['metadata']['name']: [
        a['address'] for a in n['status']['addresses']
        if a['type'] == 'InternalIP'] for n in env.view.nodes()}
    assert internal == {h.name: [h.ip] for h in env.state.hosts}
    assert api_health_via_vip(env) == b'ok'     # through HAProxy


def test_second_run_of_every_role_changes_nothing(env):
    before = snapshot(env)
    order = [('prepare', [h.name for h in env.state.hosts]),
             ('lb', [m.name for m in env.masters]), ('init', ['master-0']),
             ('join-master', ['master-1', 'master-2']),
             ('join-worker', ['worker-0', 'worker-1'])]
    for role, names in order:
        results = on_all(lambda n, r=role: run(env, n, r,
                                               env.configs[(n, r)]), names)
        if role == 'init':
            assert ca_hash_of(results[0]) == env.ca_hash
    assert new_events(env, before) == []    # no install, init, join, restart
    assert snapshot(env) == {**before, 'events': before['events']}
    with open(env.lab.host_path('worker-0', '/etc/hosts')) as f:
        hosts = f.read()
    assert hosts.count('# BEGIN kubernetes-mgmt nodes') == 1


def test_refresh_join_before_adding_a_node(env):
    token = f'{secrets.token_hex(3)}.{secrets.token_hex(8)}'
    config = {**base(env, 'master-0'), 'BOOTSTRAP_TOKEN': token,
              'CERTIFICATE_KEY': env.cert_key}
    before = snapshot(env)
    result = run(env, 'master-0', 'refresh-join', config)
    assert token not in result.stderr
    assert ca_hash_of(result) == env.ca_hash
    assert token in [t['token'] for t in env.view.tokens()]
    # Token and key from a configuration file, never on the command line.
    assert [c for _, c in new_events(env, before)] == [
        f'kubeadm token create --config {SECRET_DIR}/join-secrets.yaml '
        '--kubeconfig /etc/kubernetes/admin.conf',
        'kubeadm init phase upload-certs --upload-certs '
        f'--skip-certificate-key-print --config {SECRET_DIR}/'
        'join-secrets.yaml --kubeconfig /etc/kubernetes/admin.conf']
    assert not os.path.exists(env.lab.host_path('master-0', SECRET_DIR))
    again = snapshot(env)
    run(env, 'master-0', 'refresh-join', config)
    assert [c.split()[:4] for _, c in new_events(env, again)] == [
        ['kubeadm', 'init', 'phase', 'upload-certs']]     # token exists


BAD = {
    'injection': ('worker-0', 'prepare', {'NODE_NAME': '$(touch {mark})'},
                  'invalid NODE_NAME'),
    'injection-in-list': ('worker-0', 'prepare',
                          {'HOSTS': '10.0.0.1=a;touch {mark}'},
                          'invalid HOSTS'),
    'unknown-key': ('worker-0', 'join-worker', {'EXTRA_ARGS': '--force'},
                    'unknown key EXTRA_ARGS'),
    'bad-token': ('worker-0', 'join-worker',
                  {'BOOTSTRAP_TOKEN': 'abcdef.0123456789abcdeF'},
                  'invalid BOOTSTRAP_TOKEN'),
    'lb-port-6443': ('master-1', 'lb', {'LB_PORT': 6443},
                     'invalid LB_PORT: expected a port other than 6443'),
}


@pytest.mark.parametrize('case', sorted(BAD))
def test_bad_config_fails_and_changes_nothing(env, case):
    host, role, changes, message = BAD[case]
    mark = f'/tmp/kmgmt-injected-{secrets.token_hex(4)}'
    changes = {k: str(v).replace('{mark}', mark) for k, v in changes.items()}
    config = {**env.configs[(host, role)], **changes}
    before = snapshot(env)
    result = run(env, host, role, config, check=False)
    assert result.exit_status == 1
    assert result.stdout == ''
    assert result.stderr.strip().splitlines() == [
        result.stderr.strip().splitlines()[0]]
    assert result.stderr.startswith(f'ERROR [{role}/config]: ')
    assert message in result.stderr
    for value in changes.values():
        assert value.isdigit() or value not in result.stderr
    assert not os.path.exists(mark)
    assert snapshot(env) == before


# ------------------------------------------------------------------ golden

GOLDEN_FILES = {
    'cni-applied.yaml': ('master-0',
                         '/var/lib/kubernetes-mgmt/cni-applied.yaml'),
    'haproxy.cfg': ('master-0', '/etc/haproxy/haproxy.cfg'),
    'keepalived-master.conf': ('master-0',
                               '/etc/keepalived/keepalived.conf'),
    'keepalived-backup.conf': ('master-2',
                               '/etc/keepalived/keepalived.conf'),
    'check_apiserver_lb.sh': ('master-0',
                              '/etc/keepalived/check_apiserver_lb.sh'),
    'modules-load-kubernetes.conf': ('worker-1',
                                     '/etc/modules-load.d/kubernetes.conf'),
    'sysctl-99-kubernetes.conf': ('worker-1',
                                  '/etc/sysctl.d/99-kubernetes.conf'),
    'kubernetes.list': ('worker-1',
                        '/etc/apt/sources.list.d/kubernetes.list'),
    'apt-95kubernetes-mgmt-proxy': (
        'worker-1', '/etc/apt/apt.conf.d/95kubernetes-mgmt-proxy'),
    'containerd-http-proxy.conf': (
        'worker-1', '/etc/systemd/system/containerd.service.d/'
                    'http-proxy.conf'),
    'kubelet-http-proxy.conf': (
        'worker-1', '/etc/systemd/system/kubelet.service.d/http-proxy.conf'),
    'containerd-config.toml': ('worker-1', '/etc/containerd/config.toml'),
    'containerd-config-v3.toml': ('worker-0', '/etc/containerd/config.toml'),
    'hosts.toml-docker.io': ('worker-1',
                             '/etc/containerd/certs.d/docker.io/hosts.toml'),
    'hosts.toml-registry.k8s.io': (
        'worker-1', '/etc/containerd/certs.d/registry.k8s.io/hosts.toml'),
    'etc-hosts-block': ('worker-1', '/etc/hosts'),
    'done-join-worker': ('worker-0',
                         '/var/lib/kubernetes-mgmt/done/join-worker'),
    'done-kubeadm-init': ('master-0',
                          '/var/lib/kubernetes-mgmt/done/kubeadm-init'),
}


def generalize(env, text: str) -> str:
    """The lab's variable values -> placeholders."""
    kube_version = in_host(env, 'master-0', 'kubeadm', 'version', '-o',
                           'short').stdout.strip()
    for value, name in [(env.www, '{WWW}'), (env.token, '{TOKEN}'),
                        (env.cert_key, '{CERTIFICATE_KEY}'),
                        (env.ca_hash, '{CA_CERT_HASH}'),
                        (env.vrrp_password, '{VRRP_PASSWORD}'),
                        (kube_version, '{KUBE_VERSION}'),
                        (env.state.subnet, '{SUBNET}')]:
        text = text.replace(value, name)
    ips = {h.ip: '{' + h.name.upper().replace('-', '') + '_IP}'
           for h in env.state.hosts}
    ips.update({env.state.vip: '{VIP}', env.state.gateway: '{GATEWAY}'})
    for ip, name in ips.items():
        text = re.sub(rf'(?<![\d.]){re.escape(ip)}(?![\d])', name, text)
    return text


def _hosts_block(text: str) -> str:
    start = text.index('# BEGIN kubernetes-mgmt nodes')
    end = text.index('# END kubernetes-mgmt nodes')
    return text[start:end] + '# END kubernetes-mgmt nodes\n'


@pytest.mark.parametrize('name', sorted(GOLDEN_FILES))
def test_rendered_file_matches_golden(env, name):
    host, path = GOLDEN_FILES[name]
    with open(env.lab.host_path(host, path), encoding='utf-8') as f:
        text = f.read()
    if name == 'etc-hosts-block':
        text = _hosts_block(text)
    text = generalize(env, text)
    golden = GOLDEN / name
    if os.environ.get('UPDATE_GOLDEN') == '1':
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding='utf-8')
    assert golden.exists(), f'{golden} missing: run with UPDATE_GOLDEN=1'
    assert text == golden.read_text(encoding='utf-8')


# ----------------------------------------------- changes of configuration

def test_proxies_and_mirrors_removed_when_no_longer_given(env):
    config = {k: v for k, v in env.configs[('worker-1', 'prepare')].items()
              if k not in ('HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY',
                           'REGISTRY_MIRRORS')}
    before = snapshot(env)
    run(env, 'worker-1', 'prepare', config)
    for path in ('/etc/apt/apt.conf.d/95kubernetes-mgmt-proxy',
                 '/etc/systemd/system/containerd.service.d/http-proxy.conf',
                 '/etc/systemd/system/kubelet.service.d/http-proxy.conf',
                 '/etc/containerd/certs.d/docker.io'):
        assert not os.path.exists(env.lab.host_path('worker-1', path))
    commands = [c for _, c in new_events(env, before)]
    assert 'systemctl daemon-reload' in commands
    assert 'systemctl restart containerd' in commands
    assert 'systemctl try-restart kubelet' in commands
    assert not [c for c in commands if 'install' in c.split()]


def test_armored_key_is_dearmored(env):
    config = {**env.configs[('worker-0', 'prepare')],
              'K8S_APT_KEY_URL': f'{env.www}/armored/Release.key',
              'K8S_APT_KEY_FINGERPRINTS': fingerprint_of(env.second_key)}
    before = snapshot(env)
    run(env, 'worker-0', 'prepare', config)
    with open(env.lab.host_path(
            'worker-0', '/etc/apt/keyrings/kubernetes-apt-keyring.gpg'),
            'rb') as f:
        assert f.read() == _dearmored(env.second_key)
    commands = [c for _, c in new_events(env, before)]
    assert [c.split()[-1] for c in commands] == ['update']


def test_vip_moves_when_haproxy_stops_on_its_holder(env):
    """The track script (a TCP connect to HAProxy) takes the VIP away
    from a master whose HAProxy is down; it comes back when HAProxy
    does (master-0 has the highest priority)."""
    session = env.session('master-0')
    session.run(['systemctl', 'stop', 'haproxy'], step='stop', sudo=True)
    try:
        poll(lambda: vip_holders(env) == ['master-1'], deadline=30,
             what='VIP on master-1')
        assert api_health_via_vip(env) == b'ok'
    finally:
        session.run(['systemctl', 'start', 'haproxy'], step='start',
                    sudo=True)
    poll(lambda: vip_holders(env) == ['master-0'], deadline=20,
         what='VIP back on master-0')

"""A master's etcd: the real ``etcd`` of Debian's etcd-server, run the
way kubeadm's static pod runs it (same flags, certificates under
/etc/kubernetes/pki/etcd, data in /var/lib/etcd), inside the lab VM.

kubeadm writes the pod's manifest (``write_manifest``) and the lab's
kubelet runs the command the manifest holds (``start``): a restored data
directory or a manifest moved away and back behave as on a real master.
The shared cluster state records where each running member answers
(``hosts.<host>.etcd``), for the lab's own calls (``etcd_gateway``).
"""
from __future__ import annotations

import os
import signal
import subprocess

from kubernetes_mgmt.remote.retry import wait_until
from kubernetes_mgmt_lab.emulated import store, yamlio
from kubernetes_mgmt_lab.emulated.host import host_path

BINARY = '/usr/bin/etcd'
MANIFEST = '/etc/kubernetes/manifests/etcd.yaml'
PIDFILE = '/run/klab/etcd.pid'
LOG = '/var/log/klab/etcd.log'
DATA_DIR = '/var/lib/etcd'
PKI = '/etc/kubernetes/pki/etcd'
IMAGE = 'registry.k8s.io/etcd:3.5.15-0'
START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0


class EtcdStartError(Exception):
    """etcd exited or did not become healthy; the message says why."""


def client_url(ip: str) -> str:
    return f'https://{ip}:2379'


def peer_url(ip: str) -> str:
    return f'https://{ip}:2380'


def _simulated() -> bool:
    # Unit tests' hosts share the machine's network: 127.0.0.1 is not
    # theirs to listen on.
    return bool(os.environ.get('KLAB_HOST_ROOT'))


def command(name: str, ip: str, initial: dict[str, str],
            existing: bool) -> list[str]:
    """kubeadm's etcd command; ``initial``: member name -> peer URL."""
    clients = [client_url(ip)]
    if not _simulated():
        clients.insert(0, 'https://127.0.0.1:2379')
    argv = [
        'etcd', f'--name={name}', f'--data-dir={DATA_DIR}',
        f'--advertise-client-urls={client_url(ip)}',
        f'--listen-client-urls={",".join(clients)}',
        f'--initial-advertise-peer-urls={peer_url(ip)}',
        f'--listen-peer-urls={peer_url(ip)}',
        '--initial-cluster=' + ','.join(f'{n}={u}'
                                        for n, u in initial.items()),
        f'--cert-file={PKI}/server.crt', f'--key-file={PKI}/server.key',
        f'--trusted-ca-file={PKI}/ca.crt', '--client-cert-auth=true',
        f'--peer-cert-file={PKI}/peer.crt',
        f'--peer-key-file={PKI}/peer.key',
        f'--peer-trusted-ca-file={PKI}/ca.crt',
        '--peer-client-cert-auth=true', '--snapshot-count=10000',
        # The lab keeps the cluster's objects in etcd in one transaction
        # per API write (``etcd_mirror``), all of them after a gap.
        '--max-txn-ops=100000', '--max-request-bytes=33554432',
        '--logger=zap', '--log-outputs=stderr']
    if existing:
        argv.append('--initial-cluster-state=existing')
    return argv


def write_manifest(argv: list[str]) -> None:
    pod = {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {
        'name': 'etcd', 'namespace': 'kube-system',
        'labels': {'component': 'etcd', 'tier': 'control-plane'}},
        'spec': {'hostNetwork': True, 'containers': [{
            'name': 'etcd', 'image': IMAGE, 'command': argv,
            'volumeMounts': [{'name': 'etcd-data', 'mountPath': DATA_DIR},
                             {'name': 'etcd-certs', 'mountPath': PKI}]}],
            'volumes': [
                {'name': 'etcd-data', 'hostPath': {
                    'path': DATA_DIR, 'type': 'DirectoryOrCreate'}},
                {'name': 'etcd-certs', 'hostPath': {
                    'path': PKI, 'type': 'DirectoryOrCreate'}}]}}
    path = host_path(MANIFEST)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w', encoding='utf-8') as f:
        f.write(yamlio.dump(pod, sort_keys=False))


def manifest_command() -> list[str] | None:
    """The command of the etcd manifest, None when there is none."""
    try:
        with open(host_path(MANIFEST), encoding='utf-8') as f:
            pod = yamlio.load(f.read())
        return list(pod['spec']['containers'][0]['command'])
    except (OSError, KeyError, IndexError, TypeError):
        return None


def _flag(argv: list[str], name: str) -> str:
    prefix = f'--{name}='
    return next((a[len(prefix):] for a in argv if a.startswith(prefix)), '')


def _alive(pid: int) -> bool:
    try:
        with open(f'/proc/{pid}/stat', encoding='utf-8') as f:
            head, tail = f.read().rsplit(')', 1)
    except OSError:
        return False
    return head.endswith('(etcd') and tail.split()[0] not in ('Z', 'X')


def pid() -> int | None:
    """The pid of this host's running etcd."""
    try:
        with open(host_path(PIDFILE), encoding='utf-8') as f:
            found = int(f.read().strip())
    except (OSError, ValueError):
        return None
    return found if _alive(found) else None


def alive(pid_: int) -> bool:
    return _alive(pid_)


def running() -> bool:
    return pid() is not None


def _record(cluster_dir: str, host: str, value: dict | None) -> None:
    # Where a member answers is no object: nothing to write to etcd.
    with store.exclusive(cluster_dir, mirrored=False) as (state, save):
        rec = state.setdefault('hosts', {}).setdefault(host, {})
        if value is None:
            rec.pop('etcd', None)
        else:
            rec['etcd'] = value
        save()


def start(cluster_dir: str, host: str, wait_healthy: bool = True) -> int:
    """Run the manifest's etcd (unless it runs); wait until it is healthy
    (a learner only until it listens). Returns its pid."""
    current = pid()
    if current is not None:
        return current
    argv = manifest_command()
    if not argv:
        raise EtcdStartError(f'{MANIFEST}: no etcd command')
    data = host_path(_flag(argv, 'data-dir') or DATA_DIR)
    os.makedirs(data, mode=0o700, exist_ok=True)
    os.chmod(data, 0o700)       # etcd refuses a group-readable data dir
    for path in (PIDFILE, LOG):
        os.makedirs(os.path.dirname(host_path(path)), exist_ok=True)
    host_argv = [BINARY, *[host_path(a) if a.startswith('/') else a
                           for a in _host_paths(argv[1:])]]
    with open(host_path(LOG), 'ab') as out:
        proc = subprocess.Popen(host_argv, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT,
                                close_fds=True, start_new_session=True)
    tmp = host_path(PIDFILE) + '.tmp'
    with open(tmp, 'w', encoding='utf-8') as f:
        f.write(str(proc.pid))
    os.replace(tmp, host_path(PIDFILE))
    url = _flag(argv, 'advertise-client-urls')
    _wait_started(proc, cluster_dir, url, wait_healthy)
    _record(cluster_dir, host, {'url': url, 'pid': proc.pid,
                                'name': _flag(argv, 'name')})
    return proc.pid


def _host_paths(args: list[str]) -> list[str]:
    """``--flag=/path`` with the path as this host sees it."""
    out = []
    for arg in args:
        name, eq, value = arg.partition('=')
        out.append(f'{name}={host_path(value)}' if eq and
                   value.startswith('/') else arg)
    return out


def _wait_started(proc: subprocess.Popen, cluster_dir: str, url: str,
                  wait_healthy: bool) -> None:
    from kubernetes_mgmt_lab.emulated import etcd_gateway
    gateway = etcd_gateway.Gateway(cluster_dir, [url], timeout=2.0)

    def up() -> bool:
        if proc.poll() is not None:
            raise EtcdStartError(f'etcd exited ({proc.returncode}): '
                                 f'{_tail()}')
        if wait_healthy:
            return gateway.healthy()
        return _listening(url)

    try:
        if not wait_until(up, deadline=START_TIMEOUT, first=0.05,
                          ceiling=0.5):
            raise EtcdStartError(f'etcd at {url} not healthy after '
                                 f'{START_TIMEOUT:g} s: {_tail()}')
    finally:
        gateway.close()


def _listening(url: str) -> bool:
    import socket
    from urllib.parse import urlsplit
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname, parts.port),
                                      timeout=0.5):
            return True
    except OSError:
        return False


def _tail(chars: int = 800) -> str:
    try:
        with open(host_path(LOG), encoding='utf-8', errors='replace') as f:
            return f.read()[-chars:]
    except OSError:
        return '(no log)'


def stop(cluster_dir: str, host: str) -> None:
    """Stop this host's etcd (SIGTERM, SIGKILL after a while)."""
    current = pid()
    if current is not None:
        os.kill(current, signal.SIGTERM)
        if not wait_until(lambda: not _alive(current),
                          deadline=STOP_TIMEOUT, first=0.05, ceiling=0.2):
            os.kill(current, signal.SIGKILL)
            wait_until(lambda: not _alive(current), deadline=5.0,
                       ceiling=0.1)
    try:
        os.unlink(host_path(PIDFILE))
    except FileNotFoundError:
        pass
    _record(cluster_dir, host, None)


def issue_lab_client(shared_pki: str) -> None:
    """The client certificate the lab's own etcd calls use
    (``etcd_gateway``), signed by the cluster's etcd CA."""
    from kubernetes_mgmt_lab import pki
    from kubernetes_mgmt_lab.emulated.etcd_gateway import CLIENT_CERT
    cert, key = pki.issue(pki.read(os.path.join(shared_pki, 'etcd',
                                                'ca.crt')),
                          pki.read(os.path.join(shared_pki, 'etcd',
                                                'ca.key')),
                          'kube-apiserver-etcd-client')
    pki.write(os.path.join(shared_pki, f'{CLIENT_CERT}.crt'), cert)
    pki.write(os.path.join(shared_pki, f'{CLIENT_CERT}.key'), key,
              private=True)

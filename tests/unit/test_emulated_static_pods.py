"""The lab's kubelet keeps a master's static pods as the real one does
for the driver's certificate renewal (kubernetes_mgmt.cluster
.static_pods): a control-plane container per manifest (crictl ps -o
json), none while a manifest is away, a new one when it is back, and the
kube-apiserver restarted then on the renewed certificate."""
from __future__ import annotations

import json
import os
import socket
import ssl

import pytest

from kubernetes_mgmt_lab import pki
from kubernetes_mgmt_lab.emulated import testing
from kubernetes_mgmt_lab.emulated.config import set_clock_offset

MANIFESTS = '/etc/kubernetes/manifests'
HELD = '/etc/kubernetes/tmp/held'
CRICTL = ('crictl', '--runtime-endpoint',
          'unix:///var/run/containerd/containerd.sock', 'ps', '--state',
          'running', '--name',
          '^(etcd|kube-apiserver|kube-controller-manager|kube-scheduler)$',
          '-o', 'json')


@pytest.fixture
def master(tmp_path):
    cluster_dir = str(tmp_path / 'cluster')
    host = testing.make_host(str(tmp_path), cluster_dir, 'master-0',
                             f'{testing.random_loopback_base()}10',
                             'master')
    host.install_base()
    host.run('kubeadm', 'init', check=True)
    host.cluster_dir = cluster_dir
    yield host
    testing.cleanup([host])


def _running(host) -> dict[str, str]:
    out = json.loads(host.run(*CRICTL, check=True).stdout)
    return {c['id']: c['metadata']['name'] for c in out['containers']}


def _served_not_after(host):
    pem = ssl.get_server_certificate((host.ip, 6443)).encode()
    return pki.not_after(pem)


def _move(host, component: str, source: str, target: str) -> None:
    os.makedirs(host.path(target), exist_ok=True)
    os.rename(host.path(f'{source}/{component}.yaml'),
              host.path(f'{target}/{component}.yaml'))


def test_a_manifest_set_aside_and_back_restarts_its_pod_on_new_certs(
        master):
    before = _running(master)
    assert sorted(before.values()) == ['etcd', 'kube-apiserver',
                                       'kube-controller-manager',
                                       'kube-scheduler']
    served = _served_not_after(master)

    _move(master, 'kube-apiserver', MANIFESTS, HELD)
    assert 'kube-apiserver' not in _running(master).values()
    assert master.kubectl('get', '--raw', '/readyz',
                          check=False).returncode != 0

    set_clock_offset(master.cluster_dir, days=345)
    master.run('kubeadm', 'certs', 'renew', 'all', check=True)
    _move(master, 'kube-apiserver', HELD, MANIFESTS)
    after = _running(master)
    apiserver = [cid for cid, name in after.items()
                 if name == 'kube-apiserver']
    assert apiserver and apiserver[0] not in before
    # Untouched manifests keep their containers.
    assert {cid for cid, n in after.items() if n == 'etcd'} == \
        {cid for cid, n in before.items() if n == 'etcd'}
    # The API server serves again, on the certificate renewed by the
    # lab clock, and the renewed admin.conf is accepted.
    assert master.kubectl('get', '--raw', '/readyz').stdout.strip() == 'ok'
    renewed = _served_not_after(master)
    assert (renewed - served).days >= 344


def _etcd_served_not_after(host):
    """The certificate the real etcd presents to a new client now."""
    from kubernetes_mgmt_lab.emulated.etcd_gateway import tls_context
    context = tls_context(host.cluster_dir)
    context.check_hostname = False
    with socket.create_connection((host.ip, 2379), timeout=5) as raw, \
            context.wrap_socket(raw) as tls:
        return pki.not_after(ssl.DER_cert_to_PEM_cert(
            tls.getpeercert(binary_form=True)).encode())


def _etcd_pid(host) -> int | None:
    try:
        with open(host.path('/run/klab/etcd.pid'), encoding='utf-8') as f:
            pid = int(f.read())
    except (OSError, ValueError):
        return None
    return pid if os.path.exists(f'/proc/{pid}') else None


def test_etcd_follows_its_manifest_and_serves_renewed_certificates(master):
    """etcd is a real process: its manifest set aside stops it (crictl
    lists no etcd, its port is closed), put back starts it again on the
    same data; a renewal reaches a new client connection without a
    restart, as the real etcd reloads its certificate files."""
    served = _etcd_served_not_after(master)
    pid = _etcd_pid(master)
    assert pid is not None

    _move(master, 'etcd', MANIFESTS, HELD)
    assert 'etcd' not in _running(master).values()
    assert _etcd_pid(master) is None
    with pytest.raises(OSError):
        socket.create_connection((master.ip, 2379), timeout=2).close()

    _move(master, 'etcd', HELD, MANIFESTS)
    assert 'etcd' in _running(master).values()
    restarted = _etcd_pid(master)
    assert restarted not in (None, pid)
    master.etcdctl('endpoint', 'health', check=True)
    # The cluster's objects are still there (same data directory).
    assert master.etcdctl('get', '--prefix', '--keys-only',
                          '/registry/Namespace/', check=True).stdout

    set_clock_offset(master.cluster_dir, days=345)
    master.run('kubeadm', 'certs', 'renew', 'all', check=True)
    renewed = _etcd_served_not_after(master)
    assert (renewed - served).days >= 344
    assert _etcd_pid(master) == restarted
    master.etcdctl('endpoint', 'health', check=True)

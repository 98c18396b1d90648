"""Helpers for tests: emulated lab hosts without namespaces.

Each ``SimHost`` has a directory standing in for its private file
system (``KLAB_HOST_ROOT``) and a ``host.json`` (``KLAB_HOST_FILE``);
``run`` executes a stand-in command as a subprocess the way the wrapper
would.  ``cleanup`` stops every process the hosts started.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from dataclasses import dataclass

from kubernetes_mgmt_lab.emulated import (
    COMMANDS,
    PACKAGE,
    apiserver,
    daemons,
    etcd_server,
)
from kubernetes_mgmt_lab.mirror import CALICO_MANIFEST

BASE_PACKAGES = ('containerd', 'kubelet', 'kubeadm', 'kubectl',
                 'etcd-client')


@dataclass
class SimHost:
    name: str
    ip: str
    root: str
    host_file: str
    cluster_dir: str

    def path(self, path: str) -> str:
        """Where the host's ``path`` lives on the test machine."""
        return os.path.join(self.root, path.lstrip('/'))

    def env(self, **extra: str) -> dict:
        env = dict(os.environ)
        for key in ('KUBECONFIG', 'KLAB_ARGV0'):
            env.pop(key, None)
        env.update(KLAB_HOST_ROOT=self.root, KLAB_HOST_FILE=self.host_file,
                   HOME='/home/ubuntu')
        env.update(extra)
        return env

    def run(self, command: str, *args: str, stdin: str | None = None,
            env: dict | None = None, timeout: float = 120,
            check: bool = False) -> subprocess.CompletedProcess:
        module = f'{PACKAGE}.{COMMANDS[command]}'
        proc = subprocess.run(
            [sys.executable, '-m', module, *args], input=stdin or '',
            capture_output=True, text=True, timeout=timeout,
            env=env or self.env(), check=False)
        if check and proc.returncode != 0:
            raise AssertionError(
                f'{command} {" ".join(args)} -> {proc.returncode}\n'
                f'stdout: {proc.stdout}\nstderr: {proc.stderr}')
        return proc

    def etcdctl(self, *args: str, check: bool = False
                ) -> subprocess.CompletedProcess:
        """The real etcdctl against this host's etcd, with its
        certificates (what ``kubectl exec etcd-<node>`` runs)."""
        pki = self.path('/etc/kubernetes/pki/etcd')
        argv = ['etcdctl', '--endpoints', f'https://{self.ip}:2379',
                '--cacert', f'{pki}/ca.crt', '--cert', f'{pki}/server.crt',
                '--key', f'{pki}/server.key', *args]
        proc = subprocess.run(argv, capture_output=True, text=True,
                              timeout=60, check=False,
                              env=dict(os.environ, ETCDCTL_API='3'))
        if check and proc.returncode != 0:
            raise AssertionError(f'etcdctl {" ".join(args)} -> '
                                 f'{proc.returncode}: {proc.stderr}')
        return proc

    def install_base(self) -> None:
        self.run('apt-get', 'install', '-y', *BASE_PACKAGES, check=True)

    def admin_kubeconfig(self) -> str:
        return '/etc/kubernetes/admin.conf'

    def kubectl(self, *args: str, check: bool = True
                ) -> subprocess.CompletedProcess:
        return self.run('kubectl', '--kubeconfig',
                        '/etc/kubernetes/admin.conf', *args, check=check)


def random_loopback_base() -> str:
    """``127.a.b.`` prefix unlikely to clash with a parallel test."""
    pick = random.SystemRandom().randint
    return f'127.{pick(1, 250)}.{pick(1, 250)}.'


def make_host(base_dir: str, cluster_dir: str, name: str, ip: str,
              role: str = 'worker') -> SimHost:
    root = os.path.join(base_dir, 'hosts', name)
    os.makedirs(root, exist_ok=True)
    host_file = os.path.join(root, 'host.json')
    with open(host_file, 'w', encoding='utf-8') as f:
        json.dump({'name': name, 'ip': ip, 'role': role,
                   'lab_root': base_dir, 'cluster_dir': cluster_dir,
                   'state_file': os.path.join(base_dir, 'lab.json')}, f)
    return SimHost(name, ip, root, host_file, cluster_dir)


def cleanup(hosts: list[SimHost]) -> None:
    """Stop API server stand-ins and real daemons the hosts started."""
    for host in hosts:
        apiserver.stop(host.path('/run/klab/kube-apiserver.pid'))
        for pid in _pids(host.path(etcd_server.PIDFILE), 'etcd'):
            try:
                os.kill(pid, 9)     # its data goes with the test's files
            except ProcessLookupError:
                pass
        for daemon in daemons.DAEMONS.values():
            pidfile = host.path(daemon.pidfile)
            for pid in _pids(pidfile, daemon.binary):
                try:
                    os.kill(pid, 15)
                except ProcessLookupError:
                    pass


def _pids(pidfile: str, binary: str) -> list[int]:
    try:
        with open(pidfile, encoding='utf-8') as f:
            pids = [int(w) for w in f.read().split() if w.isdigit()]
    except OSError:
        return []
    return [p for p in pids if daemons._alive(p, binary)]


# The lab mirror's Calico stand-in: what marks the CNI as installed.
CNI_MANIFEST = CALICO_MANIFEST


@dataclass
class SimCluster:
    base: str
    cluster_dir: str
    masters: list[SimHost]
    workers: list[SimHost]

    @property
    def hosts(self) -> list[SimHost]:
        return self.masters + self.workers

    def view(self):
        from kubernetes_mgmt_lab.emulated.view import ClusterView
        return ClusterView(self.cluster_dir)

    def kubectl(self, *args: str, check: bool = True):
        return self.masters[0].kubectl(*args, check=check)

    def join_command(self) -> list[str]:
        out = self.masters[0].run('kubeadm', 'token', 'create',
                                  '--print-join-command', check=True)
        return out.stdout.split()[1:]

    def add_worker(self, name: str, ip: str) -> SimHost:
        host = make_host(self.base, self.cluster_dir, name, ip)
        self.workers.append(host)
        host.install_base()
        host.run('kubeadm', *self.join_command(), check=True)
        return host

    def cleanup(self) -> None:
        cleanup(self.hosts)


def init_cluster(base: str, workers: int = 1, cni: bool = True,
                 demo_replicas: int = 2) -> SimCluster:
    """A one-master cluster with ``workers`` workers on 127.x.y.z."""
    from kubernetes_mgmt_lab.emulated.config import update_config
    cluster_dir = os.path.join(base, 'cluster')
    update_config(cluster_dir, demo_replicas=demo_replicas)
    prefix = random_loopback_base()
    master = make_host(base, cluster_dir, 'master-0', prefix + '10',
                       'master')
    sim = SimCluster(base, cluster_dir, [master], [])
    try:
        master.install_base()
        master.run('kubeadm', 'init', '--pod-network-cidr',
                   '10.244.0.0/16', check=True)
        if cni:
            master.run('kubectl', '--kubeconfig',
                       '/etc/kubernetes/admin.conf', 'apply', '-f', '-',
                       stdin=CNI_MANIFEST, check=True)
        for i in range(workers):
            sim.add_worker(f'worker-{i}', f'{prefix}{20 + i}')
    except BaseException:
        sim.cleanup()
        raise
    return sim

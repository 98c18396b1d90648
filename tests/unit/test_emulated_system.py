"""apt-get, apt-mark, systemctl (with the real HAProxy), the recording
kernel tools, fault injection and the emulated install time."""
from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

from kubernetes_mgmt.remote.retry import wait_until
from kubernetes_mgmt_lab.emulated import (
    ClusterView,
    inject_fault,
    set_install_delay,
    testing,
)

GOOD_CFG = """\
global
    maxconn 100
defaults
    mode tcp
    timeout connect 2s
    timeout client 10s
    timeout server 10s
frontend kube
    bind {ip}:{port}
    default_backend masters
backend masters
    server m0 {ip}:6443 check
"""


@pytest.fixture
def host(tmp_path):
    h = testing.make_host(str(tmp_path), str(tmp_path / 'cluster'), 'h0',
                          testing.random_loopback_base() + '5', 'master')
    yield h
    testing.cleanup([h])


def test_apt_records_packages_and_holds(host):
    host.run('apt-get', 'update', check=True)
    out = host.run('apt-get', 'install', '-y', '--no-install-recommends',
                   'kubelet=1.31.*', 'kubeadm=1.31.2-1.1', check=True)
    assert 'Setting up cri-tools' in out.stdout     # kubeadm's dependency
    assert host.run('kubelet', '--version', check=True).stdout.strip() == \
        'Kubernetes v1.31.4'
    host.run('apt-mark', 'hold', 'kubelet', 'kubeadm', check=True)
    assert host.run('apt-mark', 'showhold', check=True).stdout.split() == \
        ['kubeadm', 'kubelet']
    held = host.run('apt-get', 'install', '-y', 'kubeadm=1.31.4-1.1')
    assert held.returncode == 100
    assert '--allow-change-held-packages' in held.stderr
    again = host.run('apt-get', 'install', '-y', 'kubelet=1.31.4-1.1',
                     check=True)
    assert 'already the newest version' in again.stdout
    unknown = host.run('apt-get', 'install', '-y', '--frobnicate', 'x')
    assert unknown.returncode == 100
    prompt = host.run('apt-get', 'install', 'nfs-common')
    assert prompt.returncode == 1 and 'Abort.' in prompt.stderr


def test_install_delay_spent_once_per_new_install(host):
    set_install_delay(host.cluster_dir, 0.4)
    start = time.monotonic()
    host.run('apt-get', 'install', '-y', 'containerd', check=True)
    assert time.monotonic() - start >= 0.4
    # Were it spent again, the second install would wait an hour.
    set_install_delay(host.cluster_dir, 3600)
    again = host.run('apt-get', 'install', '-y', 'containerd', check=True)
    assert '0 newly installed' in again.stdout


def test_systemctl_records_units(host):
    gone = host.run('systemctl', 'start', 'kubelet')
    assert gone.returncode == 5 and 'not found' in gone.stderr
    host.run('apt-get', 'install', '-y', 'containerd', 'kubelet',
             check=True)
    # packaged services start on install; the kubelet crash-loops until
    # kubeadm has configured it
    assert host.run('systemctl', 'is-active', 'containerd').stdout.strip() \
        == 'active'
    kubelet = host.run('systemctl', 'is-active', 'kubelet')
    assert (kubelet.returncode, kubelet.stdout.strip()) == (3, 'activating')
    host.run('systemctl', 'disable', '--now', 'containerd', check=True)
    off = host.run('systemctl', 'is-enabled', 'containerd')
    assert (off.returncode, off.stdout.strip()) == (1, 'disabled')
    assert host.run('systemctl', 'is-active', '--quiet',
                    'containerd').returncode == 3
    host.run('systemctl', 'daemon-reload', check=True)
    host.run('systemctl', 'enable', '--now', 'containerd', check=True)
    assert host.run('systemctl', 'is-active', 'containerd').returncode == 0
    status = host.run('systemctl', 'status', 'nope')
    assert status.returncode == 4


def _free_port(ip: str) -> int:
    for _ in range(50):
        port = random.randint(20000, 60000)
        with socket.socket() as s:
            try:
                s.bind((ip, port))
            except OSError:
                continue
            return port
    raise RuntimeError('no free port')


def _write_cfg(host, text: str) -> None:
    path = host.path('/etc/haproxy/haproxy.cfg')
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)


@pytest.mark.skipif(shutil.which('haproxy') is None,
                    reason='haproxy not installed')
def test_haproxy_is_real_and_checks_its_config(host):
    host.run('apt-get', 'install', '-y', 'haproxy', check=True)
    port = _free_port(host.ip)
    _write_cfg(host, 'global\n  bogus_keyword on\n')
    bad = host.run('systemctl', 'restart', 'haproxy')
    assert bad.returncode == 1
    assert 'Job for haproxy.service failed' in bad.stderr
    failed = host.run('systemctl', 'is-active', 'haproxy')
    assert (failed.returncode, failed.stdout.strip()) == (3, 'failed')
    _write_cfg(host, GOOD_CFG.format(ip=host.ip, port=port))
    host.run('systemctl', 'restart', 'haproxy', check=True)
    assert host.run('systemctl', 'is-active', 'haproxy').returncode == 0
    with socket.create_connection((host.ip, port), timeout=2):
        pass    # the real HAProxy listens
    # a broken reload keeps the running proxy
    _write_cfg(host, 'frontend x\n  bind nonsense\n')
    assert host.run('systemctl', 'reload', 'haproxy').returncode == 1
    assert host.run('systemctl', 'is-active', 'haproxy').returncode == 0
    _write_cfg(host, GOOD_CFG.format(ip=host.ip, port=port))
    host.run('systemctl', 'reload', 'haproxy', check=True)
    host.run('systemctl', 'stop', 'haproxy', check=True)
    assert host.run('systemctl', 'is-active', 'haproxy').stdout.strip() \
        == 'inactive'
    with pytest.raises(OSError):
        socket.create_connection((host.ip, port), timeout=2).close()


@pytest.mark.skipif(shutil.which('haproxy') is None,
                    reason='haproxy not installed')
def test_a_boot_after_a_crash_starts_the_enabled_units(host):
    """``emulated.boot``, which a lab VM's init runs when it boots again:
    processes that died with the VM are started again if enabled."""
    host.run('apt-get', 'install', '-y', 'containerd', 'kubelet', 'haproxy',
             check=True)
    port = _free_port(host.ip)
    _write_cfg(host, GOOD_CFG.format(ip=host.ip, port=port))
    host.run('systemctl', 'restart', 'haproxy', check=True)
    host.run('systemctl', 'disable', '--now', 'containerd', check=True)
    with open(host.path('/run/haproxy.pid'), encoding='utf-8') as f:
        for pid in f.read().split():
            os.kill(int(pid), signal.SIGKILL)     # the crash
    assert wait_until(lambda: host.run('systemctl', 'is-active',
                                       'haproxy').returncode == 3,
                      deadline=10, ceiling=0.2)
    boot = subprocess.run(
        [sys.executable, '-m', 'kubernetes_mgmt_lab.emulated.boot'],
        capture_output=True, text=True, env=host.env(), timeout=60,
        check=False)
    assert boot.returncode == 0, boot.stderr
    # Services before the kubelet; the disabled unit stays down.
    assert boot.stdout.splitlines() == ['boot: started haproxy.service',
                                        'boot: started kubelet.service']
    assert host.run('systemctl', 'is-active', 'haproxy').returncode == 0
    assert host.run('systemctl', 'is-active', 'containerd').returncode == 3
    with socket.create_connection((host.ip, port), timeout=2):
        pass
    host.run('systemctl', 'stop', 'haproxy', check=True)


@pytest.mark.skipif(shutil.which('keepalived') is None,
                    reason='keepalived not installed')
def test_keepalived_config_is_checked_before_start(host):
    host.run('apt-get', 'install', '-y', 'keepalived', check=True)
    # without a config the packaged unit's condition keeps it stopped
    assert host.run('systemctl', 'is-active', 'keepalived').returncode == 3
    path = host.path('/etc/keepalived/keepalived.conf')
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as f:
        f.write('vrrp_instance VI_1 {\n  no_such_keyword 1\n}\n')
    bad = host.run('systemctl', 'start', 'keepalived')
    assert bad.returncode == 1 and 'failed' in bad.stderr


def test_kernel_tools_only_record(host):
    host.run('modprobe', 'br_netfilter', check=True)
    host.run('swapoff', '-a', check=True)
    conf = host.path('/etc/sysctl.d/k8s.conf')
    os.makedirs(os.path.dirname(conf), exist_ok=True)
    with open(conf, 'w', encoding='utf-8') as f:
        f.write('net.ipv4.ip_forward = 1\n')
    host.run('sysctl', '--system', check=True)
    assert host.run('sysctl', '-n', 'net.ipv4.ip_forward',
                    check=True).stdout.strip() == '1'
    assert 'br_netfilter' in host.run('lsmod', check=True).stdout
    assert host.run('hostname', '-I', check=True).stdout.strip() == host.ip
    commands = [e['argv'][0] for e in ClusterView(host.cluster_dir).events()]
    assert {'modprobe', 'swapoff', 'sysctl'} <= set(commands)


def test_fault_fires_once(host):
    inject_fault(host.cluster_dir, 'h0', 'apt-get install',
                 'E: Unable to fetch some archives', times=1)
    inject_fault(host.cluster_dir, 'other', 'apt-get install', 'no')
    first = host.run('apt-get', 'install', '-y', 'containerd')
    assert (first.returncode, first.stderr.strip()) == (
        1, 'E: Unable to fetch some archives')
    assert 'containerd' not in host.run('apt-mark', 'showhold').stdout
    host.run('apt-get', 'install', '-y', 'containerd', check=True)
    events = ClusterView(host.cluster_dir).events(command='apt-get install')
    assert [e['rc'] for e in events] == [1, 0]


def test_dpkg_queries_recorded_packages(host):
    host.run('apt-get', 'install', '-y', 'kubectl=1.31.2-1.1', check=True)
    out = host.run('dpkg-query', '-W', "-f=${Version}", 'kubectl',
                   check=True).stdout
    assert out == '1.31.2-1.1'
    assert host.run('dpkg', '-s', 'kubectl').returncode == 0
    assert host.run('dpkg', '-s', 'kubelet').returncode == 1
    deb = host.path('/home/ubuntu/nfs-common_2.6.4-3_amd64.deb')
    os.makedirs(os.path.dirname(deb), exist_ok=True)
    with open(deb, 'wb') as f:
        f.write(b'not a real archive')
    host.run('dpkg', '-i', '/home/ubuntu/nfs-common_2.6.4-3_amd64.deb',
             check=True)
    assert host.run('dpkg', '-s', 'nfs-common').returncode == 0

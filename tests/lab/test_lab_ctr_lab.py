"""``ctr`` inside lab VMs (``emulated.ctr``): Debian's ctr against a real
containerd of the VM, as the install script runs it in ``prepare``
(``ctr --namespace k8s.io images pull --hosts-dir /etc/containerd/
certs.d IMAGE``) with a ``certs.d`` tree in the VM's /etc, from a real
registry on the lab's gateway (the VMs' network reaches it there).

One lab (a master and a worker) and one registry serve the module; the
last test takes the lab down itself to show that nothing of a VM's
containerd outlives it.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading

import pytest

from kubernetes_mgmt.remote.retry import wait_until
from kubernetes_mgmt_lab import (
    hosts,
    net,
    oci_images,
    packages,
    pki,
    procs,
    registry,
)
from kubernetes_mgmt_lab.emulated.node_images import images_of
from kubernetes_mgmt_lab.testing import throwaway_lab, unavailable_reason

pytestmark = pytest.mark.lab

PROGRAMS = {'/usr/bin/containerd': 'containerd', '/usr/bin/ctr':
            'containerd', '/usr/bin/docker-registry': 'docker-registry',
            'skopeo': 'skopeo'}
CERTS_D = '/etc/containerd/certs.d'
# The site's name in image references: only the mirror entry of the
# VM's hosts.toml leads to the registry.
SITE_NAME = 'registry.airgap.lab:5000'
REPO = 'lab/true:1.0'      # conftest's layout, pushed
REF = f'{SITE_NAME}/{REPO}'
PULL = ['ctr', '--namespace', 'k8s.io', 'images', 'pull', '--hosts-dir']
LIST = ['ctr', '-n', 'k8s.io', 'images', 'ls', '-q']


@pytest.fixture(scope='module')
def machine() -> None:
    reason = unavailable_reason()
    missing = packages.missing(PROGRAMS)
    if not reason and missing:
        reason = f'needs the Debian packages {" ".join(missing)}'
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope='module')
def vms(machine):
    """A lab of two VMs, containerd's package installed on both (its
    unit active): ctr exists on a node once containerd is installed."""
    with throwaway_lab(1, 1) as lab:
        for host in lab.state.hosts:
            done = lab.run_in_host(host.name, ['apt-get', 'install', '-y',
                                               'containerd'])
            assert done.returncode == 0, done.stderr
        yield lab


@pytest.fixture(scope='module')
def names(vms) -> list[str]:
    return [host.name for host in vms.state.hosts]


@pytest.fixture(scope='module')
def reg(vms, ca, tmp_path_factory):
    with registry.running(str(tmp_path_factory.mktemp('registry')),
                          vms.state.gateway, ca=ca, mutual_tls=True) as r:
        yield r


def write_tree(lab, vm: str, certs_d: str, reg: registry.LabRegistry,
               ca_pem: bytes, mirror: str | None = None,
               site: str = SITE_NAME, authorization: str | None = None
               ) -> str:
    """``<certs_d>/<site>/`` in the VM's /etc, as the install script
    writes it: relative ca/client paths, the registry as a mirror with
    the Authorization header. Returns ``certs_d``."""
    directory = lab.host_path(vm, os.path.join(certs_d, site))
    pki.write(os.path.join(directory, 'ca.crt'), ca_pem)
    pki.write(os.path.join(directory, 'client.crt'), reg.client_cert_pem)
    pki.write(os.path.join(directory, 'client.key'), reg.client_key_pem,
              private=True)
    mirror = mirror or reg.url
    hosts_toml = (
        f'server = "https://{site}"\n\n'
        f'[host."{mirror}"]\n'
        'capabilities = ["pull", "resolve"]\n'
        'ca = "ca.crt"\nclient = [["client.crt", "client.key"]]\n'
        f'[host."{mirror}".header]\n'
        f'Authorization = ["{authorization or reg.basic_auth}"]\n')
    pki.write(os.path.join(directory, 'hosts.toml'), hosts_toml.encode(),
              private=True)
    return certs_d


def listed(lab, vm: str) -> list[str]:
    done = lab.run_in_host(vm, LIST)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def containerd_pids(lab, vm: str) -> list[int]:
    """containerd and ctr processes inside the VM."""
    ns = hosts.host_namespaces(lab.state, lab.host(vm))
    pids = procs.find([procs.nsfs_inode(ns.mnt)])
    return [p for p in pids if _comm(p) in ('containerd', 'ctr')]


def _comm(pid: int) -> str:
    try:
        with open(f'/proc/{pid}/comm', encoding='utf-8') as f:
            return f.read().strip()
    except OSError:
        return ''


def test_pull_through_the_vms_certs_d(vms, names, reg, pushed):
    vm = names[0]
    certs_d = write_tree(vms, vm, CERTS_D, reg, reg.ca_pem)
    done = vms.run_in_host(vm, [*PULL, certs_d, REF])
    assert done.returncode == 0, done.stderr
    assert listed(vms, vm) == [REF]
    assert images_of(vm, vms) == {REF: pushed}
    assert containerd_pids(vms, vm) == []       # it ran for the command


def test_wrong_ca_fails_on_x509(vms, names, reg, pushed):
    vm = names[0]
    other = pki.Authority.new('kubernetes-mgmt-lab-site-ca')
    # Named by its address: after the mirror, ctr tries the server, and
    # a name would first wait for the VM's DNS, which no lab serves.
    certs_d = write_tree(vms, vm, '/etc/containerd/wrong-ca.d', reg,
                         other.cert_pem, site=reg.address)
    before = len(registry.requests(reg))
    done = vms.run_in_host(vm, [*PULL, certs_d,
                                f'{reg.address}/lab/absent:1.0'])
    assert done.returncode != 0
    # The line the install script shows: ctr's last.
    assert 'x509' in done.stderr.strip().splitlines()[-1], done.stderr
    assert len(registry.requests(reg)) == before


def test_wrong_password_is_unauthorized(vms, names, reg, pushed):
    vm = names[1]
    wrong = registry.basic_auth(reg.username, reg.password + 'x')
    certs_d = write_tree(vms, vm, '/etc/containerd/wrong-password.d', reg,
                         reg.ca_pem, site=reg.address, authorization=wrong)
    done = vms.run_in_host(vm, [*PULL, certs_d, f'{reg.address}/{REPO}'])
    assert done.returncode != 0
    assert '401 Unauthorized' in done.stderr.strip().splitlines()[-1], \
        done.stderr
    assert f'{reg.address}/{REPO}' not in images_of(vm, vms)


def test_import_needs_no_registry(vms, names, reg, layout, tmp_path):
    vm = names[1]
    ref = f'{vms.state.gateway}:{net.free_port(vms.state.gateway, 0)}' \
          '/lab/true:imported'
    digest = oci_images.archive(layout, vms.host_path(vm, '/root/true.tar'),
                                ref)
    before = len(registry.requests(reg))
    done = vms.run_in_host(vm, ['ctr', '--namespace', 'k8s.io', 'images',
                                'import', '--digests', '/root/true.tar'])
    assert done.returncode == 0, done.stderr
    assert ref in done.stdout
    assert ref in listed(vms, vm)
    assert images_of(vm, vms)[ref] == digest == layout.manifest_digest
    assert len(registry.requests(reg)) == before


def test_vms_have_their_own_stores(vms, names, reg, pushed):
    first, second = names
    assert REF not in images_of(second, vms)
    assert not any(':imported' in ref for ref in images_of(first, vms))
    # The namespace matters as on a node: nothing outside k8s.io.
    assert images_of(first, vms, namespace='default') == {}


def test_parallel_commands_wait_for_each_other(vms, names):
    vm = names[0]
    results: list[subprocess.CompletedProcess] = []

    def list_images() -> None:
        results.append(vms.run_in_host(vm, LIST))

    threads = [threading.Thread(target=list_images) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.returncode for r in results] == [0, 0, 0], \
        [r.stderr for r in results]
    assert all(r.stdout.split() == [REF] for r in results)


def test_flags_and_commands_the_lab_does_not_run(vms, names):
    vm = names[0]
    done = vms.run_in_host(vm, ['ctr', 'images', 'pull', '--user', 'u:p',
                                REF])
    assert done.returncode == 1
    assert done.stderr.startswith('ctr: flag provided but not defined: '
                                  '-user'), done.stderr
    done = vms.run_in_host(vm, ['ctr', 'containers', 'ls'])
    assert done.returncode == 1
    assert done.stderr.startswith('ctr: '), done.stderr


def test_stopped_containerd_unit_cannot_be_dialed(vms, names):
    vm = names[1]
    assert vms.run_in_host(vm, ['systemctl', 'stop',
                                'containerd']).returncode == 0
    try:
        done = vms.run_in_host(vm, LIST)
        assert done.returncode == 1
        assert 'failed to dial "/run/containerd/containerd.sock"' in \
            done.stderr, done.stderr
    finally:
        vms.run_in_host(vm, ['systemctl', 'start', 'containerd'])
    assert vms.run_in_host(vm, ['ctr', 'version']).returncode == 0


def test_nothing_outlives_a_killed_command_or_the_lab(vms, names, reg):
    """A pull hanging on a registry that never answers, its client
    killed: the VM's containerd and ctr end with it. Then the lab goes
    down (this test ends the module's lab) and no process of the VM is
    left."""
    vm = names[0]
    gateway = vms.state.gateway
    with socket.socket() as silent:
        silent.bind((gateway, 0))
        silent.listen()
        port = silent.getsockname()[1]
        certs_d = write_tree(vms, vm, '/etc/containerd/silent.d', reg,
                             reg.ca_pem, mirror=f'https://{gateway}:{port}')
        client = _start_in(vms, vm, [*PULL, certs_d, REF])
        try:
            assert wait_until(lambda: len(containerd_pids(vms, vm)) == 2,
                              deadline=30.0), 'no containerd and ctr ran'
            assert client.poll() is None      # still waiting for the pull
        finally:
            client.send_signal(signal.SIGKILL)
            client.wait(timeout=10)
        assert wait_until(lambda: not containerd_pids(vms, vm),
                          deadline=15.0), containerd_pids(vms, vm)
    ns = hosts.host_namespaces(vms.state, vms.host(vm))
    inodes = [procs.nsfs_inode(p) for p in (ns.mnt, ns.net)]
    vms.down()
    assert procs.find(i for i in inodes if i is not None) == []


def _start_in(lab, vm: str, argv: list[str]) -> subprocess.Popen:
    """``argv`` in the VM, not waited for (``lab.run_in_host`` waits)."""
    host = lab.host(vm)
    ns = hosts.host_namespaces(lab.state, host)
    return subprocess.Popen([*ns.enter_argv(), *argv], cwd='/',
                            env=hosts.root_env(host),
                            stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)

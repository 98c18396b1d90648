"""One lab "VM": its private directories, network, namespaces and init.

A host is created from the lab image (image.py), plugged into the lab
bridge, given its own mount and UTS namespaces and booted: its init
(hostinit.py) starts a real OpenSSH server inside.
"""
from __future__ import annotations

import functools
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass

from kubernetes_mgmt.redact import get_logger
from kubernetes_mgmt.remote.retry import wait_until
from kubernetes_mgmt_lab import first_boot, namespaces, net, procs, volumes
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.first_boot import HOST_KEY, KEYGEN_OPTIONS, FirstBoot
from kubernetes_mgmt_lab.hostinit import (
    PIDFILE,
    SSHD_LOG,
    START_SSHD,
    STOP_SSHD,
)
from kubernetes_mgmt_lab.image import password_hash, write_file
from kubernetes_mgmt_lab.state import LabHost, LabState, state_path
from kubernetes_mgmt_lab.sysrun import run

LOG = get_logger(__name__)

SSH_PORT = 22
BOOT_DEADLINE = 60.0
HOST_JSON = '/etc/klab/host.json'
INIT_LOG = '/var/log/klab-init.log'
ADMIN_CONF = '/etc/kubernetes/admin.conf'
HOST_ENV = {'PATH': '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:'
                    '/sbin:/bin',
            'HOME': '/root', 'LANG': 'C.UTF-8'}


@dataclass(frozen=True)
class Layout:
    """Where a lab keeps its shared pieces on disk."""

    root: str

    @property
    def ns_dir(self) -> str:
        return os.path.join(self.root, 'ns')

    @property
    def image(self) -> str:
        return os.path.join(self.root, 'image')

    @property
    def hosts_dir(self) -> str:
        return os.path.join(self.root, 'hosts')

    def host_root(self, name: str) -> str:
        return os.path.join(self.hosts_dir, name)


def host_namespaces(state: LabState, host: LabHost
                    ) -> namespaces.HostNamespaces:
    return namespaces.HostNamespaces.of(
        Layout(state.root).ns_dir, host.name, host.netns)


def disk_path(host: LabHost, path: str) -> str:
    """Where ``path`` inside the host lives on the machine's disk."""
    path = os.path.normpath(os.path.join('/', path))
    for d in namespaces.PRIVATE_DIRS:
        top = '/' + d
        if path == top or path.startswith(top + '/'):
            return os.path.join(host.root, path.lstrip('/'))
    return path


def python_for_hosts() -> str:
    """An interpreter path that resolves inside hosts too."""
    python = sys.executable
    for candidate in (python, os.path.realpath(python)):
        top = os.path.normpath(candidate)
        for d in namespaces.PRIVATE_DIRS:
            if top.startswith(f'/{d}/'):
                raise LabError(
                    f'the Python interpreter {candidate} lies in /{d}, a '
                    'directory private to each lab host; run the lab with '
                    'a Python installed elsewhere (e.g. /usr/bin/python3 '
                    'or a virtualenv outside /usr/local/bin)')
    blocked = _not_world_executable(os.path.realpath(python))
    if blocked:
        # The lab user (not root) runs kubectl & co. on the hosts.
        raise LabError(
            f'the Python interpreter {python} is not usable by other users '
            f'({blocked} lacks o+x); create the virtualenv from a '
            'system-wide Python, e.g. /usr/bin/python3 -m venv')
    return python


def _not_world_executable(path: str) -> str | None:
    """The first component of ``path`` others may not traverse/run."""
    parts = path.split('/')
    for i in range(2, len(parts) + 1):
        prefix = '/'.join(parts[:i])
        if not os.stat(prefix).st_mode & stat.S_IXOTH:
            return prefix
    return None


# -- creation ---------------------------------------------------------------

def create(state: LabState, host: LabHost, sshd_delay: float = 0.0,
           wait: bool = True,
           boot_with: FirstBoot | None = None) -> subprocess.Popen:
    """Build and boot a new host; with ``wait``, return once its sshd
    accepts connections (unless ``sshd_delay`` postpones sshd).
    ``boot_with``: its server's cloud-config and adminPass (first_boot.py).

    The host's volumes are new loop devices: ``host.volume_devices`` is
    updated in place, for the caller to record in the lab state."""
    started = time.monotonic()
    layout = Layout(state.root)
    plan = net.AddressPlan.parse(state.subnet)
    _lay_down_disk(layout, state, host)
    _first_boot(state, host, boot_with or FirstBoot(), started)
    if host.volume_ids:
        host.volume_devices = volumes.attach(host)
    veth = net.veth_name(state.name, plan.index(host.ip))
    net.create_host_net(host.netns, veth, state.bridge, host.ip, plan)
    ns = host_namespaces(state, host)
    namespaces.create(ns, host.root, host.name, layout.ns_dir)
    if host.volume_devices:
        volumes.expose(ns.mnt, host)
    init = boot(state, host, sshd_delay)
    if wait and sshd_delay <= 0:
        wait_sshd(host, init)
    return init


def _lay_down_disk(layout: Layout, state: LabState, host: LabHost) -> None:
    if os.path.exists(host.root):
        volumes.release(host.root, [])   # never leak a loop device
        _remove_disk(host)
    os.makedirs(layout.hosts_dir, mode=0o700, exist_ok=True)
    run(['cp', '-a', layout.image, host.root])
    etc = os.path.join(host.root, 'etc')
    write_file(os.path.join(etc, 'hostname'), f'{host.name}\n')
    write_file(os.path.join(etc, 'hosts'), _etc_hosts(host))
    write_file(os.path.join(etc, 'machine-id'), f'{uuid.uuid4().hex}\n',
               mode=0o444)
    write_file(disk_path(host, HOST_JSON), json.dumps({
        'name': host.name, 'ip': host.ip, 'role': host.role,
        'lab_root': state.root, 'cluster_dir': state.cluster_dir,
        'state_file': state_path(state.root)}, indent=2) + '\n')
    _install_emulated(disk_path(host, '/usr/local/bin'))


def _first_boot(state: LabState, host: LabHost, boot_with: FirstBoot,
                started: float) -> None:
    """What the VM's cloud-init does before sshd starts; the adminPass
    first, so that the cloud-config may still lock the password."""
    if boot_with.admin_pass:
        set_password(host, state.username, boot_with.admin_pass)
    first_boot.run_first_boot(host.root, host.name, state.username,
                              boot_with, started)


def set_password(host: LabHost, username: str, password: str) -> None:
    """Give the login user of this VM a password of its own (its role's,
    or the server's adminPass)."""
    hashed = password_hash(password)
    first_boot.edit_shadow(disk_path(host, '/etc/shadow'),
                           lambda user, old: hashed if user == username
                           else old)


def _etc_hosts(host: LabHost) -> str:
    return ('127.0.0.1\tlocalhost\n'
            f'{host.ip}\t{host.name}\n'
            '::1\tlocalhost ip6-localhost ip6-loopback\n'
            'ff02::1\tip6-allnodes\n'
            'ff02::2\tip6-allrouters\n')


def host_public_keys(host: LabHost) -> list[str]:
    """The public host keys the VM's sshd was given, one
    ``<type> <base64> <comment>`` line each (its
    /etc/ssh/ssh_host_*_key.pub)."""
    return first_boot.public_host_keys(host.root)


def console_log(host: LabHost) -> str | None:
    """The VM's console output since it booted (None: it has none)."""
    try:
        with open(first_boot.console_log_path(host.root),
                  encoding='utf-8', errors='replace') as f:
            return f.read()
    except FileNotFoundError:
        return None


def replace_host_keys(state: LabState, host: LabHost,
                      kinds: tuple[str, ...] | None = None) -> list[str]:
    """New host keys for the VM's sshd (of ``kinds``, default: every type
    it has), which is restarted: it then presents keys its console log
    does not show, as a VM whose address another machine took would.
    Returns its public host keys afterwards."""
    present = [line.split()[0] for line in host_public_keys(host)]
    kinds = kinds or tuple(k for k in KEYGEN_OPTIONS if any(
        _key_kind(t) == k for t in present))
    for kind in kinds:
        if kind not in KEYGEN_OPTIONS:
            raise LabError(f'[{host.name}] no host key type {kind!r}; use '
                           f'one of {", ".join(KEYGEN_OPTIONS)}')
    for kind in kinds:
        path = disk_path(host, HOST_KEY.format(kind))
        for old in (path, f'{path}.pub'):
            if os.path.exists(old):
                os.unlink(old)
        run(['ssh-keygen', '-q', '-t', kind, *KEYGEN_OPTIONS[kind], '-N', '',
             '-C', f'root@{host.name}', '-f', path])
    stop_sshd(state, host)
    start_sshd(state, host)
    return host_public_keys(host)


def _key_kind(key_type: str) -> str:
    """``ssh-ed25519`` -> ``ed25519``, ``ecdsa-sha2-nistp256`` ->
    ``ecdsa``."""
    return key_type.removeprefix('ssh-').split('-')[0]


def _install_emulated(bin_dir: str) -> None:
    install = _emulated_installer()
    if install is not None:
        install(bin_dir, python_for_hosts(), agent=True)


@functools.lru_cache(maxsize=1)
def _emulated_installer():
    """The emulated Kubernetes commands' installer, if they are there
    (looked up once, so a lab without them warns once)."""
    try:
        from kubernetes_mgmt_lab.emulated import install_commands
    except ImportError as exc:
        LOG.warning('lab: emulated Kubernetes commands are not available '
                    '(%s); hosts get none', exc)
        return None
    return install_commands


# -- running ----------------------------------------------------------------

def boot(state: LabState, host: LabHost,
         sshd_delay: float = 0.0) -> subprocess.Popen:
    """Start the host's init inside its namespaces."""
    ns = host_namespaces(state, host)
    env = dict(HOST_ENV)
    if os.environ.get('PYTHONPATH'):
        env['PYTHONPATH'] = os.environ['PYTHONPATH']
    argv = [*ns.enter_argv(), python_for_hosts(), '-m',
            'kubernetes_mgmt_lab.hostinit', '--sshd-delay', f'{sshd_delay}',
            '--node-exporter-port', str(state.node_exporter_port)]
    with open(disk_path(host, INIT_LOG), 'ab') as log:
        return subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, cwd='/', env=env,
            start_new_session=True)


def wait_sshd(host: LabHost, init: subprocess.Popen | None = None,
              deadline: float = BOOT_DEADLINE) -> None:
    def sshd_up() -> bool:
        if init is not None and init.poll() is not None:
            raise LabError(f'lab host {host.name} failed to boot: '
                           f'{_tail(disk_path(host, INIT_LOG))}')
        return net.port_open(host.ip, SSH_PORT, timeout=0.5)

    if not wait_until(sshd_up, deadline=deadline, ceiling=0.25):
        raise LabError(
            f'sshd of lab host {host.name} did not start within '
            f'{deadline:g} s: {_tail(disk_path(host, SSHD_LOG))}')


def _tail(path: str, chars: int = 1500) -> str:
    try:
        with open(path, encoding='utf-8', errors='replace') as f:
            return f.read()[-chars:].strip() or '(empty log)'
    except OSError:
        return f'(no log at {path})'


def init_pid(state: LabState, host: LabHost) -> int | None:
    """The pid of the host's init, if it is running."""
    try:
        with open(disk_path(host, PIDFILE), encoding='utf-8') as f:
            pid = int(f.read().strip())
    except (OSError, ValueError):
        return None
    mnt = procs.nsfs_inode(host_namespaces(state, host).mnt)
    # The pid must still be the init of this host, not a recycled number.
    if mnt is None or procs.is_gone(pid) or mnt not in procs.ns_of(pid):
        return None
    return pid


def signal_init(state: LabState, host: LabHost, sig: int) -> bool:
    pid = init_pid(state, host)
    if pid is None:
        return False
    os.kill(pid, sig)
    return True


def start_sshd(state: LabState, host: LabHost) -> None:
    if not signal_init(state, host, START_SSHD):
        LOG.info('lab: %s has no init, booting it again', host.name)
        wait_sshd(host, boot(state, host))
        return
    wait_sshd(host)


def start_sshd_later(state: LabState, host: LabHost,
                     delay: float) -> threading.Timer:
    """Signal the host's init to start sshd ``delay`` seconds from now."""
    timer = threading.Timer(delay, signal_init, (state, host, START_SSHD))
    timer.daemon = True
    timer.start()
    return timer


def stop_sshd(state: LabState, host: LabHost) -> None:
    if signal_init(state, host, STOP_SSHD):
        net.wait_port(host.ip, SSH_PORT, up=False, deadline=15.0)


def sshd_up(host: LabHost) -> bool:
    return net.port_open(host.ip, SSH_PORT, timeout=0.5)


def exec_in(state: LabState, host: LabHost, argv: list[str], *,
            input: str | None = None, timeout: float = 120.0
            ) -> subprocess.CompletedProcess:
    """Run ``argv`` as root inside the host and capture its output."""
    ns = host_namespaces(state, host)
    try:
        return subprocess.run(
            [*ns.enter_argv(), *argv], input=input, capture_output=True,
            text=True, timeout=timeout, cwd='/', env=root_env(host),
            stdin=None if input is not None else subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise LabError(f'[{host.name}] {argv[0]} did not finish within '
                       f'{timeout:g} s') from exc


def root_env(host: LabHost) -> dict[str, str]:
    """Root's environment in the host: as on a kubeadm master whose admin
    set ``KUBECONFIG`` as ``kubeadm init`` advises, once the host has an
    admin kubeconfig (so ``kubectl get nodes`` just works there)."""
    env = dict(HOST_ENV)
    if os.path.isfile(disk_path(host, ADMIN_CONF)):
        env['KUBECONFIG'] = ADMIN_CONF
    return env


# -- power ------------------------------------------------------------------

def power_off(state: LabState, host: LabHost) -> None:
    """The VM stops dead (a crash, its hypervisor gone): its NIC loses
    carrier and every process is killed without a chance to clean up.
    Its disk, volumes and port stay, for ``power_on``."""
    plan = net.AddressPlan.parse(state.subnet)
    net.set_link_up(net.veth_name(state.name, plan.index(host.ip)), False)
    ns = host_namespaces(state, host)
    inodes = {procs.nsfs_inode(p) for p in (ns.mnt, ns.uts, ns.net)}
    procs.kill(procs.find(i for i in inodes if i is not None))
    _tell_cluster(state, host, destroyed=False)


def power_on(state: LabState, host: LabHost) -> None:
    """Boot a powered-off VM again: addresses other than its own are gone
    from its NIC, carrier returns, its init starts sshd and then its
    enabled units (the kubelet with its static pods). Returns once sshd
    answers."""
    if init_pid(state, host) is not None:
        raise LabError(f'lab host {host.name} is running; power it off '
                       'first')
    plan = net.AddressPlan.parse(state.subnet)
    net.drop_extra_addresses(host.netns, host.ip)
    net.set_link_up(net.veth_name(state.name, plan.index(host.ip)), True)
    wait_sshd(host, boot(state, host))


# -- removal ----------------------------------------------------------------

def destroy(state: LabState, host: LabHost) -> None:
    """Stop every process of the host and remove all it consists of."""
    ns = host_namespaces(state, host)
    inodes = {procs.nsfs_inode(p) for p in (ns.mnt, ns.uts, ns.net)}
    procs.terminate(procs.find(i for i in inodes if i is not None))
    # The volume may be mounted inside the VM: unmount it there while the
    # namespace is still pinned, so its loop device detaches at once.
    pinned = [ns.mnt] if procs.nsfs_inode(ns.mnt) is not None else []
    volumes.release(host.root, pinned)
    namespaces.release(ns)
    if host.plugged:
        plan = net.AddressPlan.parse(state.subnet)
        net.delete_link(net.veth_name(state.name, plan.index(host.ip)))
    net.delete_netns(host.netns)
    _remove_disk(host)
    _tell_cluster(state, host, destroyed=True)


def unplug(state: LabState, host: LabHost) -> None:
    """Take the VM off the bridge (a detached port): its link goes, so a
    new VM may take its address."""
    plan = net.AddressPlan.parse(state.subnet)
    net.delete_link(net.veth_name(state.name, plan.index(host.ip)))


def _tell_cluster(state: LabState, host: LabHost, *,
                  destroyed: bool) -> None:
    # Its kubelet and API server died with it; the emulated cluster must
    # see the node go NotReady as a real one would.
    if _emulated_installer() is None or not os.path.isdir(state.cluster_dir):
        return
    from kubernetes_mgmt_lab.emulated import set_host_down, set_host_off
    tell = set_host_down if destroyed else set_host_off
    tell(state.cluster_dir, host.name)


def _remove_disk(host: LabHost) -> None:
    # Never follow a mount out of the host's directory.
    if namespaces.mounts_under(host.root):
        raise LabError(f'{host.root} still has mounts; not removing it')
    shutil.rmtree(host.root, ignore_errors=True)

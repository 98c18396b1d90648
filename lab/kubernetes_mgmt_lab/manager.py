"""The lab as a whole: bring it up, change its hosts, tear it down.

The state file (state.py) is the single truth, shared with the lab cloud
and the emulated Kubernetes commands; every change is made under its lock
and ``Lab.state`` re-reads it, so changes made by another process show.
"""
from __future__ import annotations

import dataclasses
import glob
import os
import re
import secrets
import shutil
import string
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import kubernetes_mgmt
from kubernetes_mgmt import redact
from kubernetes_mgmt.remote.console_keys import PublishedKeys
from kubernetes_mgmt.remote.hostkeys import HostKeyStore, StaticKeys
from kubernetes_mgmt.remote.retry import Backoff
from kubernetes_mgmt.vnf_package import layout as package_layout
from kubernetes_mgmt_lab import (
    hosts,
    image,
    kubectl_binary,
    mirror,
    mirrorproc,
    namespaces,
    net,
    packages,
    placement,
    procs,
    state_metrics_proc,
    volumes,
)
from kubernetes_mgmt_lab import state as lab_state
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.state import (
    DEFAULT_ROOT,
    GroupLayout,
    LabHost,
    LabState,
)

LOG = redact.get_logger(__name__)

T = TypeVar('T')
R = TypeVar('R')

DEFAULT_NAME = 'klab'
DEFAULT_USER = 'ubuntu'
DEFAULT_MIRROR_PORT = 8090
MARKER = '.kubernetes-mgmt-lab'     # names the lab; only such roots are
CONFIG_FILE = 'kubernetes_mgmt.conf'  # ever deleted
PACKAGE_DIR = 'package'             # stands in for the unpacked VNF package
STATE_KEY_FILE = 'state.key'
STATE_GENERATION_DIR = 'generations'
VIM_REGISTRY_FILE = 'vims.json'
MAX_PARALLEL = 16
ROLES = ('master', 'worker', 'storage')
VOLUME_DEVICE = '/dev/vdb'
_ACCEPTED = re.compile(r'\bAccepted \S+ for ')


def default_layouts() -> list[GroupLayout]:
    """The Heat layout of the sample VNF packages (BaseHOT)."""
    return [
        GroupLayout('master', 'masterNode', ['masterNode_CP1'],
                    group='master_instance'),
        GroupLayout('worker', 'workerNode', ['workerNode_CP2'],
                    group='worker_instance'),
        GroupLayout('storage', 'storage_server', ['storage_server_CP'],
                    volumes=['storage_server_volume']),
    ]


def require_root() -> None:
    if os.geteuid() != 0:
        raise LabError('the lab needs root (network and mount namespaces)')


def parallel(fn: Callable[[T], R], items: Iterable[T],
             what: Callable[[T], str]) -> list[R]:
    """Run ``fn`` over ``items`` concurrently; report every failure."""
    items = list(items)
    if not items:
        return []
    with ThreadPoolExecutor(min(MAX_PARALLEL, len(items))) as pool:
        futures = [pool.submit(fn, item) for item in items]
    errors = [f'{what(item)}: {f.exception()}'
              for item, f in zip(items, futures, strict=True)
              if f.exception()]
    if errors:
        raise LabError('; '.join(errors))
    return [f.result() for f in futures]


def _short_id() -> str:
    # Heat names group members with 12 random lower-case characters.
    alphabet = string.ascii_lowercase + '234567'
    return ''.join(secrets.choice(alphabet) for _ in range(12))


class Lab:
    """A lab on this machine, found by its root directory."""

    def __init__(self, root: str = DEFAULT_ROOT):
        self.root = os.path.realpath(root)
        self.state_file = lab_state.state_path(self.root)
        self._layout = hosts.Layout(self.root)

    # -- lifecycle -----------------------------------------------------------

    @classmethod
    def up(cls, masters: int = 1, workers: int = 2, storage: bool = False,
           root: str = DEFAULT_ROOT, name: str = DEFAULT_NAME,
           subnet: str = net.DEFAULT_SUBNET, password: str | None = None,
           install_delay: float = 0.0, username: str = DEFAULT_USER,
           mirror_port: int = DEFAULT_MIRROR_PORT) -> Lab:
        """Create the lab: bridge, hosts booted in parallel, site mirror,
        VNF package directory. On failure everything made so far is
        removed. Its VMs are no Heat stack: the lab cloud's networks are
        empty labs (0, 0) whose VMs Heat's servers become (vnf_stack.py;
        server groups, compute hosts and adminPass are the cloud's)."""
        require_root()
        net.check_lab_name(name)
        if workers < 0 or masters < 0 or (masters < 1 and (
                workers or storage)):
            raise LabError('a lab needs at least one master and no '
                           'negative number of workers (or none at all: '
                           'an empty lab, whose VMs a cloud API boots)')
        plan = net.AddressPlan.parse(subnet)
        lab = cls(root)
        lab._refuse_running()
        _refuse_leftovers(name)
        lab._claim_root(name)
        try:
            packages.ensure()
            net.check_subnet_free(plan, net.bridge_name(name))
            password = password or secrets.token_urlsafe(12)
            redact.register(password)
            state = lab._initial_state(name, plan, username, password,
                                       install_delay, masters)
            lab_state.save(state, lab.state_file)
            lab._build(state, plan, masters, workers, storage)
            lab._start_mirror(mirror_port)
            lab._write_package()
            lab._write_driver_config()
        except BaseException:
            LOG.error('lab: bringing %s up failed; removing what was made',
                      name)
            teardown(lab.root, name)
            raise
        return lab

    @classmethod
    def load(cls, root: str = DEFAULT_ROOT) -> Lab:
        lab = cls(root)
        if not os.path.exists(lab.state_file):
            raise LabError(f'no lab at {lab.root} (no {lab.state_file})')
        redact.register(lab.state.password,
                        *lab.state.role_passwords.values())
        return lab

    def down(self) -> None:
        teardown(self.root)

    @property
    def state(self) -> LabState:
        return lab_state.load(self.state_file)

    @property
    def driver_conf_path(self) -> str:
        """The driver config file that points at this lab."""
        return os.path.join(self.root, CONFIG_FILE)

    @property
    def package_dir(self) -> str:
        """The lab's VNF package directory (``Scripts/`` and all)."""
        return os.path.join(self.root, PACKAGE_DIR)

    @property
    def vim_registry_file(self) -> str:
        return os.path.join(self.root, VIM_REGISTRY_FILE)

    @property
    def state_key_file(self) -> str:
        """The key that signs the driver state of this lab's VNFs."""
        return os.path.join(self.root, STATE_KEY_FILE)

    def _refuse_running(self) -> None:
        if os.path.exists(self.state_file):
            raise LabError(f'a lab is already up at {self.root}; run '
                           f'"kubernetes-mgmt lab down --root {self.root}"')

    def _claim_root(self, name: str) -> None:
        marker = os.path.join(self.root, MARKER)
        if os.path.isdir(self.root) and os.listdir(self.root) \
                and not os.path.exists(marker):
            raise LabError(f'{self.root} exists and is not a lab root; '
                           'choose another --root')
        os.makedirs(self.root, exist_ok=True)
        # Hosts (as their users) read the cluster state below the root.
        os.chmod(self.root, 0o755)  # noqa: S103
        with open(marker, 'w', encoding='utf-8') as f:
            f.write(f'{name}\n')

    def _initial_state(self, name: str, plan: net.AddressPlan,
                       username: str, password: str, install_delay: float,
                       masters: int) -> LabState:
        return LabState(
            name=name, root=self.root, subnet=str(plan.subnet),
            gateway=plan.gateway, bridge=net.bridge_name(name),
            username=username, password=password,
            tenant_id=uuid.uuid4().hex,
            vip=plan.vip if masters > 1 else None,
            layouts=default_layouts(), install_delay=install_delay)

    def _build(self, state: LabState, plan: net.AddressPlan, masters: int,
               workers: int, storage: bool) -> None:
        os.makedirs(state.cluster_dir, exist_ok=True)
        # Shared by root and the login user of every host (see store.py).
        os.chmod(state.cluster_dir, 0o777)  # noqa: S103
        if state.install_delay:
            from kubernetes_mgmt_lab.emulated import set_install_delay
            set_install_delay(state.cluster_dir, state.install_delay)
        namespaces.prepare_ns_dir(self._layout.ns_dir)
        for disk in (self._layout.image, self._layout.hosts_dir):
            namespaces.mount_tmpfs(disk, f'{state.name}-disk')
        image.build(self._layout.image, state.username, state.password)
        # The VMs' kubectl is the real one, every release the lab carries:
        # in place before any VM runs it.
        kubectl_binary.install_all()
        net.ensure_bridge(state.bridge, plan)
        roles = ['master'] * masters + ['worker'] * workers
        roles += ['storage'] if storage else []
        with lab_state.locked(self.state_file) as st:
            new = [self._new_host(st, role) for role in roles]
        self._create(state, new)

    def _start_mirror(self, preferred_port: int) -> None:
        state = self.state
        port = net.free_port(state.gateway, preferred_port)
        with lab_state.locked(self.state_file) as st:
            st.mirror_port = port
        pid = mirrorproc.start(self.root, state.gateway, port)
        with lab_state.locked(self.state_file) as st:
            st.mirror_pid = pid

    def start_state_metrics(self, allowed: list[str],
                            preferred_port: int = 18080) -> tuple[str, int]:
        """The cluster's kube-state-metrics stand-in on the gateway
        (``emulated.state_metrics``); its address and port."""
        state = self.state
        if state_metrics_proc.runs(state.state_metrics_pid):
            return state.gateway, state.state_metrics_port
        port = net.free_port(state.gateway, preferred_port)
        pid = state_metrics_proc.start(self.root, state.gateway, port,
                                       state.cluster_dir, allowed)
        with lab_state.locked(self.state_file) as st:
            st.state_metrics_port, st.state_metrics_pid = port, pid
        return state.gateway, port

    def _write_package(self) -> None:
        """``<root>/package``: the installed plugin's scripts and the
        sample package's Kubernetes manifests (PVs), as a VNF package
        would carry them."""
        self._write_manifests()
        target = os.path.join(self.package_dir, 'Scripts')
        os.makedirs(target, exist_ok=True)
        try:
            source = kubernetes_mgmt.scripts_dir()
        except FileNotFoundError as exc:
            # The lab still serves SSH; installs will say why
            # they cannot find the script.
            LOG.warning('lab: the VNF package has no scripts: %s', exc)
            return
        for script in sorted(glob.glob(os.path.join(source, '*.sh'))):
            copy = shutil.copy(script, target)
            os.chmod(copy, 0o755)  # noqa: S103 - a script, holds no secret

    def _write_manifests(self) -> None:
        where = package_layout.MANIFESTS      # Files/kubernetes
        try:
            source = package_layout.sample_package_dir() / where
        except FileNotFoundError as exc:
            LOG.warning('lab: the VNF package has no manifests: %s', exc)
            return
        if source.is_dir():
            shutil.copytree(source, os.path.join(self.package_dir, where),
                            dirs_exist_ok=True)

    def write_files(self, heat_auth: dict[str, str]) -> None:
        """The VNF package directory and the driver config of a lab whose
        stack is in a real Heat (``heat_auth``: its admin's Keystone
        credentials)."""
        self._write_package()
        self._write_driver_config(heat_auth)

    def _write_driver_config(self, heat_auth: dict[str, str] | None = None
                             ) -> None:
        """The driver's options for this lab; the Heat ones only for a
        lab whose VMs are a stack."""
        path = self.driver_conf_path
        with lab_state.locked(self.state_file) as st:
            st.config_file = path
            site = st.mirror_url
            heat = (f'heat_auth_url = {heat_auth["auth_url"]}\n'
                    f'heat_username = {heat_auth["username"]}\n'
                    f'heat_password = {heat_auth["password"]}\n'
                    f'heat_project = {heat_auth["project_name"]}\n'
                    ) if heat_auth else ''
            text = (
                '# Points the Kubernetes Mgmt Driver at this lab.\n'
                '[kubernetes_mgmt]\n'
                # The lab's implementations of the product's seams.
                'heat_client = lab\n'
                'vnf_package_source = directory\n'
                'vim_registry = file\n'
                # One repository per minor, as pkgs.k8s.io has; the
                # driver puts the cluster's minor in place of {minor}.
                f'apt_repository_url = {site}{mirror.APT_REPO_TEMPLATE}\n'
                f'apt_key_url = {site}{mirror.KEY_PATH}\n'
                'apt_key_fingerprints = '
                f'{mirror.key_fingerprint(mirrorproc.content_dir(self.root))}'
                '\n'
                f'cni_manifest = {site}{mirror.CALICO_PATH}\n'
                'cni_manifest_sha256 = '
                f'{mirror.sha256_of(mirror.CALICO_MANIFEST)}\n'
                f'state_key_file = {self.state_key_file}\n'
                # A lab is a site of its own: its floors go with its key.
                'state_generation_dir = '
                f'{os.path.join(self.root, STATE_GENERATION_DIR)}\n'
                'host_key_checking = true\n'
                '\n[kubernetes_mgmt_lab]\n'
                f'{heat}'
                f'vnf_package_dir = {self.package_dir}\n'
                f'vim_registry_file = {self.vim_registry_file}\n'
                f'state_file = {self.state_file}\n')
        image.write_file(path, text, mode=0o600)

    # -- hosts ---------------------------------------------------------------

    def _new_host(self, st: LabState, role: str) -> LabHost:
        """Describe a new host (name, address, Heat ids) and add it to
        ``st``; the caller creates the VM."""
        if role not in ROLES:
            raise LabError(f'unknown role {role!r}; use one of '
                           f'{", ".join(ROLES)}')
        plan = net.AddressPlan.parse(st.subnet)
        taken = {h.name for h in st.hosts}
        index = 0
        while f'{role}-{index}' in taken:
            index += 1
        name = f'{role}-{index}'
        host = LabHost(
            name=name, role=role,
            ip=plan.allocate({h.ip for h in st.hosts}),
            netns=net.netns_name(st.name, name),
            root=self._layout.host_root(name),
            server_id=str(uuid.uuid4()))
        _new_member_ids(host, st.layout_for(role))
        st.hosts.append(host)
        placement.place(st, host)   # NoValidHost: st is not saved
        return host

    def add_hosts(self, role: str, count: int = 1,
                  sshd_delay: float = 0.0,
                  zone: str | None = None) -> list[LabHost]:
        """Scale out: ``count`` new hosts of ``role``, booted in
        parallel, in availability zone ``zone`` (default: the lab's)."""
        with lab_state.locked(self.state_file) as st:
            new = [self._new_host(st, role) for _ in range(count)]
            for host in new:
                host.zone = zone or host.zone
        try:
            self._create(self.state, new, sshd_delay)
        except BaseException:
            self._forget([h.name for h in new])
            raise
        return new

    def add_host(self, role: str, sshd_delay: float = 0.0,
                 zone: str | None = None) -> LabHost:
        return self.add_hosts(role, 1, sshd_delay, zone)[0]

    def remove_host(self, name: str) -> None:
        """Scale in: the VM is gone, its address free again."""
        self._forget([name])

    def _forget(self, names: list[str]) -> None:
        with lab_state.locked(self.state_file) as st:
            doomed = [h for h in st.hosts if h.name in names]
            missing = set(names) - {h.name for h in doomed}
            if missing:
                raise LabError(f'no lab host named {", ".join(missing)}')
            parallel(lambda h: hosts.destroy(st, h), doomed,
                     lambda h: h.name)
            st.hosts = [h for h in st.hosts if h.name not in names]

    def replace_host(self, name: str, sshd_delay: float = 0.0) -> LabHost:
        """Heal one VM: same address and Heat member, a new server with
        new host keys and fresh disks from the image."""
        with lab_state.locked(self.state_file) as st:
            old = self._host(st, name)
            new = dataclasses.replace(
                old, server_id=str(uuid.uuid4()),
                generation=old.generation + 1,
                # A rebuilt VM gets a new, empty volume.
                volume_ids={v: str(uuid.uuid4()) for v in old.volume_ids})
            st.hosts[st.hosts.index(old)] = new
            placement.place(st, new, previous=old.compute_host)
        state = self.state
        hosts.destroy(state, old)
        self._create(state, [new], sshd_delay)
        return self.host(name)

    def _create(self, state: LabState, new: list[LabHost],
                sshd_delay: float = 0.0) -> None:
        """Boot ``new`` hosts in parallel and record the loop devices
        behind their volumes."""
        try:
            parallel(lambda h: hosts.create(state, h, sshd_delay), new,
                     lambda h: h.name)
        finally:
            with lab_state.locked(self.state_file) as st:
                names = {h.name for h in st.hosts}
                for host in new:
                    if host.volume_devices and host.name in names:
                        st.host(host.name).volume_devices = dict(
                            host.volume_devices)

    # -- placement -----------------------------------------------------------

    def place(self, name: str, *, zone: str | None = None,
              compute_host: str | None = None) -> LabHost:
        """Put host ``name`` into availability zone ``zone`` and/or onto
        ``compute_host`` (a cold migration; anti-affinity is kept)."""
        with lab_state.locked(self.state_file) as st:
            host = self._host(st, name)
            if compute_host is not None:
                placement.check_move(st, host, compute_host)
                host.compute_host = compute_host
            if zone is not None:
                host.zone = zone
        return self.host(name)

    @staticmethod
    def _host(st: LabState, name: str) -> LabHost:
        try:
            return st.host(name)
        except KeyError:
            raise LabError(f'no lab host named {name!r}; its hosts: '
                           + ', '.join(h.name for h in st.hosts)) from None

    def host(self, name: str) -> LabHost:
        return self._host(self.state, name)

    def host_keys(self) -> StaticKeys:
        """The VMs' SSH host keys by address, read from their disks now:
        what vouches for a VM the driver reaches without Nova (as a
        site's inventory of its hosts' keys would). Only the VMs on the
        bridge: a VM a heal replaced keeps its disk and its old address."""
        return StaticKeys({host.ip: hosts.host_public_keys(host)
                           for host in self.state.hosts if host.plugged})

    def known_hosts(self) -> HostKeyStore:
        """A host key store for SSH to these VMs that checks their keys
        against ``host_keys``, read when a VM is first met (so a VM
        added later is vouched for too)."""
        return HostKeyStore(authority=_Inventory(self))

    def host_at(self, ip: str) -> LabHost:
        """The VM on the bridge at ``ip`` (after a heal through Heat, a
        new VM with a new name on the same port)."""
        for host in self.state.hosts:
            if host.ip == ip and host.plugged:
                return host
        raise LabError(f'no lab VM at {ip}')

    # -- inside a host -------------------------------------------------------

    def run_in_host(self, name: str, argv: list[str], *,
                    input: str | None = None, timeout: float = 120.0):
        """Run ``argv`` as root inside host ``name``
        (-> subprocess.CompletedProcess with text output)."""
        state = self.state
        return hosts.exec_in(state, self._host(state, name), argv,
                             input=input, timeout=timeout)

    def power_off(self, name: str) -> None:
        """Crash host ``name``: every process killed, NIC without carrier
        (``hosts.power_off``)."""
        state = self.state
        hosts.power_off(state, self._host(state, name))

    def power_on(self, name: str) -> None:
        """Boot a powered-off host again; returns once sshd answers."""
        state = self.state
        hosts.power_on(state, self._host(state, name))

    def host_path(self, name: str, path: str) -> str:
        """Where ``path`` of host ``name`` is on the machine's disk."""
        return hosts.disk_path(self.host(name), path)

    def stop_sshd(self, name: str) -> None:
        state = self.state
        hosts.stop_sshd(state, self._host(state, name))

    def start_sshd(self, name: str, delay: float = 0.0) -> None:
        """Start sshd now, or ``delay`` seconds from now in the background
        (a VM that boots slowly)."""
        state = self.state
        host = self._host(state, name)
        if delay <= 0:
            hosts.start_sshd(state, host)
            return
        if hosts.init_pid(state, host) is None:
            hosts.boot(state, host, sshd_delay=delay)
            return
        hosts.start_sshd_later(state, host, delay)

    def sshd_up(self, name: str) -> bool:
        return hosts.sshd_up(self.host(name))

    def ssh_accepts(self, name: str, at_least: int = 0,
                    deadline: float = 10.0) -> int:
        """How many SSH logins host ``name`` has accepted.

        sshd may log a login a moment after the client is in; with
        ``at_least`` the count is polled until it reaches that number or
        ``deadline`` seconds pass.
        """
        count = self._count_accepts(name)
        backoff = Backoff(deadline, first=0.05)
        while count < at_least and backoff.wait():
            count = self._count_accepts(name)
        return count

    def _count_accepts(self, name: str) -> int:
        path = self.host_path(name, hosts.SSHD_LOG)
        try:
            with open(path, encoding='utf-8', errors='replace') as f:
                return sum(1 for line in f if _ACCEPTED.search(line))
        except FileNotFoundError:
            return 0

    def move_volume(self, name: str, volume: str, guest_path: str) -> None:
        """Show host ``name``'s ``volume`` at ``guest_path`` inside it
        (with its by-id link), while Nova goes on reporting the device it
        attached, as after a reboot that renamed the disks."""
        with lab_state.locked(self.state_file) as st:
            host = self._host(st, name)
            old = host.guest_devices.get(volume, volumes.GUEST_DEVICE)
            host.guest_devices[volume] = guest_path
        state = self.state
        host = self._host(state, name)
        mnt = hosts.host_namespaces(state, host).mnt
        volumes.unplace(mnt, old)
        volumes.place(mnt, host.volume_devices[volume], guest_path,
                      [volumes.by_id_name(host.volume_ids[volume])])

    def add_blank_disk(self, name: str, guest_path: str, size: int,
                       serial_of: str | None = None) -> str:
        """Attach a new, empty disk of ``size`` bytes to host ``name`` at
        ``guest_path``; with ``serial_of`` (a volume name) it carries that
        volume's id, its by-id link now leading to it. Returns the
        machine's loop device."""
        state = self.state
        host = self._host(state, name)
        device = volumes.blank_disk(host, size)
        links = [volumes.by_id_name(host.volume_ids[serial_of])] \
            if serial_of else []
        volumes.place(hosts.host_namespaces(state, host).mnt, device,
                      guest_path, links)
        return device

    def host_public_keys(self, name: str) -> dict[str, str]:
        """The host's SSH host keys: key type -> base64 blob."""
        ssh_dir = self.host_path(name, '/etc/ssh')
        keys = {}
        for entry in sorted(os.listdir(ssh_dir)):
            if entry.startswith('ssh_host_') and entry.endswith('.pub'):
                with open(os.path.join(ssh_dir, entry),
                          encoding='utf-8') as f:
                    key_type, blob = f.read().split()[:2]
                keys[key_type] = blob
        return keys


def _new_member_ids(host: LabHost, layout: GroupLayout) -> None:
    """Ids as a group member of the sample templates would have them
    (node names derive from the member name); a lab of its own has no
    stack, a stack's hosts get the real ones (vnf_stack.sync_hosts)."""
    if layout.group:
        host.member_name = _short_id()
        host.member_stack_id = str(uuid.uuid4())
    host.volume_ids = {v: str(uuid.uuid4()) for v in layout.volumes}
    host.volume_devices = {v: VOLUME_DEVICE for v in layout.volumes}


def _refuse_leftovers(name: str) -> None:
    left = net.lab_netns(name) + net.lab_links(name)
    if left:
        shown = ', '.join(left[:5]) + (', ...' if len(left) > 5 else '')
        raise LabError(f'namespaces or links of a lab named {name!r} exist '
                       f'({shown}); run "kubernetes-mgmt lab down --name '
                       f'{name} --root ROOT" first or choose another '
                       '--name')


def lab_name_at(root: str) -> str | None:
    """The lab's name from its state file or, after a crash, its marker."""
    try:
        return lab_state.load(lab_state.state_path(root)).name
    except (OSError, ValueError, TypeError, KeyError):
        pass
    try:
        with open(os.path.join(root, MARKER), encoding='utf-8') as f:
            return f.read().strip() or None
    except OSError:
        return None


def teardown(root: str = DEFAULT_ROOT, name: str | None = None) -> list[str]:
    """Remove a lab, also one half-built by a crash: processes, mounts,
    namespaces, links, files. Idempotent. Returns what it removed."""
    require_root()
    root = os.path.realpath(root)
    # Root-based steps (killing by command line, unmounting, deleting)
    # only ever run on a directory a lab claimed: never on "--root /".
    ours = os.path.exists(os.path.join(root, MARKER))
    name = name or lab_name_at(root)
    if name is None:
        LOG.info('lab: no lab at %s', root)
        return []
    net.check_lab_name(name)
    done: list[str] = []
    if not ours and os.path.exists(root):
        LOG.warning('lab: %s has no %s marker; only removing namespaces '
                    'and links named %s-*', root, MARKER, name)
    # Helpers first (the site mirror), then every process inside the
    # hosts' namespaces.
    helpers = procs.find((), root) if ours else []
    helpers += _helper_pids(root) if ours else []
    procs.terminate(set(helpers))
    inside = procs.find(_ns_pins(root, name))
    procs.terminate(inside)
    if helpers or inside:
        done.append(f'{len(set(helpers)) + len(inside)} process(es)')
    if ours:
        # Before the namespaces go: volumes are mounted inside them.
        loops = volumes.release(root, _mnt_pins(root))
        done += [f'loop device {d}' for d in loops]
        mounts = namespaces.mounts_under(root)
        namespaces.unmount_all_under(root)
        done += [f'mount {m}' for m in mounts]
    links = net.lab_links(name)
    # veths first: the bridge goes last, once nothing is plugged into it.
    for link in sorted(links, key=lambda n: n.endswith('br0')):
        net.delete_link(link)
    done += [f'link {link}' for link in links]
    for ns in net.lab_netns(name):
        net.delete_netns(ns)
        done.append(f'netns {ns}')
    if ours:
        shutil.rmtree(root)
        done.append(f'directory {root}')
    return done


def _helper_pids(root: str) -> list[int]:
    """The site mirror and the kube-state-metrics stand-in, if still
    running."""
    try:
        st = lab_state.load(lab_state.state_path(root))
    except (OSError, ValueError, TypeError, KeyError):
        return []
    found = [st.mirror_pid] if mirrorproc.is_mirror(st.mirror_pid) else []
    if state_metrics_proc.runs(st.state_metrics_pid):
        found.append(st.state_metrics_pid)
    return found


def _mnt_pins(root: str) -> list[str]:
    """The hosts' pinned mount namespaces (files under the lab's ns/)."""
    ns_dir = hosts.Layout(root).ns_dir
    if not os.path.isdir(ns_dir):
        return []
    pins = [os.path.join(ns_dir, f) for f in sorted(os.listdir(ns_dir))
            if f.endswith('.mnt')]
    return [p for p in pins if procs.nsfs_inode(p) is not None]


def _ns_pins(root: str, name: str) -> set[int]:
    """Namespaces of the lab's hosts, found on disk and by name."""
    paths = [os.path.join(namespaces.NETNS_DIR, ns)
             for ns in net.lab_netns(name)]
    ns_dir = hosts.Layout(root).ns_dir
    if os.path.isdir(ns_dir):
        paths += [os.path.join(ns_dir, f) for f in os.listdir(ns_dir)]
    inodes = {procs.nsfs_inode(p) for p in paths}
    return {i for i in inodes if i is not None}


@dataclasses.dataclass(frozen=True)
class _Inventory:
    """The host keys of the lab's VM at an address (the one plugged in
    there now), read from its disk when asked."""

    lab: Lab

    def published(self, host_id: str) -> PublishedKeys | None:
        try:
            host = self.lab.host_at(host_id)
        except LabError:
            return None
        return StaticKeys({host_id: hosts.host_public_keys(host)}) \
            .published(host_id)

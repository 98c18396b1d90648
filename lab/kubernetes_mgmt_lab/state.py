"""The lab's description, shared by the lab manager, the lab cloud and
the emulated Kubernetes commands through one JSON file.

Writers take an exclusive ``flock`` on ``<file>.lock``; readers re-read the
file on every request, so a change made by one process shows in the
others at once.
"""
from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

# A fixed, well-known place so that `lab down` and any process find the lab.
DEFAULT_ROOT = '/var/tmp/kubernetes-mgmt-lab'  # noqa: S108
STATE_FILE = 'lab.json'


@dataclass
class GroupLayout:
    """How a group of VMs appears in Heat (mirrors the sample BaseHOT)."""

    role: str                   # master | worker | storage
    server: str                 # server resource name, e.g. masterNode
    ports: list[str]            # port resource names, e.g. [masterNode_CP1]
    group: str | None = None    # ASG name (aspect); None = top-level VM
    volumes: list[str] = field(default_factory=list)  # Cinder volume names


@dataclass
class LabHost:
    name: str                   # e.g. master-0; unique in the lab
    role: str
    ip: str
    netns: str
    root: str                   # the host's private directories on disk
    server_id: str
    member_name: str | None = None      # ASG member resource name
    member_stack_id: str | None = None
    compute_host: str = 'compute-0'
    zone: str = 'nova'
    generation: int = 0         # bumped when the VM is replaced (heal)
    volume_ids: dict[str, str] = field(default_factory=dict)
    # Volume name -> the machine's loop device behind it; where the guest
    # sees it (default /dev/vdb); Cinder's size in GiB (default: the
    # disk's, 1).
    volume_devices: dict[str, str] = field(default_factory=dict)
    guest_devices: dict[str, str] = field(default_factory=dict)
    volume_gib: dict[str, int] = field(default_factory=dict)
    # False once its port was detached (the cloud's os-interface): its
    # link is gone, and its address may serve another VM.
    plugged: bool = True


@dataclass
class LabState:
    name: str
    root: str
    subnet: str                 # e.g. 10.10.0.0/24
    gateway: str                # bridge address on the machine's side
    bridge: str
    username: str               # login of every lab VM
    password: str
    tenant_id: str
    stack_id: str = ''          # a VNF stack's lab (vnf_stack.py) only
    stack_name: str = ''
    # Roles whose VMs have another password than ``password``.
    role_passwords: dict[str, str] = field(default_factory=dict)
    vip: str | None = None      # HA: the VIP port's address
    vip_port: str = 'vip_CP'
    layouts: list[GroupLayout] = field(default_factory=list)
    hosts: list[LabHost] = field(default_factory=list)
    config_file: str = ''       # driver config that points at this lab
    site_root: str = ''         # a VNF stack's lab: the services root
    network_id: str = ''        # ... and its network there
    install_delay: float = 0.0  # seconds emulated installs take (demo)
    mirror_port: int = 0        # the site mirror (apt key, CNI manifests)
    mirror_pid: int | None = None
    # A Tacker site's lab: the node exporter every VM image runs (0:
    # none) and the cluster's kube-state-metrics stand-in.
    node_exporter_port: int = 0
    state_metrics_port: int = 0
    state_metrics_pid: int | None = None
    # Where VMs run (placement.py): Nova's compute hosts, the workers'
    # anti-affinity server group, and a round-robin counter for the rest.
    compute_hosts: list[str] = field(default_factory=lambda: [
        'compute-0', 'compute-1', 'compute-2'])
    anti_affinity: bool = False
    placements: int = 0

    @property
    def mirror_url(self) -> str:
        """Base URL of the site mirror, with a trailing slash."""
        return f'http://{self.gateway}:{self.mirror_port}/'

    @property
    def cluster_dir(self) -> str:
        """Shared state of the emulated Kubernetes cluster."""
        return os.path.join(self.root, 'cluster')

    def password_for(self, role: str) -> str:
        """The login password of the VMs of ``role``."""
        return self.role_passwords.get(role, self.password)

    def host(self, name: str) -> LabHost:
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(f'no lab host named {name!r}')

    def layout_for(self, role: str) -> GroupLayout:
        for layout in self.layouts:
            if layout.role == role:
                return layout
        raise KeyError(f'no layout for role {role!r}')

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> LabState:
        # Fields an older lab wrote and this one dropped are ignored: a
        # services root's labs outlive lab versions.
        data = _known(cls, data)
        data['layouts'] = [GroupLayout(**g) for g in data.get('layouts', [])]
        data['hosts'] = [LabHost(**_known(LabHost, h))
                         for h in data.get('hosts', [])]
        return cls(**data)


def _known(kind: type, data: dict) -> dict:
    names = {f.name for f in dataclasses.fields(kind)}
    return {k: v for k, v in data.items() if k in names}


def state_path(root: str = DEFAULT_ROOT) -> str:
    return os.path.join(root, STATE_FILE)


def load(path: str) -> LabState:
    with open(path, encoding='utf-8') as f:
        return LabState.from_dict(json.load(f))


def save(state: LabState, path: str) -> None:
    # 0600: the file holds the VMs' password and the Heat token.
    tmp = f'{path}.tmp'
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with open(fd, 'w', encoding='utf-8') as f:
        json.dump(state.to_dict(), f, indent=2, sort_keys=True)
    os.replace(tmp, path)


@contextlib.contextmanager
def locked(path: str) -> Iterator[LabState]:
    """Load the state under an exclusive lock and save it on success."""
    with open(f'{path}.lock', 'a+') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            state = load(path)
            yield state
            save(state, path)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)

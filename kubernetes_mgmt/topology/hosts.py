"""Hosts of a VNF as the driver sees them, read from Heat."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Role(str, enum.Enum):
    MASTER = 'master'
    WORKER = 'worker'
    STORAGE = 'storage'


@dataclass(frozen=True)
class Volume:
    """A Cinder volume attached to a host. ``device`` is where Nova says
    it is attached, which the guest need not agree with: the volume is
    found in the guest by ``id`` (the disk's serial) and ``size_gib``."""

    id: str
    size_gib: int
    device: str


@dataclass(frozen=True)
class Host:
    """One VM of the VNF."""

    role: Role
    server_id: str              # Nova server id = Heat physical_resource_id
    server_name: str            # logical resource name of the server
    ssh_ip: str                 # address the driver connects to
    nic_ip: str                 # address the cluster uses (node IP)
    member_name: str | None = None      # ASG member resource name
    member_stack_id: str | None = None  # nested stack id of that member
    floating_ip: str | None = None
    compute_host: str | None = None     # OS-EXT-SRV-ATTR:host
    zone: str | None = None             # OS-EXT-AZ:availability_zone
    server_groups: tuple[str, ...] = ()
    volumes: dict[str, Volume] = field(default_factory=dict)  # by res id

    @property
    def label(self) -> str:
        """Short name for logs and error messages."""
        return f'{self.role.value}/{self.member_name or self.server_name}' \
               f'@{self.ssh_ip}'


ANTI_AFFINITY = frozenset({'anti-affinity', 'soft-anti-affinity'})


@dataclass(frozen=True)
class ServerGroup:
    """An ``OS::Nova::ServerGroup`` of the stack."""

    id: str
    name: str                   # its resource name
    policies: tuple[str, ...]
    members: tuple[str, ...]    # server ids

    @property
    def anti_affinity(self) -> bool:
        return bool(ANTI_AFFINITY & set(self.policies))

    def holds(self, host: Host) -> bool:
        return host.server_id in self.members or \
            self.id in host.server_groups


@dataclass(frozen=True)
class Topology:
    stack_id: str
    masters: tuple[Host, ...]
    workers: tuple[Host, ...]
    cluster_ip: str                     # VIP (HA) or the master's IP
    cluster_prefixlen: int | None = None  # of the cluster IP's subnet
    cluster_fip: str | None = None
    storage: Host | None = None
    # pv_registration_params' nfs_server_cp port -> its IP
    nfs_servers: dict[str, str] = field(default_factory=dict)
    server_groups: tuple[ServerGroup, ...] = ()

    def anti_affinity_groups(self, host: Host) -> list[ServerGroup]:
        """The anti-affinity server groups ``host`` is a member of."""
        return [g for g in self.server_groups
                if g.anti_affinity and g.holds(host)]

    @property
    def hosts(self) -> tuple[Host, ...]:
        extra = (self.storage,) if self.storage else ()
        return self.masters + self.workers + extra

    @property
    def is_ha(self) -> bool:
        return len(self.masters) > 1

"""Read a VNF's hosts from its Heat stack.

One resource listing (``nested_depth=2``) tells where every server and port
is. The attributes of the servers, ports and floating IPs then come from
one detailed listing per type, whatever the number of VMs (a request per
resource costs Heat a stack load each); the few other resources whose
attributes are needed (the cluster port's subnets, volumes, server groups)
are fetched one by one, each at most once. Reading only some group
members fetches just theirs. Group members are ordered as Heat orders them
(creation time, then name).
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import ipaddress
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from heatclient import exc as heat_exc
from keystoneauth1 import exceptions as ks_exc

from kubernetes_mgmt import redact
from kubernetes_mgmt.errors import TopologyError
from kubernetes_mgmt.params.cluster_params import (
    ClusterParams,
    MasterParams,
    NodeGroupParams,
    StorageServerParams,
)
from kubernetes_mgmt.topology import heat_listing
from kubernetes_mgmt.topology.heat_listing import Listing, Row
from kubernetes_mgmt.topology.hosts import (
    Host,
    Role,
    ServerGroup,
    Topology,
    Volume,
)

LOG = redact.get_logger(__name__)
NESTED_DEPTH = 2        # top stack -> group stack -> member stack
MAX_PARALLEL_GETS = 8
# What every host's reading needs: read for the whole stack at once.
_ADDRESSED_TYPES = (heat_listing.SERVER, heat_listing.PORT,
                    heat_listing.FLOATING_IP)
# Cinder ids are UUIDs; the install script accepts no other characters.
_VOLUME_ID = re.compile(r'[A-Za-z0-9][A-Za-z0-9-]{7,63}')
T = TypeVar('T')


@dataclass(frozen=True)
class _Vm:
    """Where one VM's resources are, before their attributes are read."""

    role: Role
    stack: str                  # '<name>/<id>' holding server and ports
    ssh_cp: str
    nic_cp: str
    server: Row | None          # None: found through the nic port
    member: Row | None = None


def read_topology(heat, stack_id: str, params: ClusterParams) -> Topology:
    """Masters, workers, storage server and cluster address of a stack."""
    listing = _list(heat, stack_id)
    masters = _group_vms(listing, Role.MASTER, params.master)
    if not masters:
        raise TopologyError(f'stack {stack_id}: no master VM found (group '
                            f'{params.master.aspect_id!r} has no members)')
    workers = _group_vms(listing, Role.WORKER, params.worker)
    reader = _Reader(heat, listing)
    cluster_port = _cluster_port(listing, masters[0], params.master)
    # Asked for before the hosts are read: in the simple flavour the
    # cluster port is the first master's own, fetched once.
    if listing.find(*cluster_port).type == heat_listing.PORT:
        reader.with_subnets.add(cluster_port)
    reader.prefetch(_ADDRESSED_TYPES)
    hosts = reader.hosts(masters + workers)
    storage = None
    if params.storage_server:
        storage = _read_storage(reader, listing, params.storage_server)
    ip = reader.address(*cluster_port)
    prefixlen = _prefixlen(reader.attributes(*cluster_port))
    return Topology(
        stack_id=stack_id, masters=hosts[:len(masters)],
        workers=hosts[len(masters):], cluster_ip=ip,
        cluster_prefixlen=prefixlen,
        cluster_fip=_cluster_fip(reader, listing, masters[0], params.master),
        storage=storage, nfs_servers=_nfs_servers(reader, listing, params),
        server_groups=_server_groups(reader, listing))


def read_members(heat, stack_id: str, params: ClusterParams,
                 member_stack_ids: list[str]) -> tuple[Host, ...]:
    """Hosts of the given group members (e.g. Tacker's scale_out_id_list:
    nested stack ids of new members), in Heat's member order."""
    listing = _list(heat, stack_id)
    vms = (_group_vms(listing, Role.MASTER, params.master)
           + _group_vms(listing, Role.WORKER, params.worker))
    by_id = {vm.member.physical_id: vm for vm in vms if vm.member}
    unknown = [i for i in member_stack_ids if i not in by_id]
    if unknown:
        raise TopologyError(f'stack {stack_id}: no group member with '
                            f'stack id {", ".join(unknown)}; members are: '
                            f'{", ".join(sorted(by_id)) or "(none)"}')
    wanted = set(member_stack_ids)
    chosen = [vm for vm in vms if vm.member.physical_id in wanted]
    return _Reader(heat, listing).hosts(chosen)


# -- the listing --------------------------------------------------------------

def _list(heat, stack_id: str) -> Listing:
    resources = _heat_call(
        stack_id, 'listing resources',
        lambda: heat.resources.list(stack_id, nested_depth=NESTED_DEPTH))
    return Listing(stack_id, [heat_listing.to_row(r) for r in resources])


def _heat_call(stack_id: str, what: str, call: Callable[[], T]) -> T:
    try:
        return call()
    except heat_exc.HTTPNotFound as e:
        raise TopologyError(f'stack {stack_id}: {what}: not found in Heat '
                            f'({e})') from e
    except heat_exc.BaseException as e:
        raise TopologyError(f'stack {stack_id}: {what}: Heat request '
                            f'failed: {e}') from e
    except ks_exc.Unauthorized as e:
        # A session's own authentication fails before Heat is asked.
        raise TopologyError(f'stack {stack_id}: {what}: Authentication '
                            f'failed with Keystone: {e}') from e
    except ks_exc.ClientException as e:
        raise TopologyError(f'stack {stack_id}: {what}: request to '
                            f'Keystone or Heat failed: {e}') from e


def _group_vms(listing: Listing, role: Role,
               group: NodeGroupParams) -> list[_Vm]:
    """The group's VMs: members of the aspect's scaling group (v1 BaseHOT),
    else one nested stack per VDU instance (v2 BaseHOT: ``<VDU>-<n>``),
    else the VM whose ports are in the top stack."""
    if group.aspect_id and listing.find(listing.top, group.aspect_id):
        return _aspect_vms(listing, role, group)
    per_vdu = _vdu_instances(listing, group)
    if per_vdu:
        return [_member_vm(listing, role, group, m) for m in per_vdu]
    if group.aspect_id:     # names a group that is not there
        listing.require(listing.top, group.aspect_id, 'group')
    return [_top_level_vm(listing, role, group)]


def _vdu_instances(listing: Listing, group: NodeGroupParams) -> list[Row]:
    """Top-level resources ``<VDU>-<index>`` whose nested stack holds the
    group's SSH port, in index order (Tacker's v2 user data makes one per
    VDU instance)."""
    found = []
    for row in listing.resources(listing.top).values():
        vdu, _, index = row.name.rpartition('-')
        stack = listing.nested_of(row)
        if vdu and index.isdigit() and stack and \
                listing.find(stack, group.ssh_cp_name) is not None:
            found.append((vdu, int(index), row))
    return [row for *_, row in sorted(found, key=lambda f: f[:2])]


def _aspect_vms(listing: Listing, role: Role,
                group: NodeGroupParams) -> list[_Vm]:
    asg = listing.require(listing.top, group.aspect_id, 'group')
    group_stack = listing.nested_of(asg)
    if group_stack is None:
        raise TopologyError(f'stack {listing.stack_id}: resource '
                            f'{asg.name!r} ({asg.type}) is not a group')
    members = sorted(listing.resources(group_stack).values(),
                     key=lambda r: (r.created, r.name))
    return [_member_vm(listing, role, group, m) for m in members]


def _member_vm(listing: Listing, role: Role, group: NodeGroupParams,
               member: Row) -> _Vm:
    stack = listing.nested_of(member)
    where = (f'stack {listing.stack_id}: member {member.name!r} of group '
             f'{group.aspect_id or member.name.rpartition("-")[0]!r}')
    if stack is None:
        raise TopologyError(f'{where} has no nested stack (resources deeper '
                            f'than nested_depth={NESTED_DEPTH}?)')
    servers = [r for r in listing.resources(stack).values()
               if r.type == heat_listing.SERVER]
    if len(servers) != 1:
        raise TopologyError(f'{where} holds {len(servers)} servers, '
                            f'expected 1; {listing.contents(stack)}')
    for name in (group.ssh_cp_name, group.nic_cp_name):
        if listing.find(stack, name) is None:
            raise TopologyError(f'{where} has no resource {name!r}; '
                                f'{listing.contents(stack)}')
    return _Vm(role, stack, group.ssh_cp_name, group.nic_cp_name,
               servers[0], member)


def _top_level_vm(listing: Listing, role: Role,
                  group: NodeGroupParams) -> _Vm:
    for name, what in ((group.ssh_cp_name, 'ssh_cp_name'),
                       (group.nic_cp_name, 'nic_cp_name')):
        listing.require(listing.top, name, f'{role.value} {what}')
    return _Vm(role, listing.top, group.ssh_cp_name, group.nic_cp_name,
               None)


# -- attributes ---------------------------------------------------------------

class _Reader:
    """Fetches resource attributes, each resource at most once."""

    def __init__(self, heat, listing: Listing):
        self.heat = heat
        self.listing = listing
        self._cache: dict[tuple[str, str], dict] = {}
        self._lock = threading.Lock()
        # Ports whose subnets are wanted: Heat shows a resource's
        # ``subnets`` only when asked for it (with_attr).
        self.with_subnets: set[tuple[str, str]] = set()

    def attributes(self, stack: str, name: str) -> dict:
        key = (stack, name)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        extra = ['subnets'] if key in self.with_subnets else None
        resource = _heat_call(
            self.listing.stack_id, f'reading {name!r} in {stack}',
            lambda: self.heat.resources.get(stack, name, with_attr=extra))
        attrs = getattr(resource, 'attributes', None) or {}
        with self._lock:
            self._cache[key] = attrs
        return attrs

    def prefetch(self, types: tuple[str, ...]) -> None:
        """Cache the attributes of every resource of ``types`` (those the
        stack has), one detailed listing per type, in parallel with the
        resources that need more than a listing shows (``with_subnets``)."""
        calls = [functools.partial(self._list_attributes, kind)
                 for kind in types if self.listing.has_type(kind)]
        calls += [functools.partial(self.attributes, *key)
                  for key in sorted(self.with_subnets)]
        with ThreadPoolExecutor(min(MAX_PARALLEL_GETS, len(calls) or 1),
                                'heat-read') as pool:
            for future in [pool.submit(redact.carry(c)) for c in calls]:
                future.result()

    def _list_attributes(self, kind: str) -> None:
        resources = _heat_call(
            self.listing.stack_id, f'listing {kind} resources with their '
            'attributes',
            lambda: self.heat.resources.list(
                self.listing.top, nested_depth=NESTED_DEPTH,
                with_detail=True, filters={'type': kind}))
        found = {}
        for resource in resources:
            # A Heat that ignores with_detail leaves them to single reads.
            if 'attributes' in vars(resource):
                row = heat_listing.to_row(resource)
                found[(row.stack, row.name)] = resource.attributes or {}
        with self._lock:
            for key, attrs in found.items():
                if key not in self.with_subnets:
                    self._cache.setdefault(key, attrs)

    def hosts(self, vms: list[_Vm]) -> tuple[Host, ...]:
        if len(vms) <= 1:
            return tuple(self.host(vm) for vm in vms)
        workers = min(MAX_PARALLEL_GETS, len(vms))
        with ThreadPoolExecutor(workers, 'heat-read') as pool:
            return tuple(pool.map(redact.carry(self.host), vms))

    def host(self, vm: _Vm) -> Host:
        nic_ip = self.address(vm.stack, vm.nic_cp)
        ssh_ip = self.address(vm.stack, vm.ssh_cp)
        server = vm.server or self.server_of_port(vm.stack, vm.nic_cp)
        attrs = self.attributes(vm.stack, server.name)
        is_fip = self.listing.find(vm.stack, vm.ssh_cp).type == \
            heat_listing.FLOATING_IP
        return Host(
            role=vm.role, server_id=server.physical_id,
            server_name=server.name, ssh_ip=ssh_ip, nic_ip=nic_ip,
            member_name=vm.member.name if vm.member else None,
            member_stack_id=vm.member.physical_id if vm.member else None,
            floating_ip=ssh_ip if is_fip else None,
            compute_host=attrs.get('OS-EXT-SRV-ATTR:host') or None,
            zone=attrs.get('OS-EXT-AZ:availability_zone') or None,
            server_groups=tuple(attrs.get('server_groups') or ()))

    def address(self, stack: str, name: str) -> str:
        """A port's fixed IP or a floating IP's address."""
        row = self.listing.require(stack, name, 'resource')
        attrs = self.attributes(stack, name)
        if row.type == heat_listing.FLOATING_IP:
            ip = attrs.get('floating_ip_address')
        else:
            ip = _fixed_ip(attrs)
        if not ip:
            raise TopologyError(f'{self.listing.describe(stack)}: '
                                f'{row.type} {name!r} has no IP address')
        return ip

    def server_of_port(self, stack: str, port: str) -> Row:
        """The server a port is attached to (top-level VMs)."""
        device = self.attributes(stack, port).get('device_id')
        servers = [r for r in self.listing.resources(stack).values()
                   if r.type == heat_listing.SERVER]
        for server in servers:
            if device and server.physical_id == device:
                return server
        # No device_id: fall back on the sample naming, <server>_CP<n>.
        named = [s for s in servers if port.startswith(f'{s.name}_')]
        if named:
            return max(named, key=lambda s: len(s.name))
        raise TopologyError(f'{self.listing.describe(stack)}: no server '
                            f'attached to {port!r}; '
                            f'{self.listing.contents(stack)}')

    def port_of(self, stack: str, name: str) -> str:
        """``name`` if it is a port, else the port a floating IP maps to."""
        row = self.listing.require(stack, name, 'resource')
        if row.type != heat_listing.FLOATING_IP:
            return name
        port_id = self.attributes(stack, name).get('port_id')
        for other in self.listing.resources(stack).values():
            if port_id and other.physical_id == port_id:
                return other.name
        return name


def _fixed_ip(attrs: dict) -> str | None:
    fixed = attrs.get('fixed_ips') or []
    return fixed[0].get('ip_address') if fixed else None


def _prefixlen(attrs: dict) -> int | None:
    """Prefix length of the subnet of the port's first fixed IP."""
    fixed = attrs.get('fixed_ips') or []
    subnet_id = fixed[0].get('subnet_id') if fixed else None
    for subnet in attrs.get('subnets') or []:
        if subnet.get('cidr') and subnet.get('id') in (subnet_id, None):
            return ipaddress.ip_network(subnet['cidr'],
                                        strict=False).prefixlen
    return None


# -- cluster address, storage ---------------------------------------------

def _cluster_stack(listing: Listing, master: _Vm, name: str,
                   what: str) -> str:
    """The stack holding ``name``: the top stack (HA VIP) or the first
    master's own stack (simple flavour)."""
    for stack in (listing.top, master.stack):
        if listing.find(stack, name) is not None:
            return stack
    raise TopologyError(
        f'stack {listing.stack_id}: {what} {name!r} not found in the top '
        f'stack ({listing.contents(listing.top)}) nor beside the first '
        f'master ({listing.contents(master.stack)})')


def _cluster_port(listing: Listing, master: _Vm, params: MasterParams
                  ) -> tuple[str, str]:
    """(stack, name) of the port that carries the cluster address."""
    name = params.cluster_cp_name or master.nic_cp
    return _cluster_stack(listing, master, name, 'cluster_cp_name'), name


def _cluster_fip(reader: _Reader, listing: Listing, master: _Vm,
                 params: MasterParams) -> str | None:
    name = params.cluster_fip_name
    if not name:
        return None
    return reader.address(
        _cluster_stack(listing, master, name, 'cluster_fip_name'), name)


def _read_storage(reader: _Reader, listing: Listing,
                  params: StorageServerParams) -> Host:
    listing.require(listing.top, params.ssh_cp_name,
                    'storage server ssh_cp_name')
    nic = reader.port_of(listing.top, params.ssh_cp_name)
    vm = _Vm(Role.STORAGE, listing.top, params.ssh_cp_name, nic, None)
    host = reader.host(vm)
    volumes = {v.volume_resource_id: _volume(
        reader, listing, v.volume_resource_id, host.server_id)
        for v in params.volumes}
    return dataclasses.replace(host, volumes=volumes)


def _volume(reader: _Reader, listing: Listing, name: str,
            server_id: str) -> Volume:
    """Volume ``name`` of the storage server: its Cinder id and size, and
    the device of its first attachment (a volume is attached to one
    server)."""
    row = listing.require(listing.top, name, 'volume')
    attrs = reader.attributes(listing.top, name)
    attachments = _attachments(attrs)
    if not attachments or not attachments[0].get('device'):
        raise TopologyError(f'stack {listing.stack_id}: volume {name!r} is '
                            'not attached to a server')
    first = attachments[0]
    if first.get('server_id') not in (None, server_id):
        raise TopologyError(
            f'stack {listing.stack_id}: volume {name!r} is attached to '
            f'server {first["server_id"]}, not to the storage server '
            f'{server_id}')
    volume_id = str(row.physical_id or attrs.get('id') or '')
    size = attrs.get('size')
    if not _VOLUME_ID.fullmatch(volume_id):
        raise TopologyError(
            f'stack {listing.stack_id}: volume {name!r} has no usable '
            f'Cinder id ({volume_id[:60]!r}): it cannot be identified '
            'inside the storage server')
    if isinstance(size, str) and size.isdigit():
        size = int(size)
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise TopologyError(
            f'stack {listing.stack_id}: volume {name!r} ({volume_id}) has '
            f'no size in GiB (Heat says {size!r}): its disk cannot be '
            'checked before it is formatted')
    return Volume(id=volume_id, size_gib=size, device=first['device'])


def _nfs_servers(reader: _Reader, listing: Listing,
                 params: ClusterParams) -> dict[str, str]:
    """IP of each ``nfs_server_cp`` (top-level ports)."""
    names = dict.fromkeys(r.nfs_server_cp for r in params.pv_registrations)
    return {name: reader.address(listing.top, name) for name in names}


def _attachments(attrs: dict) -> list[dict]:
    value = attrs.get('attachments_list') or attrs.get('attachments') or []
    if isinstance(value, str):
        # Heat's ``attachments`` attribute is the list's Python repr.
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return []
    return [a for a in value if isinstance(a, dict)]


# -- server groups ------------------------------------------------------------

def _server_groups(reader: _Reader, listing: Listing
                   ) -> tuple[ServerGroup, ...]:
    """Every ``OS::Nova::ServerGroup`` of the stack, nested ones too."""
    rows = [row for stack in listing.by_stack.values()
            for row in stack.values()
            if row.type == heat_listing.SERVER_GROUP]
    return tuple(_server_group(reader, row) for row in rows)


def _server_group(reader: _Reader, row: Row) -> ServerGroup:
    attrs = reader.attributes(row.stack, row.name)
    # Heat puts Nova's view under "show"; older policies is a list,
    # Nova >= 2.64 has one policy.
    show = attrs.get('show') if isinstance(attrs.get('show'), dict) \
        else attrs
    policies = show.get('policies') or (
        [show['policy']] if show.get('policy') else [])
    return ServerGroup(id=row.physical_id or str(show.get('id', '')),
                       name=row.name, policies=tuple(policies),
                       members=tuple(show.get('members') or ()))

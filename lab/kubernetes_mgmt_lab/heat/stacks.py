"""The lab's Heat stack, derived afresh from the lab state.

Mirrors the sample BaseHOT: one AutoScalingGroup per grouped layout, whose
nested stack holds one template resource per member, whose own nested stack
holds the server and its ports; ungrouped hosts (the storage server) and the
HA VIP port live in the top stack. ``floating_ips`` keys name a floating IP
resource: ``<resource>`` for one in the top stack (associated with the VIP
port, if any), ``<host name>/<resource>`` for one beside that host's server
(associated with its first port).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from kubernetes_mgmt_lab import placement
from kubernetes_mgmt_lab.heat import attributes, ids
from kubernetes_mgmt_lab.heat.attributes import Network, PortInfo
from kubernetes_mgmt_lab.state import GroupLayout, LabHost, LabState

SERVER = 'OS::Nova::Server'
PORT = 'OS::Neutron::Port'
VOLUME = 'OS::Cinder::Volume'
FLOATING_IP = 'OS::Neutron::FloatingIP'
GROUP = 'OS::Heat::AutoScalingGroup'
SERVER_GROUP = 'OS::Nova::ServerGroup'


@dataclass
class VResource:
    name: str
    type: str
    physical_id: str
    attributes: dict
    ordinal: int = 0                # creation order
    nested_id: str | None = None    # id of the nested stack it owns
    host: str | None = None         # the lab host it belongs to
    failed: bool = False            # marked unhealthy
    error: tuple[str, str] | None = None    # (status, reason) of a failure


@dataclass
class VStack:
    id: str
    name: str
    ordinal: int = 0
    parent_id: str | None = None
    parent_resource: str | None = None
    resources: dict[str, VResource] = field(default_factory=dict)

    def add(self, resource: VResource) -> VResource:
        self.resources[resource.name] = resource
        return resource


@dataclass
class StackTree:
    top: VStack
    stacks: dict[str, VStack]

    def lookup(self, name_or_id: str) -> VStack | None:
        """Find a stack by id or by name, as Heat's stack lookup does."""
        if name_or_id in self.stacks:
            return self.stacks[name_or_id]
        for stack in self.stacks.values():
            if stack.name == name_or_id:
                return stack
        return None

    def get(self, name: str, stack_id: str) -> VStack | None:
        stack = self.stacks.get(stack_id)
        return stack if stack and stack.name == name else None

    def walk(self, stack: VStack,
             depth: int) -> Iterator[tuple[VStack, VResource]]:
        """Resources of ``stack`` and of nested stacks ``depth`` deep."""
        for resource in stack.resources.values():
            yield stack, resource
            nested = self.stacks.get(resource.nested_id or '')
            if nested and depth > 0:
                yield from self.walk(nested, depth - 1)


def build(state: LabState) -> StackTree:
    return _Builder(state).build()


class _Builder:
    def __init__(self, state: LabState):
        self.state = state
        self.net = Network.of(state)
        self.top = VStack(id=state.stack_id, name=state.stack_name)
        self.stacks = {self.top.id: self.top}
        self.vip: PortInfo | None = None
        self.server_group_id = ids.uid('server_group', self.top.id,
                                       placement.ANTI_AFFINITY_GROUP)

    def build(self) -> StackTree:
        self._add_vip()
        self._add_server_group()
        for layout in self.state.layouts:
            if layout.group:
                self._add_group(layout)
        for ordinal, host in enumerate(self.state.hosts, start=1):
            layout = self._layout(host)
            if layout and not layout.group:
                self._add_host(self.top, host, layout, ordinal)
        self._add_floating_ips(self.top, None, self.vip)
        return StackTree(top=self.top, stacks=self.stacks)

    def _layout(self, host: LabHost) -> GroupLayout | None:
        try:
            return self.state.layout_for(host.role)
        except KeyError:  # a host the stack does not describe
            return None

    def _add_vip(self) -> None:
        if not self.state.vip:
            return
        name = self.state.vip_port
        self.vip = PortInfo(id=ids.uid('port', self.top.id, name),
                            name=name, ip=self.state.vip,
                            mac=ids.mac(self.top.id, name), device_id='')
        self.top.add(VResource(name, PORT, self.vip.id,
                               attributes.port(self.net, self.vip)))

    def _add_server_group(self) -> None:
        if not self.state.anti_affinity:
            return
        name = placement.ANTI_AFFINITY_GROUP
        members = [h.server_id for h in self.state.hosts
                   if placement.in_group(self.state, h)]
        # Named as the sample podaffinity HOT names it.
        self.top.add(VResource(name, SERVER_GROUP, self.server_group_id,
                               attributes.server_group(
                                   self.net, self.server_group_id,
                                   f'k8s-workers-{self.top.id}',
                                   placement.ANTI_AFFINITY_POLICY,
                                   members)))

    def _add_group(self, layout: GroupLayout) -> None:
        name = layout.group or ''
        group_stack = self._nested(self.top, name, ids.uid(
            'group', self.top.id, name), 0)
        members = []
        for ordinal, host in enumerate(self.state.hosts, start=1):
            if host.role != layout.role:
                continue
            member = host.member_name or ids.short_id('member', host.name)
            stack_id = host.member_stack_id or ids.uid('member', host.name)
            members.append((member, stack_id))
            self._add_member(group_stack, member, stack_id, host, layout,
                             ordinal)
        self.top.add(VResource(name, GROUP, group_stack.id,
                               attributes.group(members),
                               nested_id=group_stack.id))

    def _add_member(self, group_stack: VStack, member: str, stack_id: str,
                    host: LabHost, layout: GroupLayout,
                    ordinal: int) -> None:
        stack = self._nested(group_stack, member, stack_id, ordinal)
        group_stack.add(VResource(
            member, f'nested_{layout.role}.yaml', stack.id, {},
            ordinal=ordinal, nested_id=stack.id, host=host.name,
            failed=host.unhealthy))
        self._add_host(stack, host, layout, ordinal)

    def _nested(self, parent: VStack, resource: str, stack_id: str,
                ordinal: int) -> VStack:
        name = f'{parent.name}-{resource}-{ids.short_id(stack_id)}'
        stack = VStack(id=stack_id, name=name, ordinal=ordinal,
                       parent_id=parent.id, parent_resource=resource)
        self.stacks[stack.id] = stack
        return stack

    def _add_host(self, stack: VStack, host: LabHost, layout: GroupLayout,
                  ordinal: int) -> None:
        ports = [self._port_info(host, name) for name in layout.ports]
        vip = self.vip.ip if self.vip and host.role == 'master' else None
        for info in ports:
            stack.add(VResource(info.name, PORT, info.id,
                                attributes.port(self.net, info, vip),
                                ordinal=ordinal, host=host.name))
        volume_ids = [self._add_volume(stack, host, name, ordinal)
                      for name in layout.volumes]
        groups = [self.server_group_id] \
            if placement.in_group(self.state, host) else []
        stack.add(VResource(
            layout.server, SERVER, host.server_id,
            attributes.server(self.net, host, ports, volume_ids, groups,
                              admin=self.state.admin_view),
            ordinal=ordinal, host=host.name, failed=host.unhealthy))
        self._add_floating_ips(stack, host, ports[0] if ports else None)

    def _port_info(self, host: LabHost, name: str) -> PortInfo:
        key = (host.name, host.generation, name)
        return PortInfo(id=ids.uid('port', *key), name=name, ip=host.ip,
                        mac=ids.mac(*key), device_id=host.server_id)

    def _add_volume(self, stack: VStack, host: LabHost, name: str,
                    ordinal: int) -> str:
        volume_id = host.volume_ids.get(name) or ids.uid(
            'volume', host.name, name)
        # What Nova reports; the guest may name the disk otherwise.
        device = host.reported_devices.get(name) or \
            host.guest_devices.get(name, '/dev/vdb')
        stack.add(VResource(name, VOLUME, volume_id, attributes.volume(
            self.net, volume_id, name, device, host.server_id,
            size=host.volume_gib.get(name, 1)),
            ordinal=ordinal, host=host.name))
        return volume_id

    def _add_floating_ips(self, stack: VStack, host: LabHost | None,
                          target: PortInfo | None) -> None:
        prefix = f'{host.name}/' if host else ''
        for key, address in sorted(self.state.floating_ips.items()):
            name = key[len(prefix):] if key.startswith(prefix) else None
            if not name or '/' in name:
                continue
            fip_id = ids.uid('fip', stack.id, name)
            stack.add(VResource(
                name, FLOATING_IP, fip_id,
                attributes.floating_ip(self.net, fip_id, address, target),
                host=host.name if host else None))

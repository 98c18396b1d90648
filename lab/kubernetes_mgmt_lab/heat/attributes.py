"""Resource attributes as Heat shows them (Nova, Neutron, Cinder shapes).

Heat's resource show returns the underlying object as OpenStack's own API
shows it, plus a few Heat attributes (e.g. a port's ``subnets``). Only the
fields a client of this lab plausibly reads are filled in.
"""
from __future__ import annotations

from dataclasses import dataclass

from kubernetes_mgmt_lab.heat import ids
from kubernetes_mgmt_lab.state import LabHost, LabState


@dataclass(frozen=True)
class Network:
    """The lab bridge as one Neutron network with one subnet."""

    id: str
    name: str
    subnet_id: str
    cidr: str
    gateway: str
    tenant_id: str

    @classmethod
    def of(cls, state: LabState) -> Network:
        return cls(id=ids.uid('network', state.name, state.subnet),
                   name='net0',
                   subnet_id=ids.uid('subnet', state.name, state.subnet),
                   cidr=state.subnet, gateway=state.gateway,
                   tenant_id=state.tenant_id)

    def subnet(self) -> dict:
        return {'id': self.subnet_id, 'name': f'{self.name}-subnet',
                'network_id': self.id, 'cidr': self.cidr,
                'gateway_ip': self.gateway, 'ip_version': 4,
                'enable_dhcp': True, 'tenant_id': self.tenant_id}


@dataclass(frozen=True)
class PortInfo:
    id: str
    name: str
    ip: str
    mac: str
    device_id: str


def port(net: Network, info: PortInfo, vip: str | None = None) -> dict:
    pairs = [{'ip_address': vip, 'mac_address': info.mac}] if vip else []
    return {
        'id': info.id, 'name': info.name, 'network_id': net.id,
        'tenant_id': net.tenant_id, 'mac_address': info.mac,
        'admin_state_up': True, 'status': 'ACTIVE',
        'device_id': info.device_id,
        'device_owner': 'compute:nova' if info.device_id else '',
        'fixed_ips': [{'subnet_id': net.subnet_id, 'ip_address': info.ip}],
        'allowed_address_pairs': pairs,
        'subnets': [net.subnet()],
        'network': {'id': net.id, 'name': net.name},
    }


# What Nova shows only to admins (policy os_compute_api:os-extended-
# server-attributes).
ADMIN_ONLY = ('OS-EXT-SRV-ATTR:host', 'OS-EXT-SRV-ATTR:hypervisor_hostname',
              'OS-EXT-SRV-ATTR:hostname')


def server(net: Network, host: LabHost, ports: list[PortInfo],
           volume_ids: list[str], server_groups: list[str] | None = None,
           admin: bool = True) -> dict:
    addresses = [{'version': 4, 'addr': p.ip, 'OS-EXT-IPS:type': 'fixed',
                  'OS-EXT-IPS-MAC:mac_addr': p.mac} for p in ports]
    body = {
        'id': host.server_id, 'name': host.name, 'status': 'ACTIVE',
        'tenant_id': net.tenant_id, 'metadata': {},
        'addresses': {net.name: addresses} if addresses else {},
        'networks': {net.name: sorted({p.ip for p in ports})},
        'first_address': ports[0].ip if ports else '',
        'accessIPv4': '', 'accessIPv6': '',
        'OS-EXT-SRV-ATTR:host': host.compute_host,
        'OS-EXT-SRV-ATTR:hypervisor_hostname': host.compute_host,
        'OS-EXT-SRV-ATTR:hostname': host.name,
        'OS-EXT-AZ:availability_zone': host.zone,
        'OS-EXT-STS:vm_state': 'active',
        'os-extended-volumes:volumes_attached': [
            {'id': v} for v in volume_ids],
        # Nova API >= 2.71 shows the server's groups in its details.
        'server_groups': list(server_groups or []),
        'os_collect_config': {},
    }
    if not admin:
        for key in ADMIN_ONLY:
            del body[key]
    return body


def server_group(net: Network, group_id: str, name: str, policy: str,
                 members: list[str]) -> dict:
    """Nova's server group: ``policy`` and ``rules`` (API >= 2.64) and
    the older ``policies`` and ``metadata``."""
    return {'id': group_id, 'name': name, 'policy': policy,
            'policies': [policy], 'rules': {}, 'metadata': {},
            'members': list(members), 'project_id': net.tenant_id,
            'user_id': ids.uid('user', net.tenant_id)}


def volume(net: Network, volume_id: str, name: str, device: str,
           server_id: str, size: int = 1) -> dict:
    """Cinder's volume: ``size`` in GiB, ``device`` as Nova reports the
    attachment."""
    attachment = {'id': volume_id, 'volume_id': volume_id,
                  'attachment_id': ids.uid('attachment', volume_id,
                                           server_id),
                  'server_id': server_id, 'device': device,
                  'host_name': None}
    return {'id': volume_id, 'name': name, 'size': size,
            'status': 'in-use', 'bootable': 'false',
            'tenant_id': net.tenant_id,
            'attachments': [attachment],
            'attachments_list': [attachment]}


def floating_ip(net: Network, fip_id: str, address: str,
                target: PortInfo | None) -> dict:
    return {'id': fip_id, 'floating_ip_address': address,
            'floating_network_id': ids.uid('public', net.id),
            'fixed_ip_address': target.ip if target else None,
            'port_id': target.id if target else None,
            'status': 'ACTIVE' if target else 'DOWN',
            'tenant_id': net.tenant_id}


def group(members: list[tuple[str, str]]) -> dict:
    """An AutoScalingGroup; ``members`` are (resource name, stack id)."""
    return {'refs': [stack_id for _, stack_id in members],
            'refs_map': dict(members),
            'current_size': len(members),
            'outputs': {}, 'outputs_list': {}}

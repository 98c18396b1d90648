"""The lab's network: one Linux bridge on the machine, one network
namespace per host joined to it by a veth pair.

Only addresses inside the lab subnet are ever configured, and only links
and namespaces whose names carry the lab's prefix are ever deleted.
"""
from __future__ import annotations

import argparse
import ipaddress
import json
import re
import socket
from dataclasses import dataclass

from kubernetes_mgmt.remote.retry import wait_until
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.sysrun import run

DEFAULT_SUBNET = '10.10.0.0/24'
FIRST_HOST_OFFSET = 11   # .2-.10 left free for the machine's own needs
VIP_OFFSET = 100         # reserved for the HA virtual IP
_LAB_NAME = re.compile(r'^[a-z][a-z0-9]{0,7}$')
IFNAME_MAX = 15          # the kernel's limit on link names


def check_lab_name(name: str) -> str:
    # Short and plain, so '<name>v<index>' stays a valid link name.
    if not _LAB_NAME.match(name):
        raise LabError(f'lab name {name!r} must be 1-8 characters, '
                       'lower-case letters and digits, starting with a '
                       'letter')
    return name


def netns_name(lab: str, host: str) -> str:
    return f'{lab}-{host}'


def bridge_name(lab: str) -> str:
    return f'{lab}br0'


def veth_name(lab: str, index: int) -> str:
    name = f'{lab}v{index}'
    if len(name) > IFNAME_MAX:
        raise LabError(f'link name {name!r} is too long')
    return name


@dataclass(frozen=True)
class AddressPlan:
    """Which addresses of the lab subnet serve what."""

    subnet: ipaddress.IPv4Network
    first_host: int = FIRST_HOST_OFFSET
    vip_offset: int = VIP_OFFSET

    @classmethod
    def parse(cls, subnet: str) -> AddressPlan:
        try:
            net = ipaddress.ip_network(subnet, strict=True)
        except ValueError as exc:
            raise LabError(f'lab subnet {subnet!r} is invalid: {exc}') \
                from exc
        if not isinstance(net, ipaddress.IPv4Network) or not net.is_private:
            raise LabError(f'lab subnet {subnet} must be a private IPv4 '
                           'network')
        if net.prefixlen > 24:
            raise LabError(f'lab subnet {subnet} is too small; use /24 or '
                           'larger')
        return cls(net)

    @property
    def prefixlen(self) -> int:
        return self.subnet.prefixlen

    @property
    def gateway(self) -> str:
        return str(self.subnet[1])

    @property
    def vip(self) -> str:
        return str(self.subnet[self.vip_offset])

    def index(self, ip: str) -> int:
        """Position of ``ip`` in the subnet (names the host's veth)."""
        addr = ipaddress.ip_address(ip)
        if addr not in self.subnet:
            raise LabError(f'{ip} is outside the lab subnet {self.subnet}')
        return int(addr) - int(self.subnet.network_address)

    def allocate(self, used: set[str]) -> str:
        reserved = used | {self.gateway, self.vip}
        last = self.subnet.num_addresses - 2   # before the broadcast
        for offset in range(self.first_host, last + 1):
            ip = str(self.subnet[offset])
            if ip not in reserved:
                return ip
        raise LabError(f'no free address left in the lab subnet '
                       f'{self.subnet}')


def _ip_json(*args: str) -> list[dict]:
    out = run(['ip', '-j', *args]).stdout.strip()
    return json.loads(out) if out else []


def check_subnet_free(plan: AddressPlan, bridge: str) -> None:
    """Refuse a subnet that overlaps the machine's own addresses or routes
    (our own bridge excepted, so that a re-run is not refused)."""
    for link in _ip_json('-4', 'addr', 'show'):
        if link.get('ifname') == bridge:
            continue
        for addr in link.get('addr_info', []):
            net = ipaddress.ip_network(
                f"{addr['local']}/{addr['prefixlen']}", strict=False)
            if net.overlaps(plan.subnet):
                raise LabError(
                    f'lab subnet {plan.subnet} overlaps {net} on '
                    f"{link.get('ifname')}; choose another with --subnet")
    for route in _ip_json('-4', 'route', 'show'):
        dst = route.get('dst', 'default')
        if dst == 'default' or route.get('dev') == bridge:
            continue
        if ipaddress.ip_network(dst, strict=False).overlaps(plan.subnet):
            raise LabError(f'lab subnet {plan.subnet} overlaps the route '
                           f'to {dst}; choose another with --subnet')


def link_names() -> list[str]:
    return [link['ifname'] for link in _ip_json('link', 'show')]


def lab_links(lab: str) -> list[str]:
    """The lab's veths and bridge, found by name alone (works after a
    crash that lost the state file)."""
    pattern = re.compile(rf'^{re.escape(lab)}(v\d+|br0)$')
    return [name for name in link_names() if pattern.match(name)]


def netns_names() -> list[str]:
    out = run(['ip', 'netns', 'list']).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def lab_netns(lab: str) -> list[str]:
    prefix = f'{lab}-'
    return [name for name in netns_names() if name.startswith(prefix)]


def ensure_bridge(bridge: str, plan: AddressPlan) -> None:
    if bridge not in link_names():
        # A fixed MAC: by default a bridge takes the lowest MAC of its
        # ports, so it changes while hosts are plugged in and a host that
        # learnt the gateway's old MAC cannot reach it (the site mirror).
        run(['ip', 'link', 'add', bridge, 'address', host_mac(plan.gateway),
             'type', 'bridge'])
    cidr = f'{plan.gateway}/{plan.prefixlen}'
    present = run(['ip', '-4', '-o', 'addr', 'show', 'dev', bridge]).stdout
    if f' {cidr} ' not in present:
        run(['ip', 'addr', 'add', cidr, 'dev', bridge])
    run(['ip', 'link', 'set', bridge, 'up'])


def create_host_net(netns: str, veth: str, bridge: str, ip: str,
                    plan: AddressPlan) -> None:
    """A namespace whose eth0 is plugged into the lab bridge."""
    run(['ip', 'netns', 'add', netns])
    run(['ip', 'link', 'add', veth, 'type', 'veth',
         'peer', 'name', 'eth0', 'address', host_mac(ip), 'netns', netns])
    run(['ip', 'link', 'set', veth, 'master', bridge, 'up'])
    batch = '\n'.join([
        'link set lo up',
        f'addr add {ip}/{plan.prefixlen} dev eth0',
        'link set eth0 up',
        f'route add default via {plan.gateway}',
    ]) + '\n'
    run(['ip', '-n', netns, '-batch', '-'], input=batch)


def set_link_up(name: str, up: bool) -> None:
    """Carrier on or off for the lab side of a host's veth (a VM powered
    on or off: its NIC answers nothing while off)."""
    run(['ip', 'link', 'set', name, 'up' if up else 'down'])


def drop_extra_addresses(netns: str, ip: str) -> None:
    """Leave eth0 of ``netns`` with its own address only: a virtual IP
    that keepalived had added did not survive the VM's restart."""
    links = _ip_json('-n', netns, 'addr', 'show', 'dev', 'eth0')
    for link in links:
        for addr in link.get('addr_info', []):
            if addr.get('family') == 'inet' and addr.get('local') != ip:
                run(['ip', '-n', netns, 'addr', 'del',
                     f"{addr['local']}/{addr['prefixlen']}", 'dev', 'eth0'])


def host_mac(ip: str) -> str:
    """A MAC address derived from the IP: a host healed with the same
    address keeps its MAC (as a VM keeps its Neutron port), so no neighbour
    cache holds a stale entry for it."""
    octets = ipaddress.IPv4Address(ip).packed
    return '02:4b:' + ':'.join(f'{b:02x}' for b in octets)


def delete_link(name: str) -> None:
    if name in link_names():
        run(['ip', 'link', 'del', name], check=False)


def delete_netns(name: str) -> None:
    if name in netns_names():
        run(['ip', 'netns', 'del', name], check=False)


def port_open(ip: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((ip, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_port(ip: str, port: int, *, up: bool = True,
              deadline: float = 30.0) -> None:
    """Poll until ``ip:port`` accepts (or refuses) connections."""
    if not wait_until(lambda: port_open(ip, port, timeout=0.5) == up,
                      deadline=deadline):
        state = 'accept' if up else 'stop accepting'
        raise LabError(f'{ip}:{port} did not {state} connections '
                       f'within {deadline:g} s')


def free_port(ip: str, preferred: int) -> int:
    """``preferred`` if nothing listens on it at ``ip``, else any free one."""
    for port in (preferred, 0):
        with socket.socket() as sock:
            try:
                sock.bind((ip, port))
            except OSError:
                continue
            return sock.getsockname()[1]
    raise LabError(f'no free TCP port on {ip}')


def listen_address(value: str) -> tuple[str, int]:
    """``IP:PORT`` of a lab server's command line, as a bind address."""
    host, sep, port = value.rpartition(':')
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f'expected IP:PORT, got {value!r}')
    return host.strip('[]'), int(port)


def serve_until_stopped(server) -> int:
    """Serve a lab server process's requests until it is signalled."""
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0

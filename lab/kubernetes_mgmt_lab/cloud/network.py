"""Neutron v2.0: networks with one subnet each (a lab's bridge, see
bridges.py), ports with addresses from the subnet's address plan,
security groups and their rules, no floating IPs."""
from __future__ import annotations

import ipaddress

from kubernetes_mgmt_lab.cloud.api import (
    ApiError,
    Call,
    Reply,
    filtered,
    new_id,
    now,
    route,
)
from kubernetes_mgmt_lab.cloud.bridges import Bridges, check_cidr
from kubernetes_mgmt_lab.cloud.records import Records
from kubernetes_mgmt_lab.net import AddressPlan

# One network per lab (bridge): its VMs and emulated Kubernetes clusters.
NETWORK_NAMES = ('lab-net', 'lab-net-2')
# What Heat asks for by alias (has_extension) and a site has.
EXTENSIONS = ('allowed-address-pairs', 'binding', 'extra_dhcp_opt',
              'port-security', 'security-group', 'standard-attr-description',
              'standard-attr-tag', 'quotas', 'network-ip-availability')
_PORT_KEYS = ('name', 'description', 'admin_state_up', 'device_id',
              'device_owner', 'security_groups', 'allowed_address_pairs',
              'port_security_enabled', 'binding:vnic_type',
              'binding:profile', 'extra_dhcp_opts', 'mac_address', 'tags')


def _missing(kind: str, ident: str) -> ApiError:
    label = ''.join(w.capitalize() for w in kind.split('_'))
    return ApiError(404, f'{label}NotFound',
                    f'{kind.replace("_", " ").capitalize()} {ident} could '
                    'not be found.')


class Network:
    """Handlers of the network API over ``records``."""

    def __init__(self, records: Records, project_id: str,
                 bridges: Bridges):
        self.records = records
        self.project_id = project_id
        self.bridges = bridges

    # -- setup --------------------------------------------------------------

    def ensure_lab_network(self, name: str, lab_root: str,
                           subnet: str) -> dict:
        """The network (and subnet) of a lab made with the services."""
        for net in self.records.all('networks'):
            if net['name'] == name:
                if net['id'] not in self.bridges.machines:
                    self.bridges.adopt(net['id'], lab_root)
                return net
        plan = AddressPlan.parse(subnet)
        net_id, subnet_id = new_id(), new_id()
        with self.records.changing() as data:
            data['subnets'][subnet_id] = self._subnet(
                subnet_id, f'{name}-subnet', net_id, plan)
            data['networks'][net_id] = self._network(net_id, name)
            data['networks'][net_id]['subnets'] = [subnet_id]
        self.bridges.adopt(net_id, lab_root)
        return self.records.get('networks', net_id)

    def _network(self, net_id: str, name: str) -> dict:
        return self._stamp({
            'id': net_id, 'name': name, 'status': 'ACTIVE',
            'admin_state_up': True, 'shared': False, 'subnets': [],
            'mtu': 1500, 'router:external': False,
            'port_security_enabled': True, 'provider:network_type': 'flat'})

    def _subnet(self, subnet_id: str, name: str, net_id: str,
                plan: AddressPlan) -> dict:
        return self._stamp({
            'id': subnet_id, 'name': name, 'network_id': net_id,
            'cidr': str(plan.subnet), 'ip_version': 4,
            'gateway_ip': plan.gateway, 'enable_dhcp': False,
            'allocation_pools': [{'start': str(plan.subnet[plan.first_host]),
                                  'end': str(plan.subnet[-2])}],
            'dns_nameservers': [], 'host_routes': []})

    def _stamp(self, item: dict) -> dict:
        item.setdefault('project_id', self.project_id)
        item.setdefault('tenant_id', item['project_id'])
        item.setdefault('description', '')
        item.setdefault('tags', [])
        item.setdefault('created_at', now())
        item['updated_at'] = now()
        item.setdefault('revision_number', 1)
        return item

    # -- routes -------------------------------------------------------------

    def routes(self):
        return [
            route('GET', '/v2.0/extensions', self.extensions),
            route('GET', '/v2.0/networks', self.list_of('networks')),
            route('POST', '/v2.0/networks', self.create_network),
            route('GET', '/v2.0/networks/{id}', self.show_of('networks')),
            route('DELETE', '/v2.0/networks/{id}', self.delete_network),
            route('GET', '/v2.0/subnets', self.list_of('subnets')),
            route('POST', '/v2.0/subnets', self.create_subnet),
            route('GET', '/v2.0/subnets/{id}', self.show_of('subnets')),
            route('DELETE', '/v2.0/subnets/{id}', self.delete_subnet),
            route('GET', '/v2.0/ports', self.list_of('ports')),
            route('POST', '/v2.0/ports', self.create_port),
            route('GET', '/v2.0/ports/{id}', self.show_of('ports')),
            route('PUT', '/v2.0/ports/{id}', self.update_port),
            route('DELETE', '/v2.0/ports/{id}', self.delete_port),
            route('GET', '/v2.0/security-groups', self.list_groups),
            route('POST', '/v2.0/security-groups', self.create_group),
            route('GET', '/v2.0/security-groups/{id}', self.show_group),
            route('PUT', '/v2.0/security-groups/{id}', self.update_group),
            route('DELETE', '/v2.0/security-groups/{id}', self.delete_group),
            route('GET', '/v2.0/security-group-rules',
                  self.list_of('security_group_rules')),
            route('POST', '/v2.0/security-group-rules', self.create_rules),
            route('DELETE', '/v2.0/security-group-rules/{id}',
                  self.delete_rule),
            route('GET', '/v2.0/floatingips', self.no_floating_ips),
        ]

    def extensions(self, call: Call) -> Reply:
        return Reply(body={'extensions': [
            {'alias': a, 'name': a, 'description': a, 'links': [],
             'updated': '2013-01-01T00:00:00-00:00'} for a in EXTENSIONS]})

    def no_floating_ips(self, call: Call) -> Reply:
        return Reply(body={'floatingips': []})

    def list_of(self, kind: str):
        singular = kind.replace('_', '-')
        keys = ('id', 'name', 'network_id', 'device_id', 'device_owner',
                'security_group_id', 'mac_address', 'status', 'project_id',
                'tenant_id')

        def handler(call: Call) -> Reply:
            items = filtered(self.records.all(kind), call, keys)
            fields = call.query.get('fields')
            if fields:
                items = [{k: i.get(k) for k in fields} for i in items]
            return Reply(body={kind: items})
        handler.__name__ = f'list_{singular}'
        return handler

    def show_of(self, kind: str):
        one = kind[:-1]

        def handler(call: Call) -> Reply:
            return Reply(body={one: self._get(kind, call.args['id'])})
        return handler

    def _get(self, kind: str, ident: str) -> dict:
        item = self.records.get(kind, ident)
        if item is None:
            raise _missing(kind[:-1], ident)
        return item

    # -- networks and subnets -----------------------------------------------

    def create_network(self, call: Call) -> Reply:
        body = call.member('network')
        network = self._network(new_id(), str(body.get('name', '')))
        network.update({k: body[k] for k in ('description', 'tags',
                                              'admin_state_up',
                                              'port_security_enabled')
                        if k in body})
        with self.records.changing() as data:
            data['networks'][network['id']] = network
        return Reply(201, {'network': network})

    def delete_network(self, call: Call) -> Reply:
        network = self._get('networks', call.args['id'])
        self._refuse_if_used(network['id'], 'NetworkInUse',
                             f'network {network["id"]}')
        for subnet_id in network['subnets']:
            self._remove_subnet(network, subnet_id)
        with self.records.changing() as data:
            data['networks'].pop(network['id'], None)
        return Reply(204)

    def create_subnet(self, call: Call) -> Reply:
        body = call.member('subnet')
        network = self._get('networks', str(body.get('network_id')))
        if network['subnets']:
            raise ApiError(409, 'SubnetCreateFailed', 'each lab network '
                           'is one bridge: it has a subnet already')
        if str(body.get('ip_version', 4)) != '4':
            raise ApiError(400, 'InvalidInput', 'the lab serves IPv4 only')
        plan = check_cidr(str(body.get('cidr')))
        for other in self.records.all('subnets'):
            if plan.subnet.overlaps(ipaddress.ip_network(other['cidr'])):
                raise ApiError(409, 'SubnetCreateFailed',
                               f'{plan.subnet} overlaps subnet '
                               f'{other["id"]} ({other["cidr"]})')
        self.bridges.create(network['id'], str(plan.subnet))
        subnet = self._subnet(new_id(), str(body.get('name', '')),
                              network['id'], plan)
        with self.records.changing() as data:
            data['subnets'][subnet['id']] = subnet
            data['networks'][network['id']]['subnets'] = [subnet['id']]
        return Reply(201, {'subnet': subnet})

    def delete_subnet(self, call: Call) -> Reply:
        subnet = self._get('subnets', call.args['id'])
        self._refuse_if_used(subnet['network_id'], 'SubnetInUse',
                             f'subnet {subnet["id"]}')
        self._remove_subnet(self._get('networks', subnet['network_id']),
                            subnet['id'])
        return Reply(204)

    def _refuse_if_used(self, network_id: str, kind: str, what: str) -> None:
        ports = [p['id'] for p in self.records.all('ports')
                 if p['network_id'] == network_id]
        if ports:
            raise ApiError(409, kind, f'Unable to complete operation on '
                           f'{what}: one or more ports have an IP '
                           f'allocation from it ({", ".join(ports[:3])})')

    def _remove_subnet(self, network: dict, subnet_id: str) -> None:
        self.bridges.remove(network['id'])
        with self.records.changing() as data:
            data['subnets'].pop(subnet_id, None)
            data['networks'][network['id']]['subnets'] = []

    # -- ports --------------------------------------------------------------

    def create_port(self, call: Call) -> Reply:
        body = call.member('port')
        network = self._get('networks', str(body.get('network_id')))
        if not network['subnets']:
            raise ApiError(409, 'IpAddressGenerationFailure',
                           f'network {network["id"]} has no subnet: a '
                           'port of the lab needs an address')
        groups = body.get('security_groups')
        for group in groups or []:
            self._get('security_groups', group)
        with self.records.changing() as data:
            port_id = new_id()
            ip = self._address(data, network, body.get('fixed_ips'))
            port = self._stamp({
                'id': port_id, 'network_id': network['id'],
                'name': '', 'admin_state_up': True, 'status': 'DOWN',
                'mac_address': self._mac(data), 'device_id': '',
                'device_owner': '', 'allowed_address_pairs': [],
                'extra_dhcp_opts': [], 'port_security_enabled': True,
                'binding:vnic_type': 'normal', 'binding:host_id': '',
                'binding:profile': {}, 'binding:vif_type': 'unbound',
                'fixed_ips': [{'subnet_id': network['subnets'][0],
                               'ip_address': ip}]})
            port.update({k: body[k] for k in _PORT_KEYS if k in body})
            if groups is None:
                port['security_groups'] = []
            self._fill_pairs(port)
            data['ports'][port_id] = port
        return Reply(201, {'port': port})

    def _address(self, data: dict, network: dict,
                 fixed: list | None) -> str:
        plan = self.plan_of(network)
        used = {ip['ip_address'] for p in data['ports'].values()
                for ip in p['fixed_ips']}
        wanted = [f.get('ip_address') for f in fixed or []
                  if f.get('ip_address')]
        if wanted:
            ip = wanted[0]
            if ipaddress.ip_address(ip) not in plan.subnet:
                raise ApiError(400, 'InvalidIpForSubnet',
                               f'IP address {ip} is not a valid IP for the '
                               'specified subnet.')
            if ip in used:
                raise ApiError(409, 'IpAddressAlreadyAllocated',
                               f'IP address {ip} already allocated in '
                               'subnet.')
            return ip
        try:
            return plan.allocate(used)
        except Exception as exc:
            raise ApiError(409, 'IpAddressGenerationFailure',
                           'No more IP addresses available on network.'
                           ) from exc

    def plan_of(self, network: dict) -> AddressPlan:
        subnet = self.records.get('subnets', network['subnets'][0])
        return AddressPlan.parse(subnet['cidr'])

    @staticmethod
    def _mac(data: dict) -> str:
        used = {p['mac_address'] for p in data['ports'].values()}
        n = len(used)
        while True:
            mac = (f'fa:16:3e:{(n >> 16) & 255:02x}:{(n >> 8) & 255:02x}:'
                   f'{n & 255:02x}')
            if mac not in used:
                return mac
            n += 1

    @staticmethod
    def _fill_pairs(port: dict) -> None:
        for pair in port.get('allowed_address_pairs') or []:
            pair.setdefault('mac_address', port['mac_address'])

    def update_port(self, call: Call) -> Reply:
        body = call.member('port')
        with self.records.changing() as data:
            port = data['ports'].get(call.args['id'])
            if port is None:
                raise _missing('port', call.args['id'])
            port.update({k: body[k] for k in _PORT_KEYS if k in body})
            self._fill_pairs(port)
            port['revision_number'] += 1
            port['updated_at'] = now()
            return Reply(body={'port': dict(port)})

    def delete_port(self, call: Call) -> Reply:
        with self.records.changing() as data:
            if data['ports'].pop(call.args['id'], None) is None:
                raise _missing('port', call.args['id'])
        return Reply(204)

    def bind(self, port_id: str, server_id: str, host: str) -> dict:
        """Nova plugs the port into a server."""
        with self.records.changing() as data:
            port = data['ports'].get(port_id)
            if port is None:
                raise _missing('port', port_id)
            if port['device_id'] and port['device_id'] != server_id:
                raise ApiError(409, 'PortInUse',
                               f'Port {port_id} is still in use.')
            port.update({'device_id': server_id,
                         'device_owner': 'compute:nova', 'status': 'ACTIVE',
                         'binding:host_id': host, 'binding:vif_type': 'ovs'})
            return dict(port)

    def unbind(self, server_id: str) -> None:
        """Every port of a deleted server is free again."""
        with self.records.changing() as data:
            for port in data['ports'].values():
                if port['device_id'] == server_id:
                    _free(port)

    def unbind_port(self, port_id: str) -> None:
        with self.records.changing() as data:
            _free(data['ports'][port_id])

    # -- security groups ----------------------------------------------------

    def create_group(self, call: Call) -> Reply:
        body = call.member('security_group')
        group_id = new_id()
        with self.records.changing() as data:
            group = self._stamp({'id': group_id,
                                 'name': body.get('name', ''),
                                 'description': body.get('description', ''),
                                 'stateful': body.get('stateful', True)})
            data['security_groups'][group_id] = group
            for ethertype in ('IPv4', 'IPv6'):
                self._add_rule(data, {'security_group_id': group_id,
                                      'direction': 'egress',
                                      'ethertype': ethertype})
            return Reply(201, {'security_group': self._group(data,
                                                             group_id)})

    def _group(self, data: dict, group_id: str) -> dict:
        group = dict(data['security_groups'][group_id])
        group['security_group_rules'] = [
            dict(r) for r in data['security_group_rules'].values()
            if r['security_group_id'] == group_id]
        return group

    def show_group(self, call: Call) -> Reply:
        with self.records.reading() as data:
            if call.args['id'] not in data['security_groups']:
                raise _missing('security_group', call.args['id'])
            return Reply(body={'security_group': self._group(
                data, call.args['id'])})

    def list_groups(self, call: Call) -> Reply:
        with self.records.reading() as data:
            groups = [self._group(data, g) for g in data['security_groups']]
        return Reply(body={'security_groups': filtered(
            groups, call, ('id', 'name', 'project_id', 'tenant_id'))})

    def update_group(self, call: Call) -> Reply:
        body = call.member('security_group')
        with self.records.changing() as data:
            if call.args['id'] not in data['security_groups']:
                raise _missing('security_group', call.args['id'])
            group = data['security_groups'][call.args['id']]
            group.update({k: body[k] for k in ('name', 'description')
                          if k in body})
            return Reply(body={'security_group': self._group(
                data, call.args['id'])})

    def delete_group(self, call: Call) -> Reply:
        group_id = call.args['id']
        with self.records.changing() as data:
            if group_id not in data['security_groups']:
                raise _missing('security_group', group_id)
            users = [p['id'] for p in data['ports'].values()
                     if group_id in (p.get('security_groups') or [])]
            if users:
                raise ApiError(409, 'SecurityGroupInUse',
                               f'Security Group {group_id} in use.')
            del data['security_groups'][group_id]
            for rule_id in [r['id'] for r in
                            data['security_group_rules'].values()
                            if r['security_group_id'] == group_id]:
                del data['security_group_rules'][rule_id]
        return Reply(204)

    def create_rules(self, call: Call) -> Reply:
        if isinstance(call.body, dict) and 'security_group_rules' in \
                call.body:
            bodies, many = call.body['security_group_rules'], True
        else:
            bodies, many = [call.member('security_group_rule')], False
        with self.records.changing() as data:
            for body in bodies:
                if body.get('security_group_id') not in \
                        data['security_groups']:
                    raise _missing('security_group',
                                   str(body.get('security_group_id')))
            rules = [self._add_rule(data, body) for body in bodies]
        if many:
            return Reply(201, {'security_group_rules': rules})
        return Reply(201, {'security_group_rule': rules[0]})

    def _add_rule(self, data: dict, body: dict) -> dict:
        rule = self._stamp({
            'id': new_id(), 'direction': 'ingress', 'ethertype': 'IPv4',
            'protocol': None, 'port_range_min': None,
            'port_range_max': None, 'remote_ip_prefix': None,
            'remote_group_id': None, 'remote_address_group_id': None})
        rule.update({k: v for k, v in body.items() if k != 'id'})
        for key in ('port_range_min', 'port_range_max'):
            if rule[key] is not None:
                rule[key] = int(rule[key])
        data['security_group_rules'][rule['id']] = rule
        return dict(rule)

    def delete_rule(self, call: Call) -> Reply:
        with self.records.changing() as data:
            if data['security_group_rules'].pop(call.args['id'],
                                                None) is None:
                raise _missing('security_group_rule', call.args['id'])
        return Reply(204)


def _free(port: dict) -> None:
    port.update({'device_id': '', 'device_owner': '', 'status': 'DOWN',
                 'binding:host_id': '', 'binding:vif_type': 'unbound'})

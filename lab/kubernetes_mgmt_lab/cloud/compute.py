"""Nova v2.1: flavors, servers booted as lab VMs (in the background, as
Nova does: BUILD, then ACTIVE or ERROR with a fault) with the
cloud-config of their user data applied, their console output, server
groups with their policies kept by the scheduler, and volume
attachments."""
from __future__ import annotations

import re
import secrets
import threading
from collections.abc import Callable

from kubernetes_mgmt.redact import get_logger
from kubernetes_mgmt_lab.cloud.api import (
    ApiError,
    Call,
    Reply,
    filtered,
    new_id,
    not_found,
    now,
    route,
)
from kubernetes_mgmt_lab.cloud.machines import Disk, Machines
from kubernetes_mgmt_lab.cloud.network import Network
from kubernetes_mgmt_lab.cloud.records import Records
from kubernetes_mgmt_lab.cloud_init import (
    CloudConfig,
    UserDataError,
    parse_user_data,
)

LOG = get_logger(__name__)

MAX_VERSION = '2.79'
ZONE = 'nova'
# name: (id, vCPUs, RAM MiB, disk GiB)
FLAVORS = {'m1.tiny': ('1', 1, 512, 1), 'm1.small': ('2', 1, 2048, 20),
           'm1.medium': ('3', 2, 4096, 40), 'm1.large': ('4', 4, 8192, 80),
           'm1.xlarge': ('5', 8, 16384, 160)}
NO_VALID_HOST = ('No valid host was found. There are not enough hosts '
                 'available.')
# Kept with a server, never shown: the lab VM behind it, its network and
# the compute host claimed for it when it was scheduled.
HIDDEN = ('flavor_name', 'lab_host', 'lab_network', 'lab_claimed_host')
ADMIN_ONLY = 'OS-EXT-SRV-ATTR:'
AFFINITY_POLICIES = ('affinity', 'anti-affinity', 'soft-affinity',
                     'soft-anti-affinity')
CONSOLE_OUTPUT = 'os-getConsoleOutput'
# What Nova takes out of console output (all control characters but tab
# and line feed).
_CONTROL = re.compile('[\x00-\x08\x0b-\x1f]')
_LENGTH = re.compile(r'^-?[0-9]+$')


def microversion(call: Call) -> tuple[int, int]:
    raw = call.headers.get('openstack-api-version', '')
    value = raw.split()[-1] if raw.startswith('compute') else \
        call.headers.get('x-openstack-nova-api-version', '2.1')
    if value == 'latest':
        value = MAX_VERSION
    major, _, minor = value.partition('.')
    return int(major), int(minor or 0)


def version_doc(base: str) -> dict:
    return {'id': 'v2.1', 'status': 'CURRENT', 'version': MAX_VERSION,
            'min_version': '2.1', 'updated': '2013-07-23T11:33:21Z',
            'links': [{'rel': 'self', 'href': f'{base}/compute/v2.1/'}],
            'media-types': [{'base': 'application/json',
                             'type': 'application/vnd.openstack.compute+json;'
                                     'version=2.1'}]}


def _console_length(options: object) -> int | None:
    """The request's ``length``: an integer (or its digits) of at least
    -1, or null; None for all lines."""
    if not isinstance(options, dict) or set(options) - {'length'}:
        raise ApiError(400, 'badRequest', f'Invalid input for field/'
                       f'attribute {CONSOLE_OUTPUT}: an object with at '
                       'most "length" is required')
    length = options.get('length')
    if length is None:
        return None
    if isinstance(length, bool) or not (
            isinstance(length, int) or (isinstance(length, str)
                                        and _LENGTH.match(length))) \
            or int(length) < -1:
        raise ApiError(400, 'badRequest', 'Invalid input for field/'
                       f'attribute length. Value: {length}. not an '
                       'integer of at least -1')
    return None if int(length) == -1 else int(length)


def _claimed_host(server: dict) -> str | None:
    """The compute host a server holds: claimed when it was scheduled
    (records written before claims existed: the host it runs on)."""
    return server.get('lab_claimed_host') or server['OS-EXT-SRV-ATTR:host']


class Compute:
    """Handlers of the compute API."""

    def __init__(self, records: Records, network: Network,
                 machines: dict[str, Machines], compute_hosts: list[str],
                 project_id: str, user_id: str = 'lab'):
        self.records, self.network, self.machines = (records, network,
                                                     machines)
        self.compute_hosts = compute_hosts
        self.project_id, self.user_id = project_id, user_id
        self._spawn: Callable[[Callable[[], None]], None] = (
            lambda fn: threading.Thread(target=fn, daemon=True).start())

    def routes(self):
        return [
            route('GET', '', self.versions),
            route('GET', '/v2.1', self.version),
            route('GET', '/v2.1/flavors', self.list_flavors),
            route('GET', '/v2.1/flavors/detail', self.list_flavors),
            route('GET', '/v2.1/flavors/{id}', self.show_flavor),
            route('GET', '/v2.1/flavors/{id}/os-extra_specs',
                  self.extra_specs),
            route('GET', '/v2.1/limits', self.limits),
            route('GET', '/v2.1/os-availability-zone', self.zones),
            route('GET', '/v2.1/os-keypairs/{id}', self.no_keypair),
            route('POST', '/v2.1/servers', self.create_server),
            route('GET', '/v2.1/servers', self.list_servers),
            route('GET', '/v2.1/servers/detail', self.list_servers),
            route('GET', '/v2.1/servers/{id}', self.show_server),
            route('DELETE', '/v2.1/servers/{id}', self.delete_server),
            route('PUT', '/v2.1/servers/{id}', self.update_server),
            route('POST', '/v2.1/servers/{id}/action', self.server_action),
            route('GET', '/v2.1/servers/{id}/os-interface',
                  self.interfaces),
            route('POST', '/v2.1/servers/{id}/os-interface',
                  self.attach_interface),
            route('DELETE', '/v2.1/servers/{id}/os-interface/{port}',
                  self.detach_interface),
            route('GET', '/v2.1/servers/{id}/os-volume_attachments',
                  self.attachments),
            route('GET', '/v2.1/servers/{id}/metadata', self.metadata),
            route('POST', '/v2.1/servers/{id}/metadata',
                  self.update_metadata),
            route('GET', '/v2.1/os-server-groups', self.list_groups),
            route('POST', '/v2.1/os-server-groups', self.create_group),
            route('GET', '/v2.1/os-server-groups/{id}', self.show_group),
            route('DELETE', '/v2.1/os-server-groups/{id}',
                  self.delete_group),
        ]

    # -- versions, flavors, misc --------------------------------------------

    def versions(self, call: Call) -> Reply:
        return Reply(300, {'versions': [version_doc(call.base_url)]})

    def version(self, call: Call) -> Reply:
        return Reply(body={'version': version_doc(call.base_url)})

    @staticmethod
    def _flavor(name: str, base: str) -> dict:
        ident, vcpus, ram, disk = FLAVORS[name]
        return {'id': ident, 'name': name, 'vcpus': vcpus, 'ram': ram,
                'disk': disk, 'OS-FLV-EXT-DATA:ephemeral': 0, 'swap': '',
                'rxtx_factor': 1.0, 'os-flavor-access:is_public': True,
                'OS-FLV-DISABLED:disabled': False, 'description': None,
                'extra_specs': {},
                'links': [{'rel': 'self',
                           'href': f'{base}/compute/v2.1/flavors/{ident}'}]}

    def _find_flavor(self, ref: str) -> str:
        for name, spec in FLAVORS.items():
            if ref in (name, spec[0]) or ref.rstrip('/').endswith(
                    f'/flavors/{spec[0]}'):
                return name
        raise ApiError(400, 'badRequest', f'Flavor {ref} could not be '
                       'found.')

    def list_flavors(self, call: Call) -> Reply:
        return Reply(body={'flavors': [self._flavor(n, call.base_url)
                                       for n in FLAVORS]})

    def show_flavor(self, call: Call) -> Reply:
        for name, spec in FLAVORS.items():
            if call.args['id'] in (spec[0], name):
                return Reply(body={'flavor': self._flavor(name,
                                                          call.base_url)})
        raise not_found('Flavor', call.args['id'])

    def extra_specs(self, call: Call) -> Reply:
        self.show_flavor(call)
        return Reply(body={'extra_specs': {}})

    def limits(self, call: Call) -> Reply:
        return Reply(body={'limits': {'rate': [], 'absolute': {
            'maxServerMeta': 128, 'maxPersonality': 5,
            'maxPersonalitySize': 10240, 'maxImageMeta': 128,
            'maxTotalInstances': 100, 'maxTotalCores': 200,
            'maxTotalRAMSize': 512000, 'maxServerGroups': 10,
            'maxServerGroupMembers': 16, 'maxTotalKeypairs': 100,
            'totalInstancesUsed': len(self.records.all('servers')),
            'totalCoresUsed': 0, 'totalRAMUsed': 0,
            'totalServerGroupsUsed': len(self.records.all(
                'server_groups'))}}})

    def zones(self, call: Call) -> Reply:
        return Reply(body={'availabilityZoneInfo': [
            {'zoneName': ZONE, 'zoneState': {'available': True},
             'hosts': None}]})

    def no_keypair(self, call: Call) -> Reply:
        raise not_found('Keypair', call.args['id'])

    # -- server groups ------------------------------------------------------

    def create_group(self, call: Call) -> Reply:
        body = call.member('server_group')
        policies = body.get('policies') or [body.get('policy')]
        if len(policies) != 1 or policies[0] not in AFFINITY_POLICIES:
            raise ApiError(400, 'badRequest',
                           f'Invalid input for field/attribute policies: '
                           f'{policies}')
        group = {'id': new_id(), 'name': body.get('name', ''),
                 'policies': policies, 'policy': policies[0], 'rules': {},
                 'members': [], 'metadata': {},
                 'project_id': self.project_id, 'user_id': self.user_id}
        with self.records.changing() as data:
            data['server_groups'][group['id']] = group
        return Reply(body={'server_group': group})

    def _get_group(self, ident: str) -> dict:
        group = self.records.get('server_groups', ident)
        if group is None:
            raise not_found('Instance group', ident)
        return group

    def show_group(self, call: Call) -> Reply:
        return Reply(body={'server_group': self._get_group(
            call.args['id'])})

    def list_groups(self, call: Call) -> Reply:
        return Reply(body={'server_groups': self.records.all(
            'server_groups')})

    def delete_group(self, call: Call) -> Reply:
        with self.records.changing() as data:
            if data['server_groups'].pop(call.args['id'], None) is None:
                raise not_found('Instance group', call.args['id'])
        return Reply(204)

    # -- servers: create ----------------------------------------------------

    def create_server(self, call: Call) -> Reply:
        body = call.member('server')
        try:
            # Read once, here: the boot applies it.
            config = parse_user_data(body.get('user_data'))
        except UserDataError as exc:
            raise ApiError(400, 'badRequest', str(exc)) from None
        flavor = self._find_flavor(str(body.get('flavorRef', '')))
        ports = self._ports(body)
        disks = self._disks(body)
        hints = (call.body.get('os:scheduler_hints')
                 or call.body.get('OS-SCH-HNT:scheduler_hints') or {})
        group_id = hints.get('group')
        if group_id:
            self._get_group(group_id)
        server_id = new_id()
        server = self._new_server(call, server_id, body, flavor)
        with self.records.changing() as data:
            data['servers'][server_id] = server
            if group_id:
                data['server_groups'][group_id]['members'].append(server_id)
        bound = [self.network.bind(p, server_id, '') for p in ports]
        self._set_volumes(server_id, [d.volume_id for d in disks],
                          'attaching')
        # adminPass is the VM user's password, and the user data may
        # carry private host keys: neither is kept in the records.
        admin_pass = body.get('adminPass')
        self._spawn(lambda: self._boot(server_id, bound, disks, group_id,
                                       admin_pass, config))
        return Reply(202, {'server': {
            'id': server_id, 'links': server['links'],
            'OS-DCF:diskConfig': 'MANUAL',
            'security_groups': server['security_groups'],
            'adminPass': admin_pass or secrets.token_urlsafe(9)}})

    def _new_server(self, call: Call, server_id: str, body: dict,
                    flavor: str) -> dict:
        href = f'{call.base_url}/compute/v2.1/servers/{server_id}'
        return {
            'id': server_id, 'name': str(body.get('name') or server_id),
            'status': 'BUILD', 'tenant_id': self.project_id,
            'user_id': self.user_id, 'metadata': body.get('metadata') or {},
            'hostId': '', 'image': {'id': body.get('imageRef', '')},
            'flavor_name': flavor, 'created': now(), 'updated': now(),
            'addresses': {}, 'accessIPv4': '', 'accessIPv6': '',
            'links': [{'rel': 'self', 'href': href}],
            'OS-DCF:diskConfig': 'MANUAL', 'progress': 0,
            'OS-EXT-AZ:availability_zone': body.get('availability_zone')
            or ZONE,
            'config_drive': '', 'key_name': body.get('key_name'),
            'OS-SRV-USG:launched_at': None,
            'OS-SRV-USG:terminated_at': None,
            'OS-EXT-SRV-ATTR:host': None,
            'OS-EXT-SRV-ATTR:hypervisor_hostname': None,
            'OS-EXT-SRV-ATTR:instance_name': '',
            'OS-EXT-STS:task_state': 'spawning',
            'OS-EXT-STS:vm_state': 'building',
            'OS-EXT-STS:power_state': 0,
            'os-extended-volumes:volumes_attached': [],
            'security_groups': [{'name': g.get('name', 'default')} for g in
                                body.get('security_groups') or []]
            or [{'name': 'default'}],
            'tags': [], 'locked': False, 'description': None,
            'lab_host': None, 'lab_network': None, 'lab_claimed_host': None}

    def _ports(self, body: dict) -> list[str]:
        ports = []
        for nic in body.get('networks') or []:
            port = nic.get('port') if isinstance(nic, dict) else None
            if not port:
                raise ApiError(400, 'badRequest',
                               'the lab boots servers on existing ports '
                               'only ("networks": [{"port": ...}])')
            if self.records.get('ports', port) is None:
                raise ApiError(400, 'badRequest',
                               f'Port id {port} could not be found.')
            ports.append(port)
        if not ports:
            raise ApiError(400, 'badRequest', 'a server needs a port')
        return ports

    def _disks(self, body: dict) -> list[Disk]:
        disks = []
        for bdm in body.get('block_device_mapping_v2') or []:
            if bdm.get('source_type') == 'image' and \
                    bdm.get('destination_type', 'local') == 'local':
                continue    # the root disk from the image (novaclient's)
            if bdm.get('source_type') != 'volume' or \
                    bdm.get('boot_index') not in (None, -1, '-1'):
                raise ApiError(400, 'badRequest',
                               'the lab attaches data volumes only '
                               '(source_type volume, boot_index -1)')
            volume = self.records.get('volumes', str(bdm.get('uuid')))
            if volume is None:
                raise ApiError(400, 'badRequest',
                               f'Volume {bdm.get("uuid")} could not be '
                               'found.')
            if volume['status'] != 'available':
                raise ApiError(400, 'badRequest',
                               f'Volume {volume["id"]} is '
                               f'{volume["status"]}, not available.')
            name = bdm.get('device_name') or 'vdb'
            device = name if name.startswith('/dev/') else f'/dev/{name}'
            disks.append(Disk(volume['id'], int(volume['size']), device))
        return disks

    def _boot(self, server_id: str, ports: list[dict], disks: list[Disk],
              group_id: str | None, admin_pass: str | None,
              config: CloudConfig | None = None) -> None:
        try:
            compute_host = self._schedule(server_id, group_id)
            ip = ports[0]['fixed_ips'][0]['ip_address']
            machines = self.machines[ports[0]['network_id']]
            name = machines.boot(server_id, ip, compute_host, ZONE, disks,
                                 admin_pass, config)
        except Exception as exc:
            LOG.warning('cloud: server %s failed to boot: %s', server_id,
                        exc)
            self._fail(server_id, exc)
            return
        self._activate(server_id, name, ports[0]['network_id'],
                       compute_host, ports, disks)

    def _schedule(self, server_id: str, group_id: str | None) -> str:
        """The compute host, as Nova's filters would choose it, claimed
        for ``server_id`` at once (as Placement does) so that servers
        booting side by side see each other's hosts."""
        with self.records.changing() as data:
            claims = {s['id']: _claimed_host(s)
                      for s in data['servers'].values()
                      if _claimed_host(s) and s['id'] != server_id}
            load = {h: 0 for h in self.compute_hosts}
            for host in claims.values():
                load[host] = load.get(host, 0) + 1
            candidates = list(self.compute_hosts)
            if group_id:
                group = data['server_groups'].get(group_id)
                if group is None:
                    raise not_found('Instance group', group_id)
                peers = {host for ident, host in claims.items()
                         if ident in group['members']}
                if group['policy'] == 'anti-affinity':
                    candidates = [h for h in candidates if h not in peers]
                elif group['policy'] == 'affinity' and peers:
                    candidates = [h for h in candidates if h in peers]
            if not candidates:
                raise ApiError(500, 'NoValidHost', NO_VALID_HOST)
            chosen = min(candidates, key=lambda h: (load.get(h, 0),
                                                    candidates.index(h)))
            if server_id in data['servers']:
                data['servers'][server_id]['lab_claimed_host'] = chosen
            return chosen

    def _fail(self, server_id: str, exc: Exception) -> None:
        message = exc.message if isinstance(exc, ApiError) else str(exc)
        with self.records.changing() as data:
            server = data['servers'].get(server_id)
            if server is None:
                return
            server.update({'status': 'ERROR', 'updated': now(),
                           'OS-EXT-STS:vm_state': 'error',
                           'OS-EXT-STS:task_state': None,
                           'lab_claimed_host': None,
                           'fault': {'code': 500, 'message': message,
                                     'created': now()}})

    def _activate(self, server_id: str, name: str, network_id: str,
                  compute_host: str, ports: list[dict],
                  disks: list[Disk]) -> None:
        addresses: dict[str, list[dict]] = {}
        for port in ports:
            net = self.records.get('networks', port['network_id'])
            addresses.setdefault(net['name'], []).extend(
                {'version': 4, 'addr': ip['ip_address'],
                 'OS-EXT-IPS:type': 'fixed',
                 'OS-EXT-IPS-MAC:mac_addr': port['mac_address']}
                for ip in port['fixed_ips'])
        with self.records.changing() as data:
            server = data['servers'].get(server_id)
            machines = self.machines[network_id]
            if server is None:      # deleted while it booted
                self._spawn(lambda: machines.destroy(name))
                return
            server.update({
                'status': 'ACTIVE', 'updated': now(), 'progress': 100,
                'addresses': addresses, 'lab_host': name,
                'lab_network': network_id,
                'hostId': compute_host, 'OS-EXT-SRV-ATTR:host': compute_host,
                'OS-EXT-SRV-ATTR:hypervisor_hostname': compute_host,
                'OS-EXT-SRV-ATTR:instance_name': name,
                'OS-SRV-USG:launched_at': now(),
                'OS-EXT-STS:task_state': None,
                'OS-EXT-STS:vm_state': 'active',
                'OS-EXT-STS:power_state': 1,
                'os-extended-volumes:volumes_attached': [
                    {'id': d.volume_id, 'delete_on_termination': False}
                    for d in disks]})
            for disk in disks:
                volume = data['volumes'][disk.volume_id]
                volume['status'] = 'in-use'
                volume['attachments'] = [{
                    'id': disk.volume_id, 'attachment_id': new_id(),
                    'volume_id': disk.volume_id, 'server_id': server_id,
                    'host_name': compute_host, 'device': disk.device,
                    'attached_at': now()}]

    def _set_volumes(self, server_id: str, volume_ids: list[str],
                     status: str) -> None:
        with self.records.changing() as data:
            for volume_id in volume_ids:
                volume = data['volumes'].get(volume_id)
                if volume is not None:
                    volume['status'] = status
                    if status == 'available':
                        volume['attachments'] = []

    # -- servers: read, change, delete --------------------------------------

    def _get_server(self, ident: str) -> dict:
        server = self.records.get('servers', ident)
        if server is None:
            raise not_found('Instance', ident)
        return server

    def _shown(self, server: dict, call: Call) -> dict:
        # Nova's default policy shows where a server runs to admins only.
        shown = {k: v for k, v in server.items()
                 if k not in HIDDEN and (
                     call.admin or not k.startswith(ADMIN_ONLY))}
        flavor = self._flavor(server['flavor_name'], call.base_url)
        if microversion(call) >= (2, 47):
            shown['flavor'] = {'original_name': flavor['name'],
                               'vcpus': flavor['vcpus'],
                               'ram': flavor['ram'], 'disk': flavor['disk'],
                               'ephemeral': 0, 'swap': 0,
                               'extra_specs': {}}
        else:
            shown['flavor'] = {'id': flavor['id'],
                               'links': flavor['links']}
        return shown

    def show_server(self, call: Call) -> Reply:
        return Reply(body={'server': self._shown(
            self._get_server(call.args['id']), call)})

    def list_servers(self, call: Call) -> Reply:
        servers = filtered(self.records.all('servers'), call,
                           ('status', 'id'))
        name = call.arg('name')
        if name:
            servers = [s for s in servers if re.search(name, s['name'])]
        if call.path.endswith('/detail'):
            return Reply(body={'servers': [self._shown(s, call)
                                           for s in servers]})
        return Reply(body={'servers': [
            {'id': s['id'], 'name': s['name'], 'links': s['links']}
            for s in servers]})

    def update_server(self, call: Call) -> Reply:
        body = call.member('server')
        with self.records.changing() as data:
            server = data['servers'].get(call.args['id'])
            if server is None:
                raise not_found('Instance', call.args['id'])
            if 'name' in body:
                server['name'] = str(body['name'])
            server['updated'] = now()
            shown = dict(server)
        return Reply(body={'server': self._shown(shown, call)})

    def server_action(self, call: Call) -> Reply:
        if not isinstance(call.body, dict) or len(call.body) != 1:
            raise ApiError(400, 'badRequest', 'the body must be a JSON '
                           'object with one action')
        (action,) = call.body
        if action != CONSOLE_OUTPUT:
            raise ApiError(404, 'itemNotFound', f'the lab does not serve '
                           f'the server action {action}')
        return self.console_output(call)

    def console_output(self, call: Call) -> Reply:
        """The last ``length`` lines of the server's console log (all of
        it for null or -1); 409 while the server has no host (it is being
        built, or failed before it had one), as Nova."""
        length = _console_length(call.body[CONSOLE_OUTPUT])
        server = self._get_server(call.args['id'])
        if not server['lab_host']:
            raise ApiError(409, 'conflictingRequest',
                           f'Instance {server["id"]} is not ready')
        output = self.machines[server['lab_network']].console_log(
            server['lab_host'])
        if output is None:
            raise ApiError(404, 'itemNotFound',
                           'Guest does not have a console available.')
        if length is not None:
            output = '\n'.join(output.split('\n')[-length:]) \
                if length else ''
        return Reply(body={'output': _CONTROL.sub('', output)})

    def metadata(self, call: Call) -> Reply:
        return Reply(body={'metadata': self._get_server(
            call.args['id'])['metadata']})

    def update_metadata(self, call: Call) -> Reply:
        meta = call.body.get('metadata') if isinstance(call.body,
                                                       dict) else None
        if not isinstance(meta, dict):
            raise ApiError(400, 'badRequest', 'metadata must be an object')
        with self.records.changing() as data:
            server = data['servers'].get(call.args['id'])
            if server is None:
                raise not_found('Instance', call.args['id'])
            server['metadata'].update(meta)
            return Reply(body={'metadata': dict(server['metadata'])})

    def interfaces(self, call: Call) -> Reply:
        server = self._get_server(call.args['id'])
        ports = [p for p in self.records.all('ports')
                 if p['device_id'] == server['id']]
        return Reply(body={'interfaceAttachments': [
            {'port_id': p['id'], 'net_id': p['network_id'],
             'mac_addr': p['mac_address'], 'port_state': p['status'],
             'fixed_ips': p['fixed_ips']} for p in ports]})

    def detach_interface(self, call: Call) -> Reply:
        """Heat frees a server's ports before it replaces the server, so
        that the new one can take them."""
        server = self._get_server(call.args['id'])
        port = self.records.get('ports', call.args['port'])
        if port is None or port['device_id'] != server['id']:
            raise ApiError(404, 'itemNotFound',
                           f'Port {call.args["port"]} is not attached')
        self.network.unbind_port(port['id'])
        with self.records.changing() as data:     # Heat checks these
            addresses = data['servers'][server['id']]['addresses']
            for net, found in list(addresses.items()):
                kept = [a for a in found if a.get('OS-EXT-IPS-MAC:mac_addr')
                        != port['mac_address']]
                if kept:
                    addresses[net] = kept
                else:
                    del addresses[net]
        if server['lab_host'] and server['lab_network'] == \
                port['network_id']:
            self.machines[port['network_id']].unplug(server['lab_host'])
        return Reply(202)

    def attach_interface(self, call: Call) -> Reply:
        """Binds the port to the server (the lab VM keeps the network it
        booted with: a re-attached port is not plugged in again)."""
        server = self._get_server(call.args['id'])
        body = call.member('interfaceAttachment')
        port = self.network.bind(str(body.get('port_id')), server['id'],
                                 server['OS-EXT-SRV-ATTR:host'] or '')
        return Reply(200, {'interfaceAttachment': {
            'port_id': port['id'], 'net_id': port['network_id'],
            'mac_addr': port['mac_address'], 'port_state': port['status'],
            'fixed_ips': port['fixed_ips']}})

    def attachments(self, call: Call) -> Reply:
        server = self._get_server(call.args['id'])
        found = []
        for volume in self.records.all('volumes'):
            for att in volume.get('attachments') or []:
                if att['server_id'] == server['id']:
                    found.append({'id': volume['id'],
                                  'volumeId': volume['id'],
                                  'serverId': server['id'],
                                  'device': att['device']})
        return Reply(body={'volumeAttachments': found})

    def delete_server(self, call: Call) -> Reply:
        server_id = call.args['id']
        with self.records.changing() as data:
            server = data['servers'].get(server_id)
            if server is None:
                raise not_found('Instance', server_id)
            server['OS-EXT-STS:task_state'] = 'deleting'
        self._spawn(lambda: self._delete(server_id))
        return Reply(204)

    def _delete(self, server_id: str) -> None:
        server = self.records.get('servers', server_id)
        if server is None:
            return
        try:
            if server['lab_host']:
                self.machines[server['lab_network']].destroy(
                    server['lab_host'])
        except Exception as exc:
            LOG.warning('cloud: removing server %s failed: %s', server_id,
                        exc)
            self._fail(server_id, exc)
            return
        volume_ids = [v['id'] for v in
                      server['os-extended-volumes:volumes_attached']]
        self._set_volumes(server_id, volume_ids, 'available')
        self.network.unbind(server_id)
        with self.records.changing() as data:
            data['servers'].pop(server_id, None)
            for group in data['server_groups'].values():
                if server_id in group['members']:
                    group['members'].remove(server_id)

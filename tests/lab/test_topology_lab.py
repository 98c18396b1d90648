"""Reading a VNF's hosts from Heat (``kubernetes_mgmt.topology.heat``),
against real stacks of the session's services.

Real: Keystone, Heat (its resource listings with nested group and member
stacks, the redirect of an id-only stack URL, resource attributes, stack
updates, 401s), the sample package's BaseHOT. Emulated: the lab cloud
behind Heat (Nova, Neutron, Cinder): servers are lab VMs, volumes loop
devices. The lab cloud has no floating IPs, so a provider template that
the stack's environment registers as ``OS::Neutron::FloatingIP`` stands
in for Neutron's: Heat lists and shows it as that type, with the
address given to it.

Three stacks are made at once for the module and deleted at its end: the
``simple`` flavour with its storage server (one worker, then two more by
a scale-out), the ``complex`` flavour (two masters behind the VIP), and
``shapes``, a template of this module for what the samples do not have.
"""
from __future__ import annotations

import contextlib
import ipaddress
import json
import secrets
import types
from concurrent.futures import ThreadPoolExecutor, wait

import pytest
import yaml
from heatclient import client as heatclient

from kubernetes_mgmt import redact
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import TopologyError
from kubernetes_mgmt.params.cluster_params import (
    ClusterParams,
    MasterParams,
    NodeGroupParams,
    StorageServerParams,
    VolumeSetup,
)
from kubernetes_mgmt.topology.heat import read_members, read_topology
from kubernetes_mgmt.topology.heat_client import heat_client_for
from kubernetes_mgmt.topology.hosts import Role, Volume
from kubernetes_mgmt_lab import conf as lab_conf
from kubernetes_mgmt_lab.openstack import access, vnf_stack, vnf_templates
from kubernetes_mgmt_lab.openstack.vnf_templates import Layout
from kubernetes_mgmt_lab.testing import free_subnet, unavailable_reason

pytestmark = pytest.mark.lab

SCALE_OUT = 2          # workers the simple stack's scale-out adds
SSH_FIP = '172.24.4.11'
CLUSTER_FIP = '172.24.4.10'


# -- request parameters -------------------------------------------------

def params(storage: bool = False, volume: str = 'storage_server_volume',
           master_aspect: str | None = 'master_instance',
           worker_aspect: str | None = 'worker_instance',
           worker_nic: str = 'workerNode_CP2',
           **master) -> ClusterParams:
    """What the request names, as the sample packages' requests do (the
    reader needs no password: it never logs in)."""
    login = {'username': 'ubuntu', 'password': 'unused-here'}
    master = {'ssh_cp_name': 'masterNode_CP1',
              'nic_cp_name': 'masterNode_CP1',
              'cluster_cp_name': 'masterNode_CP1',
              'aspect_id': master_aspect, **login, **master}
    store = StorageServerParams(
        ssh_cp_name='storage_server_CP', **login,
        volumes=(VolumeSetup(volume, '/volume'),))
    return ClusterParams(
        script_path='Scripts/install_k8s_cluster.sh',
        master=MasterParams(**master),
        worker=NodeGroupParams(ssh_cp_name='workerNode_CP2',
                               nic_cp_name=worker_nic,
                               aspect_id=worker_aspect, **login),
        storage_server=store if storage else None)


# -- the shapes stack ---------------------------------------------------

# Top-level servers (no groups), floating IPs, a 2 GiB volume on vdc, a
# "volume" without a size, an empty group, and a group whose members are
# named against their creation order ('aaa' comes with a stack update).
SHAPES = '''
heat_template_version: 2018-08-31
parameters:
  network: {type: string}
  image: {type: string}
  flavor: {type: string}
  second: {type: boolean, default: false}
  ssh_fip_address: {type: string}
  cluster_fip_address: {type: string}
resources:
  masterNode_CP1:
    type: OS::Neutron::Port
    properties: {network: {get_param: network}}
  masterNode:
    type: OS::Nova::Server
    properties:
      name: shape-master
      flavor: {get_param: flavor}
      image: {get_param: image}
      networks: [{port: {get_resource: masterNode_CP1}}]
  masterNode_FloatingIP:
    type: OS::Neutron::FloatingIP
    properties:
      floating_network: public
      port_id: {get_resource: masterNode_CP1}
      floating_ip_address: {get_param: ssh_fip_address}
  cluster_fip:
    type: OS::Neutron::FloatingIP
    properties:
      floating_network: public
      port_id: {get_resource: masterNode_CP1}
      floating_ip_address: {get_param: cluster_fip_address}
  workerNode_CP2:
    type: OS::Neutron::Port
    properties: {network: {get_param: network}}
  workerNode:
    type: OS::Nova::Server
    properties:
      name: shape-worker
      flavor: {get_param: flavor}
      image: {get_param: image}
      networks: [{port: {get_resource: workerNode_CP2}}]
  storage_server_CP:
    type: OS::Neutron::Port
    properties: {network: {get_param: network}}
  storage_server_volume:
    type: OS::Cinder::Volume
    properties: {size: 2}
  storage_server:
    type: OS::Nova::Server
    properties:
      name: shape-storage
      flavor: {get_param: flavor}
      image: {get_param: image}
      networks: [{port: {get_resource: storage_server_CP}}]
      block_device_mapping_v2:
        - {device_name: vdc, boot_index: -1,
           volume_id: {get_resource: storage_server_volume}}
  sizeless_volume:
    type: sizeless.yaml
    properties: {server: {get_resource: storage_server}}
  empty_group:
    type: OS::Heat::AutoScalingGroup
    properties:
      min_size: 0
      max_size: 1
      desired_capacity: 0
      resource: {type: OS::Heat::None}
  ordered_group:
    type: group.yaml
    properties:
      network: {get_param: network}
      image: {get_param: image}
      flavor: {get_param: flavor}
      second: {get_param: second}
'''
NODE = '''
  network: {type: string}
  image: {type: string}
  flavor: {type: string}
'''
GROUP = f'''
heat_template_version: 2018-08-31
parameters:{NODE}  second: {{type: boolean}}
conditions:
  with_second: {{get_param: second}}
resources:
  zzz:
    type: member.yaml
    properties: &node
      network: {{get_param: network}}
      image: {{get_param: image}}
      flavor: {{get_param: flavor}}
  aaa:
    type: member.yaml
    condition: with_second
    properties: *node
'''
MEMBER = f'''
heat_template_version: 2018-08-31
parameters:{NODE}
resources:
  workerNode_CP2:
    type: OS::Neutron::Port
    properties: {{network: {{get_param: network}}}}
  workerNode:
    type: OS::Nova::Server
    properties:
      flavor: {{get_param: flavor}}
      image: {{get_param: image}}
      networks: [{{port: {{get_resource: workerNode_CP2}}}}]
'''
# Heat holds a provider template for OS::Neutron::FloatingIP to that
# type's properties and attributes.
FLOATING_IP = '''
heat_template_version: 2018-08-31
parameters:
  floating_network: {type: string}
  port_id: {type: string}
  floating_ip_address: {type: string}
outputs:
  floating_ip_address: {value: {get_param: floating_ip_address}}
  port_id: {value: {get_param: port_id}}
  floating_network_id: {value: {get_param: floating_network}}
  fixed_ip_address: {value: null}
  router_id: {value: null}
  tenant_id: {value: null}
'''
# Attached like a volume, but Heat says nothing of its size.
SIZELESS = '''
heat_template_version: 2018-08-31
parameters:
  server: {type: string}
outputs:
  attachments:
    value: [{server_id: {get_param: server}, device: /dev/vdd}]
'''


@contextlib.contextmanager
def shapes_stack(site: access.Site, subnet: str):
    """The shapes stack on a network of its own, its second ordered member
    added by a stack update; deleted with the network at the end."""
    conn = site.connection()
    name = 'kt' + secrets.token_hex(3)
    network = conn.network.create_network(name=name)
    try:
        conn.network.create_subnet(network_id=network.id, cidr=subnet,
                                   ip_version=4, name=f'{name}-subnet')
        heat = site.heat()
        created = heat.stacks.create(
            stack_name=f'shapes_{name}', template=yaml.safe_load(SHAPES),
            files={'group.yaml': GROUP, 'member.yaml': MEMBER,
                   'floating_ip.yaml': FLOATING_IP,
                   'sizeless.yaml': SIZELESS},
            environment={'resource_registry': {
                'OS::Neutron::FloatingIP': 'floating_ip.yaml'}},
            parameters={'network': network.id, 'flavor': vnf_templates.FLAVOR,
                        'image': vnf_stack.ensure_image(site),
                        'ssh_fip_address': SSH_FIP,
                        'cluster_fip_address': CLUSTER_FIP})
        stack_id = created['stack']['id']
        try:
            vnf_stack.wait(heat, stack_id, 'CREATE')
            heat.stacks.update(stack_id, existing=True,
                               parameters={'second': 'true'})
            vnf_stack.wait(heat, stack_id, 'UPDATE')
            yield types.SimpleNamespace(
                stack_id=stack_id,
                servers={s.name: s for s in conn.compute.servers()
                         if s.name.startswith('shape-')
                         and network.name in s.addresses})
        finally:
            vnf_stack.delete_stack(site, stack_id)
    finally:
        vnf_stack.down_network(site, network.id)


# -- the sample stacks --------------------------------------------------

@contextlib.contextmanager
def vnf_lab(site: access.Site, layout: Layout, subnet: str):
    """testing.stack_lab, on a subnet chosen by the caller."""
    lab = vnf_stack.up(site.root.path, layout, 'kt' + secrets.token_hex(3),
                       subnet)
    try:
        yield lab
    finally:
        vnf_stack.down(lab)


@contextlib.contextmanager
def scaled_out_simple(site: access.Site, subnet: str):
    """The simple flavour with its storage server and one worker, then
    SCALE_OUT workers more by a stack update of the nfv parameter, as
    Tacker scales; yields the lab and the new members' stack ids (what
    Tacker passes as scale_out_id_list)."""
    with vnf_lab(site, Layout(1, 1, storage=True), subnet) as lab:
        heat, stack_id = site.heat(), lab.state.stack_id
        before = {h.member_stack_id for h in lab.state.hosts}
        nfv = json.loads(heat.stacks.get(stack_id).parameters['nfv'])
        nfv['VDU']['workerNode']['desired_capacity'] += SCALE_OUT
        heat.stacks.update(stack_id, existing=True,
                           parameters={'nfv': json.dumps(nfv)})
        vnf_stack.wait(heat, stack_id, 'UPDATE')
        vnf_stack.sync_hosts(lab, heat, stack_id)
        yield lab, [h.member_stack_id for h in lab.state.hosts
                    if h.member_stack_id not in before]


def distinct_subnets(count: int) -> list[str]:
    """Free subnets for networks made at once: free_subnet() sees only
    the bridges that exist, and the lab cloud refuses overlaps."""
    chosen: set[str] = set()
    for _ in range(50):
        chosen.add(free_subnet())
        if len(chosen) == count:
            return sorted(chosen)
    raise RuntimeError(f'fewer than {count} free subnets for test labs')


@contextlib.contextmanager
def all_at_once(*managers):
    """Enter and leave the context managers in threads of their own:
    each stack is seconds of waiting on Heat and the lab cloud."""
    with ThreadPoolExecutor(len(managers), 'topology-lab') as pool:
        entering = [redact.submit(pool, m.__enter__) for m in managers]
        wait(entering)
        entered = [m for m, f in zip(managers, entering, strict=True)
                   if f.exception() is None]
        try:
            yield [f.result() for f in entering]
        finally:
            leaving = [redact.submit(pool, m.__exit__, None, None, None)
                       for m in entered]
            for f in leaving:
                f.result()


@pytest.fixture(scope='module')
def stacks(site):
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    where = access.Site.of(site)
    subnets = distinct_subnets(3)
    with all_at_once(scaled_out_simple(where, subnets[0]),
                     vnf_lab(where, Layout(2, 1), subnets[1]),
                     shapes_stack(where, subnets[2])) as made:
        (simple, new_members), ha, shapes = made
        yield types.SimpleNamespace(site=where, simple=simple, ha=ha,
                                    new_members=new_members, shapes=shapes)


@pytest.fixture(scope='module')
def heat(stacks):
    return stacks.site.heat()


@pytest.fixture
def simple(stacks):
    return stacks.simple


@pytest.fixture
def shapes(stacks):
    return stacks.shapes


def hosts(lab, role: str) -> list:
    """The lab's VMs of a role, in the order sync_hosts gave them."""
    return [h for h in lab.state.hosts if h.role == role]


def prefixlen(lab) -> int:
    return ipaddress.ip_network(lab.state.subnet).prefixlen


def counting_heat(site: access.Site):
    """A heatclient and the list of Heat's HTTP responses it receives
    (redirects included; Keystone's left out)."""
    heat = access.heat_client(site.auth())
    heat_url = heat.http_client.get_endpoint()
    served = []

    def seen(response, *args, **kwargs):
        if response.url.startswith(heat_url):
            served.append(response)
    heat.http_client.session.session.hooks['response'].append(seen)
    return heat, served


def top_resources(heat, stack_id: str) -> str:
    names = sorted(r.resource_name for r in heat.resources.list(stack_id))
    return 'resources are: ' + ', '.join(names)


# -- the sample flavours ------------------------------------------------

def test_simple_flavour(heat, simple):
    topology = read_topology(heat, simple.state.stack_id, params())
    master, = topology.masters
    lab_master, = hosts(simple, 'master')
    assert (master.role, master.ssh_ip, master.nic_ip) == (
        Role.MASTER, lab_master.ip, lab_master.ip)
    assert master.server_id == lab_master.server_id
    assert master.server_name == 'masterNode'
    assert master.member_name == lab_master.member_name
    assert master.member_stack_id == lab_master.member_stack_id
    assert (master.compute_host, master.zone) == (
        lab_master.compute_host, lab_master.zone)
    assert master.compute_host and master.zone
    assert master.server_groups == ()
    assert master.floating_ip is None
    workers = hosts(simple, 'worker')
    assert len(workers) == 1 + SCALE_OUT
    assert [w.ssh_ip for w in topology.workers] == [w.ip for w in workers]
    assert [w.member_stack_id for w in topology.workers] == [
        w.member_stack_id for w in workers]
    assert topology.cluster_ip == lab_master.ip
    # The stack has a storage server, but this request names none.
    assert topology.storage is None and topology.cluster_fip is None
    assert not topology.is_ha
    assert topology.stack_id == simple.state.stack_id


def unbound_ips(stacks, lab) -> list[str]:
    """Neutron's addresses of the lab network's ports no server uses."""
    ports = stacks.site.connection().network.ports(
        network_id=lab.state.network_id)
    return [ip['ip_address'] for port in ports if not port.device_id
            for ip in port.fixed_ips]


def test_ha_flavour_uses_the_vip(heat, stacks):
    ha = stacks.ha
    topology = read_topology(heat, ha.state.stack_id,
                             params(cluster_cp_name='vip_CP'))
    masters = [h.ip for h in hosts(ha, 'master')]
    assert [m.nic_ip for m in topology.masters] == masters
    assert len(masters) == 2
    assert len(topology.workers) == len(hosts(ha, 'worker')) == 1
    vip, = unbound_ips(stacks, ha)
    assert topology.cluster_ip == vip
    assert topology.is_ha


@pytest.mark.parametrize('flavour, cluster_port', [
    ('simple', 'masterNode_CP1'), ('ha', 'vip_CP')])
def test_cluster_prefixlen_is_the_subnets(heat, stacks, flavour,
                                          cluster_port):
    lab = getattr(stacks, flavour)
    topology = read_topology(heat, lab.state.stack_id,
                             params(cluster_cp_name=cluster_port))
    assert topology.cluster_prefixlen == prefixlen(lab)


def cinder_volume(stacks, volume_id: str):
    return stacks.site.connection().block_storage.get_volume(volume_id)


def test_storage_server_with_volume(heat, stacks, simple):
    topology = read_topology(heat, simple.state.stack_id,
                             params(storage=True))
    storage = topology.storage
    lab_storage, = hosts(simple, 'storage')
    volume_id = lab_storage.volume_ids['storage_server_volume']
    cinder = cinder_volume(stacks, volume_id)
    assert storage.role == Role.STORAGE
    assert storage.ssh_ip == lab_storage.ip
    assert storage.server_id == lab_storage.server_id
    assert storage.server_name == 'storage_server'
    assert storage.member_name is None
    assert storage.volumes == {'storage_server_volume': Volume(
        id=volume_id, size_gib=cinder.size,
        device=cinder.attachments[0]['device'])}
    assert topology.hosts[-1] is storage


def test_volume_carries_cinder_id_size_and_novas_device(heat, stacks,
                                                        shapes):
    topology = read_topology(heat, shapes.stack_id, params(
        storage=True, master_aspect=None, worker_aspect=None))
    volume = topology.storage.volumes['storage_server_volume']
    cinder = cinder_volume(stacks, volume.id)
    attachment, = cinder.attachments
    assert attachment['server_id'] == topology.storage.server_id
    # Not the sample's 1 GiB on vdb: the values come from this volume.
    assert (volume.size_gib, volume.device) == (2, '/dev/vdc')
    assert volume == Volume(id=cinder.id, size_gib=cinder.size,
                            device=attachment['device'])


def test_volume_without_a_size_is_refused(heat, shapes):
    sizeless = heat.resources.get(shapes.stack_id, 'sizeless_volume')
    with pytest.raises(TopologyError) as info:
        read_topology(heat, shapes.stack_id, params(
            storage=True, volume='sizeless_volume', master_aspect=None,
            worker_aspect=None))
    assert "volume 'sizeless_volume' (" + sizeless.physical_resource_id + \
        ') has no size in GiB' in str(info.value)


def test_floating_ips_for_ssh_and_cluster(heat, shapes):
    topology = read_topology(heat, shapes.stack_id, params(
        master_aspect=None, worker_aspect=None,
        ssh_cp_name='masterNode_FloatingIP', cluster_fip_name='cluster_fip'))
    master, = topology.masters
    fixed = shapes.servers['shape-master'].addresses
    port_ip, = [a['addr'] for nets in fixed.values() for a in nets]
    assert (master.ssh_ip, master.nic_ip, master.floating_ip) == (
        SSH_FIP, port_ip, SSH_FIP)
    assert topology.cluster_fip == CLUSTER_FIP
    assert topology.cluster_ip == port_ip


def test_members_follow_creation_order_not_names(heat, shapes):
    listing = {r.resource_name: r for r in heat.resources.list(
        shapes.stack_id, nested_depth=1)}
    # What makes the test worth running: 'aaa' sorts first but was made
    # later, by the stack update.
    assert listing['zzz'].creation_time < listing['aaa'].creation_time
    topology = read_topology(heat, shapes.stack_id, params(
        master_aspect=None, worker_aspect='ordered_group'))
    assert [w.member_name for w in topology.workers] == ['zzz', 'aaa']
    assert [w.member_stack_id for w in topology.workers] == [
        listing[n].physical_resource_id for n in ('zzz', 'aaa')]


def test_top_level_servers_without_groups(heat, shapes):
    topology = read_topology(heat, shapes.stack_id, params(
        master_aspect=None, worker_aspect=None))

    def nova(name):
        server = shapes.servers[name]
        ip, = [a['addr'] for nets in server.addresses.values()
               for a in nets]
        return server.id, ip
    assert [(h.server_name, h.server_id, h.ssh_ip) for h in topology.hosts] \
        == [('masterNode', *nova('shape-master')),
            ('workerNode', *nova('shape-worker'))]
    assert topology.masters[0].member_name is None


# -- what it costs ------------------------------------------------------

@pytest.mark.parametrize('flavour, request_params, singles', [
    # the cluster port (the first master's nic: its subnets) and the volume
    pytest.param('simple', params(storage=True), 2, id='storage'),
    # the VIP port (its subnets)
    pytest.param('ha', params(cluster_cp_name='vip_CP'), 1, id='vip'),
])
def test_http_calls_do_not_grow_with_the_vms(stacks, flavour,
                                             request_params, singles):
    heat, served = counting_heat(stacks.site)
    lab = getattr(stacks, flavour)
    topology = read_topology(heat, lab.state.stack_id, request_params)
    urls = [r.url for r in served]
    assert len(topology.hosts) >= 3
    # 2 for the listing (Heat redirects the id-only URL to name/id), one
    # detailed listing for the servers and one for the ports, then the
    # resources whose attributes no listing shows.
    assert len(urls) == 2 + 2 + singles
    assert sum('with_detail=True' in u for u in urls) == 2
    assert len(set(urls)) == len(urls)      # nothing fetched twice
    assert [r.status_code for r in served].count(302) == 1
    assert all(r.status_code in (200, 302) for r in served)


def test_simple_flavour_fetches_the_cluster_port_once(stacks, simple):
    heat, served = counting_heat(stacks.site)
    topology = read_topology(heat, simple.state.stack_id, params())
    nic = '/resources/masterNode_CP1'
    assert topology.cluster_prefixlen == prefixlen(simple)
    assert [r.url.split('?')[0].endswith(nic) for r in served].count(
        True) == 1
    assert len(served) == 2 + 2 + 1


def test_full_stack_identifier_avoids_the_redirect(stacks, simple):
    heat, served = counting_heat(stacks.site)
    state = simple.state
    read_topology(heat, f'{state.stack_name}/{state.stack_id}', params())
    assert len(served) == 1 + 2 + 1
    assert all(r.status_code == 200 for r in served)


# -- errors -------------------------------------------------------------

def test_missing_group_names_stack_and_resources(heat, simple):
    stack_id = simple.state.stack_id
    with pytest.raises(TopologyError) as caught:
        read_topology(heat, stack_id, params(master_aspect='masters'))
    message = str(caught.value)
    assert f'stack {stack_id}' in message
    assert "group 'masters' not found" in message
    assert top_resources(heat, stack_id) in message
    assert 'master_instance' in message and 'worker_instance' in message


def test_missing_port_names_member_and_resources(heat, simple):
    first = hosts(simple, 'worker')[0]
    with pytest.raises(TopologyError) as caught:
        read_topology(heat, simple.state.stack_id,
                      params(worker_nic='workerNode_CP9'))
    message = str(caught.value)
    assert (f"member '{first.member_name}' of group 'worker_instance'"
            in message)
    assert "'workerNode_CP9'" in message
    assert top_resources(heat, first.member_stack_id) in message
    assert 'workerNode, workerNode_CP2' in message


def test_missing_cluster_port(heat, simple):
    with pytest.raises(TopologyError, match="cluster_cp_name 'vip_CP' not "
                                            'found'):
        read_topology(heat, simple.state.stack_id,
                      params(cluster_cp_name='vip_CP'))


def test_unknown_stack(heat, stacks):
    with pytest.raises(TopologyError, match=r'stack nope: .*not found'):
        read_topology(heat, 'nope', params())


def test_wrong_token(heat, simple):
    """Heat itself answers 401 to a token Keystone does not know."""
    endpoint = heat.http_client.get_endpoint()
    wrong = heatclient.Client('1', endpoint=endpoint, token='wrong')
    with pytest.raises(TopologyError, match='Authentication failed'):
        read_topology(wrong, simple.state.stack_id, params())


def test_wrong_password(stacks, simple):
    wrong = access.heat_client({**stacks.site.auth(),
                                   'password': 'wrong-password'})
    with pytest.raises(TopologyError, match=r'Authentication failed|'
                                            r'requires authentication'):
        read_topology(wrong, simple.state.stack_id, params())


def test_no_members_in_master_group(heat, shapes):
    with pytest.raises(TopologyError, match='no master VM'):
        read_topology(heat, shapes.stack_id,
                      params(master_aspect='empty_group'))


# -- scale-out ----------------------------------------------------------

def test_read_members_of_a_scale_out(heat, stacks, simple):
    stack_id = simple.state.stack_id
    new = stacks.new_members
    assert len(new) == SCALE_OUT
    # Asked in the other order, given in Heat's member order.
    found = read_members(heat, stack_id, params(), new[::-1])
    expected = [h for h in hosts(simple, 'worker')
                if h.member_stack_id in new]
    assert [h.member_stack_id for h in found] == new
    assert [h.nic_ip for h in found] == [h.ip for h in expected]
    with pytest.raises(TopologyError, match='no group member with '
                                            'stack id gone'):
        read_members(heat, stack_id, params(), ['gone'])


# -- the lab's client factory -------------------------------------------

@pytest.fixture
def lab_heat_client():
    """Sets heat_client = lab with Keystone credentials (a keystone_auth
    dict); every override undone at the end."""
    options = {'heat_auth_url': 'auth_url', 'heat_username': 'username',
               'heat_password': 'password', 'heat_project': 'project_name'}

    def configure(auth: dict[str, str]) -> None:
        CONF.set_override('heat_client', 'lab', group='kubernetes_mgmt')
        for name, key in options.items():
            CONF.set_override(name, auth[key], group=lab_conf.GROUP)
    yield configure
    CONF.clear_override('heat_client', group='kubernetes_mgmt')
    for name in options:
        CONF.clear_override(name, group=lab_conf.GROUP)


def test_client_for_configured_keystone(stacks, simple, lab_heat_client):
    """heat_client = lab: the lab's factory, Keystone and credentials
    from the lab's own option group."""
    lab_heat_client(stacks.site.auth())
    heat = heat_client_for(types.SimpleNamespace(vim_connection_info=[]))
    state = simple.state
    assert heat.stacks.get(state.stack_id).stack_name == state.stack_name


def test_params_name_what_the_lab_request_names(simple):
    """The request these tests build names what driving's request body
    names for the same lab (so both read the same resources)."""
    from kubernetes_mgmt_lab import driving

    body = driving.request_body(simple)['additionalParams'][
        'k8s_cluster_installation_param']
    ours = params(storage=True)
    for key, group in (('master_node', ours.master),
                       ('worker_node', ours.worker)):
        for field in ('aspect_id', 'ssh_cp_name', 'nic_cp_name'):
            assert body[key][field] == getattr(group, field)
    assert body['master_node']['cluster_cp_name'] == \
        ours.master.cluster_cp_name
    assert body['storage_server']['ssh_cp_name'] == \
        ours.storage_server.ssh_cp_name
    assert [v['volume_resource_id'] for v in body['storage_server'][
        'cinder_volume_setup_params']] == [
        v.volume_resource_id for v in ours.storage_server.volumes]

"""A VNF's stack in the services' real Heat, on a network of its own, as
Tacker's OpenStack infra driver leaves it: what tests that call the
driver's hooks directly (and the benchmarks) run against.

The stack is the sample package's BaseHOT of the flavour the layout
needs (vnf_templates.py: ``complex`` for several masters, ``podaffinity``
for workers in an anti-affinity group, else ``simple``), with the groups'
sizes freed (the driver never reads them) and the ``nfv`` parameter
Tacker's user data would pass. Its servers are lab VMs that the lab cloud
boots on the network's own bridge: the lab at ``cloud/labs/<name>`` of
the services root, whose hosts get the role of the VDU behind them.
"""
from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass

from kubernetes_mgmt import redact
from kubernetes_mgmt.remote.retry import poll
from kubernetes_mgmt_lab import state as lab_state
from kubernetes_mgmt_lab.cloud.bridges import lab_name
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.manager import ROLES, Lab, default_layouts
from kubernetes_mgmt_lab.openstack import cloud
from kubernetes_mgmt_lab.openstack.access import Site
from kubernetes_mgmt_lab.openstack.vnf_templates import (
    Layout,
    stack_inputs,
)

LOG = redact.get_logger(__name__)
IMAGE_NAME = 'kubernetes-mgmt-lab-vm'
VIP_PORT = 'vip_CP'
STACK_TIMEOUT = 300.0
# A stack GET costs Heat milliseconds; a long pause between two would
# add seconds to every scale and heal the tests drive.
POLL_CEILING = 0.5


# -- the stack ----------------------------------------------------------------

def create_stack(site: Site, name: str, layout: Layout, network_id: str,
                 image_id: str) -> str:
    """Create the VNF's stack and wait for it; its id. A stack Heat fails
    to create is deleted (its ports would keep the network)."""
    top, files, params = stack_inputs(layout, image_id, network_id)
    heat = site.heat()
    created = heat.stacks.create(stack_name=name, template=top,
                                 files=files, parameters=params)
    stack_id = created['stack']['id']
    try:
        wait(heat, stack_id, 'CREATE')
    except BaseException:
        delete_stack(site, stack_id)
        raise
    return stack_id


def wait(heat, stack_id: str, action: str) -> None:
    """Until Heat ends ``action`` on the stack; its reason if it failed."""
    def settled():
        stack = heat.stacks.get(stack_id)
        return None if stack.stack_status.endswith('_IN_PROGRESS') \
            else stack
    stack = poll(settled, deadline=STACK_TIMEOUT,
                 what=f'stack {stack_id} {action}', ceiling=POLL_CEILING)
    if stack.stack_status != f'{action}_COMPLETE':
        raise LabError(f'stack {stack_id}: {stack.stack_status}: '
                       f'{stack.stack_status_reason}')


def delete_stack(site: Site, stack_id: str) -> None:
    from heatclient import exc

    heat = site.heat()
    heat.stacks.delete(stack_id)

    def gone():
        try:
            stack = heat.stacks.get(stack_id)
        except exc.HTTPNotFound:
            return True
        if stack.stack_status == 'DELETE_FAILED':
            raise LabError(f'stack {stack_id}: DELETE_FAILED: '
                           f'{stack.stack_status_reason}')
        # Heat sets DELETE_COMPLETE a moment before it removes the stack
        # from its list (seen on a loaded CI machine): wait for both.
        return stack.stack_status == 'DELETE_COMPLETE' and not list(
            heat.stacks.list(filters={'id': stack_id}))
    poll(gone, deadline=STACK_TIMEOUT, what=f'stack {stack_id} DELETE',
         ceiling=POLL_CEILING)


# -- which VM is which ------------------------------------------------------

@dataclass(frozen=True)
class Member:
    """A server of the stack, as Heat knows it."""

    server_id: str
    role: str
    member_name: str | None
    member_stack_id: str | None
    volume_ids: dict[str, str]
    created: str = ''


def members(heat, top: dict) -> Iterator[Member]:
    """The stack's servers: group members (by the group's resources) and
    servers of the top stack (``top``: its resources by name)."""
    for layout in default_layouts():
        if layout.group and layout.group in top:
            group = top[layout.group].physical_resource_id
            for member in heat.resources.list(group):
                server = heat.resources.get(member.physical_resource_id,
                                            layout.server)
                yield Member(server.physical_resource_id, layout.role,
                             member.resource_name,
                             member.physical_resource_id, {},
                             member.creation_time)
        elif not layout.group and top.get(layout.server) is not None:
            yield Member(top[layout.server].physical_resource_id,
                         layout.role, None, None,
                         {v: top[v].physical_resource_id
                          for v in layout.volumes if v in top})


def sync_hosts(lab: Lab, heat, stack_id: str) -> None:
    """Give each lab host the role and Heat ids of its server, in the
    order the driver reads them (role, then group members oldest first);
    the stack's id and name go to the lab's state."""
    top = {r.resource_name: r for r in heat.resources.list(stack_id)}
    found = list(members(heat, top))
    known = {m.server_id: m for m in found}
    order = {m.server_id: i for i, m in enumerate(sorted(
        found, key=lambda m: (ROLES.index(m.role), m.created,
                              m.member_name or '')))}
    stack = heat.stacks.get(stack_id)
    vip = vip_address(heat, stack_id, top)
    with lab_state.locked(lab.state_file) as st:
        st.stack_id, st.stack_name = stack_id, stack.stack_name
        st.vip = vip
        for host in st.hosts:
            member = known.get(host.server_id)
            if member is None:
                continue
            host.role = member.role
            host.member_name = member.member_name
            host.member_stack_id = member.member_stack_id
            _name_volumes(host, member.volume_ids)
        st.hosts.sort(key=lambda h: order.get(h.server_id, len(order)))


def vip_address(heat, stack_id: str, top: dict) -> str | None:
    """The address of the VIP port (flavours with several masters)."""
    if VIP_PORT not in top:
        return None
    fixed = heat.resources.get(stack_id, VIP_PORT).attributes.get(
        'fixed_ips')
    return fixed[0]['ip_address'] if fixed else None


def _name_volumes(host, volume_ids: dict[str, str]) -> None:
    """The cloud names a VM's volumes disk0, disk1...; Heat by resource."""
    by_id = {v: k for k, v in host.volume_ids.items()}
    for resource, volume_id in volume_ids.items():
        key = by_id.get(volume_id)
        if key is None or key == resource:
            continue
        for field_ in ('volume_ids', 'volume_gib', 'guest_devices',
                       'volume_devices'):
            values = getattr(host, field_)
            if key in values:
                values[resource] = values.pop(key)


# -- a lab of one VNF stack -------------------------------------------------

def ensure_image(site: Site) -> str:
    """The Glance image the VMs boot from (one per services root)."""
    conn = site.connection()
    image = next(iter(conn.image.images(name=IMAGE_NAME)), None)
    if image is None:
        image = conn.image.create_image(
            name=IMAGE_NAME, disk_format='raw', container_format='bare',
            data=bytes(1024), allow_duplicates=True)
    return image.id


def up(site_root: str, layout: Layout, name: str, subnet: str) -> Lab:
    """A network of its own (a new lab), the VNF's stack on it; the lab,
    with the driver config that points the hooks at this Heat."""
    site = Site.of(site_root)
    conn = site.connection()
    started = time.monotonic()
    network = conn.network.create_network(name=name)
    stack_id = None
    try:
        conn.network.create_subnet(network_id=network.id, cidr=subnet,
                                   ip_version=4, name=f'{name}-subnet')
        lab = Lab.load(os.path.join(cloud.labs_dir(site.root),
                                    lab_name(network.id)))
        stack_id = create_stack(site, f'vnflcm_{name}', layout, network.id,
                                ensure_image(site))
        sync_hosts(lab, site.heat(), stack_id)
    except BaseException:
        if stack_id is not None:
            delete_stack(site, stack_id)
        down_network(site, network.id)
        raise
    with lab_state.locked(lab.state_file) as st:
        st.site_root, st.network_id = site.root.path, network.id
        st.anti_affinity = layout.anti_affinity
        st.role_passwords = dict(layout.passwords)
    lab.write_files(heat_auth=site.auth())
    LOG.info('lab %s: stack %s on network %s in %.1f s', lab.state.name,
             stack_id, network.id, time.monotonic() - started)
    return lab


def recreate(lab: Lab) -> lab_state.LabState:
    """Heal the whole VNF as Tacker does: the stack deleted and created
    again (a new stack id, every VM new)."""
    state = lab.state
    site = Site.of(state.site_root)
    roles = [h.role for h in state.hosts]
    layout = Layout(roles.count('master'), roles.count('worker'),
                    'storage' in roles, state.anti_affinity,
                    state.role_passwords)
    delete_stack(site, state.stack_id)
    stack_id = create_stack(site, state.stack_name, layout,
                            state.network_id, ensure_image(site))
    sync_hosts(lab, site.heat(), stack_id)
    return lab.state


def down(lab: Lab) -> None:
    """The stack and the network (and with it the lab) go."""
    state = lab.state
    site = Site.of(state.site_root)
    try:
        delete_stack(site, state.stack_id)
    finally:
        down_network(site, state.network_id)


def down_network(site: Site, network_id: str) -> None:
    conn = site.connection()
    for port in conn.network.ports(network_id=network_id):
        conn.network.delete_port(port)
    conn.network.delete_network(network_id, ignore_missing=True)

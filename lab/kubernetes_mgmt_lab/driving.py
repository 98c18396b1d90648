"""Driving the Mgmt Driver's hooks against a lab, as Tacker would.

Used by the lab tests, the demo and the benchmarks: the driver options
come from the config file ``lab up`` wrote, the request from the lab's
layout and credentials, the VNF instance from ``tacker_shapes``.

The LCM helpers (scale, heal, terminate) follow tacker-conductor's order
(tacker/vnflcm/vnflcm_driver.py): the ``*_start`` hook, the Heat stack
update (as Tacker's OpenStack infra driver does it: in the services'
real Heat for a lab of ``openstack.vnf_stack``, else in the lab's Heat
double), the refresh of ``vnfc_resource_info``, the ``*_end`` hook.
"""
from __future__ import annotations

import configparser
import contextlib
import json
import time
import uuid
from collections.abc import Iterator, Sequence

from oslo_config import cfg

from kubernetes_mgmt import conf as _conf  # noqa: F401  (registers opts)
from kubernetes_mgmt.kubernetes_mgmt import KubernetesMgmtDriver
from kubernetes_mgmt.state import instance_state
from kubernetes_mgmt_lab import conf as lab_conf
from kubernetes_mgmt_lab import tacker_shapes
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.manager import ROLES, Lab
from kubernetes_mgmt_lab.openstack import access, vnf_stack

GROUP = 'kubernetes_mgmt'
# The groups of the driver config ``lab up`` writes: the product's and
# the lab's own (its seams' settings).
GROUPS = (GROUP, lab_conf.GROUP)


def _group_of(key: str) -> str:
    """The group an ``extra`` option of driver_options belongs to."""
    lab_names = {opt.dest for opt in lab_conf.lab_opts}
    return lab_conf.GROUP if key in lab_names else GROUP


@contextlib.contextmanager
def driver_options(lab: Lab, **extra) -> Iterator[None]:
    """Apply the lab's driver config (plus ``extra``, each to the group
    that has the option) to cfg.CONF."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(lab.state.config_file)
    values = {(group, key): value for group in GROUPS
              if parser.has_section(group)
              for key, value in parser.items(group)}
    values.update({(_group_of(k), k): v for k, v in extra.items()})
    for (group, key), value in values.items():
        cfg.CONF.set_override(key, value, group)
    try:
        yield
    finally:
        for group, key in values:
            cfg.CONF.clear_override(key, group)


@contextlib.contextmanager
def heat_as_member(lab: Lab) -> Iterator[None]:
    """Inside driver_options of a lab on a services root: the driver
    reads Heat as a user without the admin role, who sees no compute
    hosts (as through a VIM registered without admin rights)."""
    member = access.Site.of(lab.state.site_root).member_auth()
    group = _group_of('heat_username')
    kept = {key: getattr(cfg.CONF[group], key)
            for key in ('heat_username', 'heat_password')}
    cfg.CONF.set_override('heat_username', member['username'], group)
    cfg.CONF.set_override('heat_password', member['password'], group)
    try:
        yield
    finally:
        for key, value in kept.items():
            cfg.CONF.set_override(key, value, group)


# The storage server's volume and NFS exports in lab requests, and the
# sample package's PV manifests that use them.
STORAGE_MOUNT = '/volume'
STORAGE_EXPORTS = ('/volume/nfs/pv1', '/volume/nfs/pv2')
PV_MANIFESTS = ('Files/kubernetes/nfs-pv1.yaml',
                'Files/kubernetes/nfs-pv2.yaml')


def request_body(lab: Lab, vim_name: str | None = None) -> dict:
    """An InstantiateVnfRequest body for the lab's VMs (with a storage
    server and PVs when the lab has a storage host)."""
    state = lab.state
    masters = [h for h in state.hosts if h.role == 'master']

    def login(role: str) -> dict:
        return {'username': state.username,
                'password': state.password_for(role)}
    param = {
        'script_path': 'Scripts/install_k8s_cluster.sh',
        'vim_name': vim_name or f'{state.name}-cluster',
        'master_node': {
            'aspect_id': 'master_instance',
            'ssh_cp_name': 'masterNode_CP1', 'nic_cp_name': 'masterNode_CP1',
            'cluster_cp_name': 'vip_CP' if len(masters) > 1
            else 'masterNode_CP1',
            **login('master')},
        'worker_node': {
            'aspect_id': 'worker_instance',
            'ssh_cp_name': 'workerNode_CP2', 'nic_cp_name': 'workerNode_CP2',
            **login('worker')},
    }
    if any(h.role == 'storage' for h in state.hosts):
        param.update(storage_params(lab))
    return {
        'flavourId': 'complex' if len(masters) > 1 else 'simple',
        'additionalParams': {
            'k8s_cluster_installation_param': param,
            'lcm-operation-user-data': './UserData/k8s_cluster_user_data.py',
            'lcm-operation-user-data-class': 'KubernetesClusterUserData'},
    }


def storage_params(lab: Lab) -> dict:
    """``storage_server`` and ``pv_registration_params`` for the lab."""
    state = lab.state
    return {
        'storage_server': {
            'ssh_cp_name': 'storage_server_CP', 'username': state.username,
            'password': state.password_for('storage'),
            'cinder_volume_setup_params': [{
                'volume_resource_id': 'storage_server_volume',
                'mount_to': STORAGE_MOUNT}],
            'nfs_server_setup_params': [
                {'export_dir': d, 'export_to': state.subnet}
                for d in STORAGE_EXPORTS]},
        'pv_registration_params': [
            {'pv_manifest_file_path': path,
             'nfs_server_cp': 'storage_server_CP'} for path in PV_MANIFESTS],
    }


def new_instance(lab: Lab, body: dict | None = None):
    """(request, vnf_instance) as Tacker passes them to instantiate_end."""
    request = tacker_shapes.InstantiateVnfRequest.from_body(
        body or request_body(lab))
    instance = tacker_shapes.vnf_instance_for_stack(lab.state.stack_id,
                                                    request)
    return request, instance


def instantiate_end(request, instance, lab: Lab | None = None,
                    grant=None) -> None:
    if lab is not None:
        # Tacker records the VNFCs (post_vnf_instantiation) before it
        # calls instantiate_end; a Grant names them.
        refresh_vnfc_resources(lab, instance)
    KubernetesMgmtDriver().instantiate_end(
        context=None, vnf_instance=instance,
        instantiate_vnf_request=request, grant=grant, grant_request=None,
        vnf={})
    # Tacker's conductor stores the request's additionalParams once the
    # operation succeeded; later hooks read them from there.
    instance.instantiated_vnf_info.additional_params = dict(
        request.additional_params)
    if lab is not None:
        refresh_vnfc_resources(lab, instance)


def timed_instantiate(lab: Lab, parallel: int):
    """(progress, wall seconds) of the driver's instantiate on the lab's
    stack with ``max_parallel_hosts = parallel`` (benchmarks)."""
    from kubernetes_mgmt.operations.instantiate import instantiate
    from kubernetes_mgmt.params.validate import parse_cluster_params
    from kubernetes_mgmt.shim import requests
    from kubernetes_mgmt.shim.instance_store import TackerInstanceStore

    with driver_options(lab, max_parallel_hosts=parallel):
        request, instance = new_instance(lab)
        params = parse_cluster_params(request.additional_params)
        started = time.monotonic()
        # As the v1 hook would (which returns nothing): the shim's
        # request and store, then the operation.
        progress = instantiate(
            requests.operation_request(instance, params=params),
            TackerInstanceStore(instance))
        return progress, time.monotonic() - started


def grant_zones(instance, placed: Sequence[tuple]) -> tacker_shapes.Grant:
    """A Grant that puts each lab host of ``placed`` ((LabHost, zone
    name) pairs) in that availability zone, referring to its VNFC."""
    names = sorted({zone for _, zone in placed})
    ids = {zone: f'zone-{i}' for i, zone in enumerate(names)}
    return tacker_shapes.Grant(
        zones=[tacker_shapes.ZoneInfo(ids[z], z) for z in names],
        add_resources=[tacker_shapes.GrantInfo(vnfc_of(instance, host),
                                               ids[zone])
                       for host, zone in placed])


# -- what Tacker keeps about the VMs -------------------------------------

@contextlib.contextmanager
def instantiated_lab(masters: int, workers: int, **options):
    """(lab, vnf_instance) of a throw-away lab (``options`` go to
    testing.throwaway_lab: ``site`` for its stack, the layout's) whose
    cluster the driver has just instantiated. The driver
    options are applied only for the instantiate: callers apply their own
    (they do not nest)."""
    from kubernetes_mgmt_lab.testing import throwaway_lab

    with throwaway_lab(masters, workers, **options) as lab:
        with driver_options(lab):
            request, instance = new_instance(lab)
            instantiate_end(request, instance, lab)
        yield lab, instance


def stored_state(lab: Lab, instance) -> instance_state.DriverState:
    """What the driver stored in ``instance``, verified with the lab's
    state key (callable inside or outside ``driver_options``)."""
    return instance_state.load(instance, key_file=lab.state_key_file)


def refresh_vnfc_resources(lab: Lab, instance) -> None:
    """``vnfc_resource_info`` from the lab's VMs, as the conductor
    refreshes it after each stack update: a VNFC keeps its id while its
    group member lives (a healed VM gets the member's new server id)."""
    shapes = _shapes(instance)
    info = instance.instantiated_vnf_info
    old = {(v.metadata or {}).get('stack_id'): v
           for v in info.vnfc_resource_info or []}
    entries = []
    state = lab.state
    for host in (h for h in state.hosts if h.role in ROLES):
        key = host.member_stack_id or host.name
        previous = old.get(key)
        entries.append(shapes.VnfcResourceInfo(
            id=previous.id if previous else str(uuid.uuid4()),
            vdu_id=state.layout_for(host.role).server,
            compute_resource=shapes.ResourceHandle(
                resource_id=host.server_id,
                vim_level_resource_type='OS::Nova::Server'),
            metadata={'stack_id': key}))
    info.vnfc_resource_info = entries


def _shapes(instance):
    """Where VnfcResourceInfo and ResourceHandle come from: Tacker's own
    objects for a Tacker VnfInstance, else our look-alikes."""
    if callable(getattr(instance, 'obj_attr_is_set', None)):
        from tacker import objects
        return objects
    return tacker_shapes


def vnfc_of(instance, host) -> str:
    """The VNFC id of lab host ``host`` (a LabHost)."""
    for vnfc in instance.instantiated_vnf_info.vnfc_resource_info:
        if vnfc.compute_resource.resource_id == host.server_id:
            return vnfc.id
    raise KeyError(f'no VNFC for lab host {host.name}')


# -- the hooks, as VnfLcmDriver calls them -------------------------------

def hook(name: str, instance, grant=None, **kwargs) -> None:
    """Call hook ``name`` with Tacker's fixed arguments plus ``kwargs``."""
    getattr(KubernetesMgmtDriver(), name)(
        context=None, vnf_instance=instance, grant=grant, grant_request=None,
        **kwargs)


def vnf_dict(instance) -> dict:
    """The legacy vnf dict Tacker deep-copies into the ``vnf`` kwarg."""
    return {'id': instance.id,
            'instance_id': instance.instantiated_vnf_info.instance_id,
            'attributes': {}, 'before_error_point': 0, 'grant': None}


def registered_vims(lab: Lab) -> list:
    """The VIMs in the lab's file registry (VimRecord)."""
    from kubernetes_mgmt_lab.file_registry import FileVimRegistry

    return FileVimRegistry(lab.vim_registry_file).records()


def heat_client(lab: Lab):
    """An admin's heatclient for the lab's stack in the real Heat of its
    services root (a lab of vnf_stack.up)."""
    state = lab.state
    if not state.site_root:
        raise LabError(f'lab {state.name} has no Heat stack: bring it up '
                       'with vnf_stack.up (testing.throwaway_lab(site=))')
    return access.Site.of(state.site_root).heat()


def _hosts(lab: Lab, role: str):
    return [h for h in lab.state.hosts if h.role == role]


def _set_capacity(lab: Lab, role: str, count: int) -> None:
    heat = heat_client(lab)
    state = lab.state
    server = state.layout_for(role).server
    # Tacker's own stack updates send the whole nfv parameter.
    nfv = json.loads(heat.stacks.get(state.stack_id).parameters['nfv'])
    nfv['VDU'][server]['desired_capacity'] = count
    heat.stacks.update(state.stack_id, existing=True,
                       parameters={'nfv': json.dumps(nfv)})
    _check_update(heat, lab)


def _check_update(heat, lab: Lab) -> None:
    state = lab.state
    vnf_stack.wait(heat, state.stack_id, 'UPDATE')
    vnf_stack.sync_hosts(lab, heat, state.stack_id)


# -- scale ------------------------------------------------------------------

def add_workers(lab: Lab, instance, count: int):
    """The stack update of a SCALE_OUT: ``count`` new worker VMs. Returns
    them (LabHost); their member stack ids are ``scale_out_id_list``."""
    before = {h.name for h in _hosts(lab, 'worker')}
    _set_capacity(lab, 'worker', len(before) + count)
    refresh_vnfc_resources(lab, instance)
    return [h for h in _hosts(lab, 'worker') if h.name not in before]


def remove_workers(lab: Lab, instance, member_names: Sequence[str]) -> None:
    """The stack update of a SCALE_IN (or of a scale-out rollback): mark
    the members unhealthy, lower the group's capacity."""
    heat = heat_client(lab)
    group = heat.resources.get(lab.state.stack_id, 'worker_instance')
    for name in member_names:
        heat.resources.mark_unhealthy(group.physical_resource_id, name,
                                      True, 'Scale')
    _set_capacity(lab, 'worker',
                  len(_hosts(lab, 'worker')) - len(member_names))
    refresh_vnfc_resources(lab, instance)


def scale_request(kind: str, steps: int,
                  aspect: str = 'worker_instance'):
    return tacker_shapes.ScaleVnfRequest(type=kind, aspect_id=aspect,
                                         number_of_steps=steps)


def scale_out(lab: Lab, instance, count: int, zone: str | None = None):
    """SCALE_OUT by ``count`` workers: stack update, then scale_end (with
    a Grant putting them in ``zone``, if given). Returns the new lab
    hosts."""
    new = add_workers(lab, instance, count)
    grant = grant_zones(instance, [(h, zone) for h in new]) if zone \
        else None
    hook('scale_end', instance, grant=grant,
         scale_vnf_request=scale_request('SCALE_OUT', count),
         scale_out_id_list=[h.member_stack_id for h in new],
         vnf=vnf_dict(instance))
    return new


def scale_in_members(lab: Lab, count: int) -> list[str]:
    """The members Tacker removes on SCALE_IN (get_scale_in_ids): the
    oldest, by (creation time, name)."""
    heat = heat_client(lab)
    group = heat.resources.get(lab.state.stack_id, 'worker_instance')
    members = sorted(heat.resources.list(group.physical_resource_id),
                     key=lambda r: (r.creation_time, r.resource_name))
    return [m.resource_name for m in members[:count]]


def scale_in(lab: Lab, instance, count: int) -> list[str]:
    """SCALE_IN by ``count`` workers: scale_start, then the stack update.
    Returns the member names removed."""
    names = scale_in_members(lab, count)
    heat = heat_client(lab)
    group = heat.resources.get(lab.state.stack_id, 'worker_instance')
    ids = [r.physical_resource_id
           for r in heat.resources.list(group.physical_resource_id)
           if r.resource_name in names]
    hook('scale_start', instance,
         scale_vnf_request=scale_request('SCALE_IN', count),
         scale_name_list=names, scale_out_id_list=ids,
         vnf=vnf_dict(instance))
    remove_workers(lab, instance, names)
    return names


def rollback_scale_out(lab: Lab, instance, new_hosts) -> None:
    """Tacker's rollback of a failed SCALE_OUT: scale_start with the
    SCALE_OUT request and only scale_name_list, then the VMs go."""
    names = [h.member_name for h in new_hosts]
    hook('scale_start', instance,
         scale_vnf_request=scale_request('SCALE_OUT', len(names)),
         scale_name_list=names)
    remove_workers(lab, instance, names)


# -- heal -------------------------------------------------------------------

def heal(lab: Lab, instance, vnfc_ids: Sequence[str]) -> None:
    """Heal VNFCs (SOL002): heal_start, the servers marked unhealthy and
    rebuilt by a stack update, vnfc_resource_info refreshed, heal_end."""
    request = tacker_shapes.HealVnfRequest(vnfc_instance_id=list(vnfc_ids))
    hook('heal_start', instance, heal_vnf_request=request)
    rebuild_vnfcs(lab, instance, vnfc_ids)
    hook('heal_end', instance, heal_vnf_request=request,
         vnf=vnf_dict(instance))


def rebuild_vnfcs(lab: Lab, instance, vnfc_ids: Sequence[str]) -> None:
    """Tacker's OpenStack heal_vnf: each VNFC's server marked unhealthy
    in its member stack, with its volumes (Tacker's default
    ``heal_vnfc_block_storage``), one stack update; then
    vnfc_resource_info is refreshed (post_heal_vnf)."""
    heat = heat_client(lab)
    by_id = {v.id: v for v in
             instance.instantiated_vnf_info.vnfc_resource_info}
    state = lab.state
    members = {h.member_stack_id for h in state.hosts}
    by_server = {h.server_id: h for h in state.hosts}
    for vnfc_id in vnfc_ids:
        vnfc = by_id[vnfc_id]
        # A group member's server is in its nested stack; a VM outside
        # the groups (the storage server) in the top stack.
        stack = vnfc.metadata['stack_id']
        stack = stack if stack in members else state.stack_id
        host = by_server[vnfc.compute_resource.resource_id]
        for resource in (vnfc.vdu_id, *host.volume_ids):
            heat.resources.mark_unhealthy(stack, resource, True, 'Healing')
    heat.stacks.update(lab.state.stack_id, existing=True, parameters={})
    _check_update(heat, lab)
    refresh_vnfc_resources(lab, instance)


def heal_whole(lab: Lab, instance) -> None:
    """Heal the whole VNF (SOL003): heal_start, a new stack with new VMs
    (Tacker deletes and creates the stack, then records its id),
    heal_end."""
    request = tacker_shapes.HealVnfRequest()
    hook('heal_start', instance, heal_vnf_request=request)
    respawn(lab, instance)
    hook('heal_end', instance, heal_vnf_request=request,
         vnf=vnf_dict(instance))


def respawn(lab: Lab, instance) -> None:
    """Tacker's _respawn_vnf: the stack deleted and created again; the
    new stack's id and VNFCs are recorded in the instance."""
    state = vnf_stack.recreate(lab)
    info = instance.instantiated_vnf_info
    info.instance_id = state.stack_id
    info.vnfc_resource_info = []
    refresh_vnfc_resources(lab, instance)


# -- terminate --------------------------------------------------------------

def terminate(instance) -> None:
    """terminate_start, (Tacker deletes the stack: the lab leaves that to
    ``lab down``), terminate_end."""
    request = tacker_shapes.TerminateVnfRequest()
    hook('terminate_start', instance, terminate_vnf_request=request,
         vnf=vnf_dict(instance))
    hook('terminate_end', instance, terminate_vnf_request=request)

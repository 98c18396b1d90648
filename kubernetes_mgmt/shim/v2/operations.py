"""Each v2 LCM script operation, as the v1 hook that does the same work.

tacker-conductor runs ``<op>_start`` before and ``<op>_end`` after its own
work (Heat), and ``<op>_rollback_start|end`` around a rollback. What v1
hands the hooks as extra arguments comes from the v2 inputs here: the
VNFCs a scale-in removes from the grant request, the new members of a
scale-out from the instance.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes_mgmt import redact
from kubernetes_mgmt.operations import access
from kubernetes_mgmt.params.cluster_params import ClusterParams
from kubernetes_mgmt.params.schema import USER_DATA_CLASS_KEY, USER_DATA_KEY
from kubernetes_mgmt.params.validate import (
    parse_cluster_params,
    read_stored_params,
)
from kubernetes_mgmt.remote import user_data
from kubernetes_mgmt.shim import tacker_objects
from kubernetes_mgmt.shim.v1_hooks import Lifecycle
from kubernetes_mgmt.shim.v2.instance import V2Instance
from kubernetes_mgmt.state import instance_state
from kubernetes_mgmt.topology.heat import read_topology
from kubernetes_mgmt.topology.heat_client import heat_client_for

LOG = redact.get_logger(__name__)
SCALE_OUT, SCALE_IN = 'SCALE_OUT', 'SCALE_IN'


@dataclass
class Call:
    """One run of the script: Tacker's inputs, the instance adapted."""

    operation: str
    request: dict
    instance: V2Instance
    grant_request: dict | None
    grant: dict | None
    context: Any = None


def _hooks() -> Lifecycle:
    return Lifecycle()


def driver_request(request: dict) -> dict:
    """``request`` without the user data keys: under v2 only Tacker's
    infra driver reads them (the v1 rules the hooks apply to them, aspect
    ids for the package's own user data, do not hold)."""
    additional = {k: v for k, v in
                  tacker_objects.additional_params(request).items()
                  if k not in (USER_DATA_KEY, USER_DATA_CLASS_KEY)}
    return {**request, 'additionalParams': additional}


def instantiate_start(call: Call) -> None:
    # Refuse a bad request before Tacker creates any VM.
    params = parse_cluster_params(
        tacker_objects.additional_params(call.request))
    _give_vms_the_key(call, params)


def _give_vms_the_key(call: Call, params: ClusterParams) -> None:
    """The user data that lets the driver's key into the VMs, for the
    package's user data class to pass to Heat at stack creation (it reads
    the instance's metadata, which this script's result updates first).
    Later stack updates keep the stack's parameter, so a value changed
    through PATCH afterwards never reaches a VM."""
    metadata = call.instance.vnf_metadata
    metadata[user_data.PARAMETER] = access.vm_user_data(
        call.instance.id, params, first_use=True)
    call.instance.vnf_metadata = metadata


def instantiate_end(call: Call) -> None:
    call.instance.store_params(
        tacker_objects.additional_params(call.request))
    _hooks().instantiate_end(call.context, call.instance, call.request,
                             call.grant, call.grant_request)


def instantiate_rollback_start(call: Call) -> None:
    # Before Tacker deletes the stack: no VIM, no state stays behind.
    _forget(call, rollback=True)


def terminate_start(call: Call) -> None:
    # terminate_end gets an instance Tacker has already emptied: the VIM
    # and the state go now, once no CNF uses the cluster.
    _hooks().terminate_start(call.context, call.instance, call.request,
                             call.grant, call.grant_request)
    _forget(call, rollback=False)


def scale_start(call: Call) -> None:
    if tacker_objects.scale_type(call.request) != SCALE_IN:
        return
    _hooks().scale_start(call.context, call.instance, call.request,
                         call.grant, call.grant_request,
                         scale_name_list=_removed_members(call))


def scale_end(call: Call) -> None:
    if tacker_objects.scale_type(call.request) != SCALE_OUT:
        return
    _hooks().scale_end(call.context, call.instance, call.request,
                       call.grant, call.grant_request,
                       scale_out_id_list=_new_member_stacks(call))


def scale_rollback_start(call: Call) -> None:
    # A failed scale-out: the new members leave before Heat deletes them.
    if tacker_objects.scale_type(call.request) != SCALE_OUT:
        return
    _hooks().scale_start(call.context, call.instance, call.request,
                         call.grant, call.grant_request,
                         scale_name_list=_members_in_heat_only(call))


def heal_start(call: Call) -> None:
    _hooks().heal_start(call.context, call.instance, call.request,
                        call.grant, call.grant_request)


def heal_end(call: Call) -> None:
    _hooks().heal_end(call.context, call.instance, call.request,
                      call.grant, call.grant_request)


OPERATIONS: dict[str, Callable[[Call], None]] = {
    'instantiate_start': instantiate_start,
    'instantiate_end': instantiate_end,
    'instantiate_rollback_start': instantiate_rollback_start,
    'terminate_start': terminate_start,
    'scale_start': scale_start,
    'scale_end': scale_end,
    'scale_rollback_start': scale_rollback_start,
    'heal_start': heal_start,
    'heal_end': heal_end,
}


def has_work(operation: str) -> bool:
    return operation in OPERATIONS


def run(call: Call) -> None:
    """Run ``call.operation``; an operation the driver has no work in
    (e.g. ``modify_information_start``) is logged and done."""
    work = OPERATIONS.get(call.operation)
    if work is None:
        LOG.info('%s: nothing to do for instance %s', call.operation,
                 call.instance.id)
        return
    call.request = driver_request(call.request)
    work(call)


# -- targets ------------------------------------------------------------------

def _forget(call: Call, rollback: bool) -> None:
    _hooks().terminate_end(call.context, call.instance,
                           None if rollback else call.request,
                           call.grant, call.grant_request)
    call.instance.forget_params()


def _removed_members(call: Call) -> list[str]:
    """The member resources (``<VDU>-<n>``) of the servers a scale-in
    removes (the grant request's ``removeResources``)."""
    servers = {str((r.get('resource') or {}).get('resourceId'))
               for r in (call.grant_request or {}).get('removeResources')
               or [] if r.get('type') == 'COMPUTE'}
    return [_member_name(v) for v in call.instance.vnfc_resources()
            if str(_server(v)) in servers]


def _new_vnfcs(call: Call) -> list[dict]:
    """VNFCs whose server is no node of the instance as Tacker keeps it:
    on a retry, also those a failed attempt remembered (their steps find
    their work done where it was)."""
    state = instance_state.load(call.instance.persisted_instance())
    known = {*state.nodes, state.storage_server}
    return [v for v in call.instance.vnfc_resources()
            if _server(v) not in known]


def _new_member_stacks(call: Call) -> list[str]:
    """Nested stack ids of the new VNFCs (their metadata names them
    ``<stack name>/<id>``)."""
    return [str(v['metadata']['stack_id']).rsplit('/', 1)[-1]
            for v in _new_vnfcs(call)
            if (v.get('metadata') or {}).get('stack_id')]


def _members_in_heat_only(call: Call) -> list[str]:
    """Worker members Heat has that are no node of the instance as
    Tacker keeps it: during a scale-out rollback the instance lists only
    the VNFCs from before, and the failed attempt may have joined some."""
    state = instance_state.load(call.instance.persisted_instance())
    params = read_stored_params(call.instance.stored_params())
    heat = heat_client_for(call.instance, call.context)
    topology = read_topology(heat, tacker_objects.stack_id(call.instance),
                             params)
    return [h.member_name for h in topology.workers
            if h.member_name and h.server_id not in state.nodes]


def _server(vnfc: dict) -> str | None:
    """The Nova server of a ``vnfcResourceInfo`` entry."""
    return (vnfc.get('computeResource') or {}).get('resourceId')


def _member_name(vnfc: dict) -> str:
    metadata = vnfc.get('metadata') or {}
    return str(metadata.get('parent_resource_name')
               or f'{vnfc.get("vduId")}-{metadata.get("vdu_idx")}')

"""Each v2 LCM script operation: the typed request and store the shim
makes from the v2 inputs, and the operation that does the work.

tacker-conductor runs ``<op>_start`` before and ``<op>_end`` after its own
work (Heat), and ``<op>_rollback_start|end`` around a rollback. What v1
hands the hooks as extra arguments comes from the v2 inputs here: the
VNFCs a scale-in removes from the grant request, the new members of a
scale-out from the instance.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes_mgmt import redact
from kubernetes_mgmt.errors import MgmtDriverError, ValidationError
from kubernetes_mgmt.operations import (
    heal,
    rebuild,
    scale,
    terminate,
    upgrade,
)
from kubernetes_mgmt.operations.access import vm_user_data
from kubernetes_mgmt.operations.instantiate import instantiate
from kubernetes_mgmt.operations.request import (
    SCALE_IN,
    SCALE_OUT,
    OperationRequest,
)
from kubernetes_mgmt.params import rotation, upgrade_request
from kubernetes_mgmt.params.cluster_params import ClusterParams
from kubernetes_mgmt.params.package_version import package_software_version
from kubernetes_mgmt.params.schema import USER_DATA_CLASS_KEY, USER_DATA_KEY
from kubernetes_mgmt.params.validate import (
    parse_cluster_params,
    read_stored_params,
)
from kubernetes_mgmt.params.versions import package_problem
from kubernetes_mgmt.remote import user_data
from kubernetes_mgmt.shim import requests, tacker_objects
from kubernetes_mgmt.shim.instance_store import TackerInstanceStore
from kubernetes_mgmt.shim.v2.instance import V2Instance
from kubernetes_mgmt.state import instance_state

LOG = redact.get_logger(__name__)


@dataclass
class Call:
    """One run of the script: Tacker's inputs, the instance adapted."""

    operation: str
    request: dict
    instance: V2Instance
    grant_request: dict | None
    grant: dict | None
    context: Any = None
    # The unpacked package whose script runs (Tacker's tmp_csar_dir): for
    # a ChangeCurrentVnfPackage, the new package.
    csar_dir: str | None = None

    @property
    def store(self) -> TackerInstanceStore:
        return TackerInstanceStore(self.instance, self.context)

    def new_package_root(self) -> Path:
        if not self.csar_dir:
            raise MgmtDriverError(
                f'{self.operation}: Tacker handed the script no package '
                'directory (tmp_csar_dir): the new package cannot be read')
        return Path(self.csar_dir)

    def day2_request(self, **kwargs: Any) -> OperationRequest:
        return requests.day2_request(
            self.instance, grant=self.grant,
            grant_request=self.grant_request,
            registries_replaced=rotation.KEY in
            tacker_objects.additional_params(self.request), **kwargs)


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
    if call.csar_dir:   # the instance's package (instantiate_end checks too)
        problem = package_problem(
            params.kubernetes_version,
            package_software_version(Path(call.csar_dir)))
        if problem:
            raise ValidationError([problem])
    _give_vms_the_key(call, params)


def _give_vms_the_key(call: Call, params: ClusterParams) -> None:
    """The user data that lets the driver's key into the VMs, for the
    package's user data class to pass to Heat at stack creation (it reads
    the instance's metadata, which this script's result updates first).
    Later stack updates keep the stack's parameter, so a value changed
    through PATCH afterwards never reaches a VM."""
    metadata = call.instance.vnf_metadata
    metadata[user_data.PARAMETER] = vm_user_data(
        call.instance.id, params, first_use=True)
    call.instance.vnf_metadata = metadata


def instantiate_end(call: Call) -> None:
    body = tacker_objects.additional_params(call.request)
    call.instance.store_params(body)    # what later operations read
    params = parse_cluster_params(body)
    instantiate(requests.operation_request(
        call.instance, params=params, grant=call.grant,
        grant_request=call.grant_request), call.store)


def instantiate_rollback_start(call: Call) -> None:
    # Before Tacker deletes the stack: no VIM, no state stays behind.
    _forget(call, rollback=True)


def terminate_start(call: Call) -> None:
    # terminate_end gets an instance Tacker has already emptied: the VIM
    # and the state go now, once no CNF uses the cluster.
    terminate.terminate_start(requests.operation_request(call.instance),
                              call.store)
    _forget(call, rollback=False)


def rotate_registries(call: Call) -> None:
    """A scale or heal request's ``private_registries`` replace the
    stored ones, checked whole before any host, for this operation (its
    end script gets the instance this script returns) and every later
    one. Tacker keeps the instance this returns only if the operation
    completes; a retry carries the same request and replaces them
    again."""
    new = rotation.new_registries(
        tacker_objects.additional_params(call.request))
    if new is None:
        return
    stored = rotation.with_registries(call.instance.stored_params(), new)
    read_stored_params(stored)      # the whole, as later operations read it
    call.instance.store_params(stored)
    LOG.info('%s: instance %s: private registries replaced by the '
             "request's (%s)", call.operation, call.instance.id,
             ', '.join(e['registry'] for e in new) or 'none')


def scale_start(call: Call) -> None:
    rotate_registries(call)
    if tacker_objects.scale_type(call.request) != SCALE_IN:
        return
    scale.scale_in(call.day2_request(), call.store,
                   requests.scale_request(call.request),
                   _removed_members(call))


def scale_end(call: Call) -> None:
    if tacker_objects.scale_type(call.request) != SCALE_OUT:
        return
    scale.scale_out(call.day2_request(), call.store,
                    requests.scale_request(call.request),
                    _new_member_stacks(call))


def scale_rollback_start(call: Call) -> None:
    # A failed scale-out: the new members leave before Heat deletes them.
    if tacker_objects.scale_type(call.request) != SCALE_OUT:
        return
    request = call.day2_request()
    scale.scale_in(request, call.store,
                   requests.scale_request(call.request),
                   scale.members_outside(request, call.store,
                                         _nodes_kept_by_tacker(call)))


def heal_start(call: Call) -> None:
    rotate_registries(call)
    vnfcs = tacker_objects.vnfc_instance_ids(call.request)
    if vnfcs:
        heal.heal_start(call.day2_request(), call.store, vnfcs,
                        force=tacker_objects.heal_force(call.request))
    else:
        rebuild.rebuild_start(call.day2_request(), call.store)


def heal_end(call: Call) -> None:
    vnfcs = tacker_objects.vnfc_instance_ids(call.request)
    if vnfcs:
        heal.heal_end(call.day2_request(), call.store, vnfcs)
    else:
        rebuild.rebuild_end(call.day2_request(), call.store)


def change_current_package_start(call: Call) -> None:
    # Upgrade in place before Tacker updates the stack: the request and
    # the target are refused before any host changes, and the new
    # package's own install script does the nodes' part.
    options = upgrade_request.parse(call.request)
    root = call.new_package_root()
    upgrade.upgrade(call.day2_request(),
                    TackerInstanceStore(call.instance, call.context, root),
                    package_software_version(root), options)


def change_current_package_rollback_start(call: Call) -> None:
    # Tacker runs the old package's script here.
    upgrade.rollback(call.day2_request(), call.store)


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
    'change_current_package_start': change_current_package_start,
    'change_current_package_rollback_start':
        change_current_package_rollback_start,
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
    terminate.terminate_end(requests.operation_request(call.instance),
                            call.store, rollback=rollback)
    call.instance.forget_params()


def _removed_members(call: Call) -> list[str]:
    """The member resources (``<VDU>-<n>``) of the servers a scale-in
    removes (the grant request's ``removeResources``)."""
    servers = {str((r.get('resource') or {}).get('resourceId'))
               for r in (call.grant_request or {}).get('removeResources')
               or [] if r.get('type') == 'COMPUTE'}
    return [_member_name(v) for v in call.instance.vnfc_resources()
            if str(_server(v)) in servers]


def _nodes_kept_by_tacker(call: Call) -> set[str]:
    """Server ids of the nodes in the driver's state as Tacker keeps it
    (not what a failed attempt of this operation handed on: a node it
    remembered may never have joined)."""
    state = instance_state.load(call.instance.persisted_instance())
    return {*state.nodes, state.storage_server} - {None}


def _new_vnfcs(call: Call) -> list[dict]:
    """VNFCs whose server is no node of the instance as Tacker keeps it:
    on a retry, also those a failed attempt remembered (their steps find
    their work done where it was)."""
    known = _nodes_kept_by_tacker(call)
    return [v for v in call.instance.vnfc_resources()
            if _server(v) not in known]


def _new_member_stacks(call: Call) -> list[str]:
    """Nested stack ids of the new VNFCs (their metadata names them
    ``<stack name>/<id>``)."""
    return [str(v['metadata']['stack_id']).rsplit('/', 1)[-1]
            for v in _new_vnfcs(call)
            if (v.get('metadata') or {}).get('stack_id')]


def _server(vnfc: dict) -> str | None:
    """The Nova server of a ``vnfcResourceInfo`` entry."""
    return (vnfc.get('computeResource') or {}).get('resourceId')


def _member_name(vnfc: dict) -> str:
    metadata = vnfc.get('metadata') or {}
    return str(metadata.get('parent_resource_name')
               or f'{vnfc.get("vduId")}-{metadata.get("vdu_idx")}')

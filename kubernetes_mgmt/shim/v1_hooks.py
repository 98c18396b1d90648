"""The work behind each v1 Tacker hook (``kubernetes_mgmt.py`` forwards
here, through ``lifecycle``).

Each hook turns Tacker's objects into a typed request and the instance's
store (``shim.requests``, ``shim.instance_store``) and runs the
operation. It keeps no state between calls: what later hooks need is
stored in the VNF instance (``state.instance_state``).
"""
from __future__ import annotations

from kubernetes_mgmt import redact
from kubernetes_mgmt.errors import Problem, ValidationError
from kubernetes_mgmt.operations import heal, rebuild, scale, terminate
from kubernetes_mgmt.operations.access import vm_user_data
from kubernetes_mgmt.operations.instantiate import instantiate
from kubernetes_mgmt.operations.request import SCALE_OUT
from kubernetes_mgmt.params import rotation
from kubernetes_mgmt.params.validate import parse_cluster_params
from kubernetes_mgmt.remote import user_data
from kubernetes_mgmt.shim import requests, tacker_objects
from kubernetes_mgmt.shim.instance_store import TackerInstanceStore

LOG = redact.get_logger(__name__)


@redact.scoped_hooks
class Lifecycle:
    """Stateless implementation of the fourteen Mgmt Driver hooks.

    Each hook is one operation for secret masking (``redact``): what it
    registers is masked in its own logs and errors, and forgotten after.
    """

    # -- hooks with work ------------------------------------------------

    def instantiate_start(self, context, vnf_instance,
                          instantiate_vnf_request, grant, grant_request,
                          **kwargs):
        # Before Tacker creates any VM: refuse a bad request, and hand the
        # package's user data what lets the driver's own key in (Tacker's
        # v1 user data passes additionalParams named like a BaseHOT
        # parameter on to Heat).
        params = parse_cluster_params(
            tacker_objects.additional_params(instantiate_vnf_request))
        text = vm_user_data(tacker_objects.instance_id(vnf_instance),
                            params, first_use=True)
        tacker_objects.set_additional_param(
            instantiate_vnf_request, user_data.PARAMETER, text)
        # What later heals read back (Tacker copied the request already).
        tacker_objects.set_stored_additional_param(
            vnf_instance, user_data.PARAMETER, text)

    def instantiate_end(self, context, vnf_instance, instantiate_vnf_request,
                        grant, grant_request, **kwargs):
        # Validate the whole request before any host or API is touched.
        params = parse_cluster_params(
            tacker_objects.additional_params(instantiate_vnf_request))
        instantiate(requests.operation_request(
            vnf_instance, params=params, vnf=kwargs.get('vnf'), grant=grant,
            grant_request=grant_request),
            TackerInstanceStore(vnf_instance, context))

    def terminate_start(self, context, vnf_instance, terminate_vnf_request,
                        grant, grant_request, **kwargs):
        # Refuses while CNFs use the cluster, before Tacker deletes VMs.
        terminate.terminate_start(requests.operation_request(vnf_instance),
                                  TackerInstanceStore(vnf_instance, context))

    def terminate_end(self, context, vnf_instance, terminate_vnf_request,
                      grant, grant_request, **kwargs):
        # No request: Tacker rolls back a failed instantiate.
        terminate.terminate_end(requests.operation_request(vnf_instance),
                                TackerInstanceStore(vnf_instance, context),
                                rollback=terminate_vnf_request is None)

    def scale_start(self, context, vnf_instance, scale_vnf_request, grant,
                    grant_request, **kwargs):
        # SCALE_IN before Heat removes the VMs; a SCALE_OUT request here
        # is the rollback of a failed scale-out (only scale_name_list).
        if tacker_objects.scale_type(scale_vnf_request) != SCALE_OUT:
            _refuse_new_registries(scale_vnf_request)
        scale.scale_in(requests.day2_request(vnf_instance),
                       TackerInstanceStore(vnf_instance, context),
                       requests.scale_request(scale_vnf_request),
                       kwargs.get('scale_name_list') or [])

    def scale_end(self, context, vnf_instance, scale_vnf_request, grant,
                  grant_request, **kwargs):
        if tacker_objects.scale_type(scale_vnf_request) != SCALE_OUT:
            _nothing_to_do('scale_end', vnf_instance)
            return
        # After Heat (v1 runs nothing before a scale-out): the new VMs
        # stay until op rollback, no node is touched.
        _refuse_new_registries(scale_vnf_request)
        scale.scale_out(requests.day2_request(
            vnf_instance, vnf=kwargs.get('vnf'), grant=grant,
            grant_request=grant_request),
            TackerInstanceStore(vnf_instance, context),
            requests.scale_request(scale_vnf_request),
            kwargs.get('scale_out_id_list') or [])

    def heal_start(self, context, vnf_instance, heal_vnf_request, grant,
                   grant_request, **kwargs):
        _refuse_new_registries(heal_vnf_request)
        vnfcs = tacker_objects.vnfc_instance_ids(heal_vnf_request)
        request = requests.day2_request(vnf_instance)
        store = TackerInstanceStore(vnf_instance, context)
        if vnfcs:
            heal.heal_start(request, store, vnfcs,
                            force=tacker_objects.heal_force(heal_vnf_request))
        else:
            rebuild.rebuild_start(request, store)

    def heal_end(self, context, vnf_instance, heal_vnf_request, grant,
                 grant_request, **kwargs):
        vnfcs = tacker_objects.vnfc_instance_ids(heal_vnf_request)
        request = requests.day2_request(
            vnf_instance, vnf=kwargs.get('vnf'), grant=grant,
            grant_request=grant_request)
        store = TackerInstanceStore(vnf_instance, context)
        if vnfcs:
            heal.heal_end(request, store, vnfcs)
        else:
            rebuild.rebuild_end(request, store)

    # -- explicit no-ops --------------------------------------------------
    # Tacker calls every hook the VNFD routes to this driver; these have
    # nothing to do for a Kubernetes cluster and say so.

    def change_external_connectivity_start(
            self, context, vnf_instance, change_ext_conn_request, grant,
            grant_request, **kwargs):
        _nothing_to_do('change_external_connectivity_start', vnf_instance)

    def change_external_connectivity_end(
            self, context, vnf_instance, change_ext_conn_request, grant,
            grant_request, **kwargs):
        _nothing_to_do('change_external_connectivity_end', vnf_instance)

    def modify_information_start(self, context, vnf_instance,
                                 modify_vnf_request, **kwargs):
        _nothing_to_do('modify_information_start', vnf_instance)

    def modify_information_end(self, context, vnf_instance,
                               modify_vnf_request, **kwargs):
        _nothing_to_do('modify_information_end', vnf_instance)


def _refuse_new_registries(request) -> None:
    """New registries (``params.rotation``) come through the v2 API
    only: v1 keeps the instantiate request's parameters where the driver
    cannot replace them, and a request whose registries went unread
    would fail later, at a pull."""
    if rotation.KEY in tacker_objects.additional_params(request):
        raise ValidationError([Problem(
            f'additionalParams.{rotation.KEY}',
            "Tacker's v1 API keeps the registries of instantiate: new "
            "ones come with a v2 scale or heal request (docs: "
            "air-gapped-sites.rst, \"New credentials, a new CA\")")])


def _nothing_to_do(hook: str, vnf_instance) -> None:
    LOG.debug('%s: nothing to do for instance %s', hook,
              tacker_objects.instance_id(vnf_instance))

"""The work behind each Tacker hook (the shim module forwards here).

This layer translates Tacker's objects into our typed parameters and
topology, then runs the phases. It keeps no state between calls: what later
hooks need is stored in the VNF instance (``instance_state``).
"""
from __future__ import annotations

from kubernetes_mgmt import redact
from kubernetes_mgmt.operations import access, heal, rebuild, scale, terminate
from kubernetes_mgmt.operations.instantiate import instantiate
from kubernetes_mgmt.params.validate import parse_cluster_params
from kubernetes_mgmt.remote import user_data
from kubernetes_mgmt.shim import tacker_objects

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
        text = access.vm_user_data(tacker_objects.instance_id(vnf_instance),
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
        instantiate(context, vnf_instance, params, kwargs.get('vnf'),
                    zones=tacker_objects.grant_zones(
                        grant, grant_request, vnf_instance))

    def terminate_start(self, context, vnf_instance, terminate_vnf_request,
                        grant, grant_request, **kwargs):
        # Refuses while CNFs use the cluster, before Tacker deletes VMs.
        terminate.terminate_start(context, vnf_instance)

    def terminate_end(self, context, vnf_instance, terminate_vnf_request,
                      grant, grant_request, **kwargs):
        # No request: Tacker rolls back a failed instantiate.
        terminate.terminate_end(context, vnf_instance,
                                rollback=terminate_vnf_request is None)

    def scale_start(self, context, vnf_instance, scale_vnf_request, grant,
                    grant_request, **kwargs):
        # SCALE_IN before Heat removes the VMs; a SCALE_OUT request here
        # is the rollback of a failed scale-out (only scale_name_list).
        scale.scale_in(context, vnf_instance, scale_vnf_request,
                       kwargs.get('scale_name_list') or [])

    def scale_end(self, context, vnf_instance, scale_vnf_request, grant,
                  grant_request, **kwargs):
        if tacker_objects.scale_type(scale_vnf_request) != scale.SCALE_OUT:
            _nothing_to_do('scale_end', vnf_instance)
            return
        scale.scale_out(context, vnf_instance, scale_vnf_request,
                        kwargs.get('scale_out_id_list') or [],
                        kwargs.get('vnf'),
                        zones=tacker_objects.grant_zones(
                        grant, grant_request, vnf_instance))

    def heal_start(self, context, vnf_instance, heal_vnf_request, grant,
                   grant_request, **kwargs):
        vnfcs = tacker_objects.vnfc_instance_ids(heal_vnf_request)
        if vnfcs:
            heal.heal_start(context, vnf_instance, vnfcs)
        else:
            rebuild.rebuild_start(context, vnf_instance)

    def heal_end(self, context, vnf_instance, heal_vnf_request, grant,
                 grant_request, **kwargs):
        vnfcs = tacker_objects.vnfc_instance_ids(heal_vnf_request)
        zones = tacker_objects.grant_zones(grant, grant_request,
                                           vnf_instance)
        if vnfcs:
            heal.heal_end(context, vnf_instance, vnfcs, kwargs.get('vnf'),
                          zones=zones)
        else:
            rebuild.rebuild_end(context, vnf_instance, kwargs.get('vnf'),
                                zones=zones)

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


def _nothing_to_do(hook: str, vnf_instance) -> None:
    LOG.debug('%s: nothing to do for instance %s', hook,
              tacker_objects.instance_id(vnf_instance))

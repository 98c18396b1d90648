"""The work behind each Tacker hook (the shim module forwards here).

This layer translates Tacker's objects into our typed parameters and
topology, then runs the phases. It keeps no state between calls: what later
hooks need is stored in the VNF instance (``instance_state``).
"""
from __future__ import annotations

from kubernetes_mgmt import instance_state, redact, tacker_objects
from kubernetes_mgmt.orchestration.instantiate import instantiate
from kubernetes_mgmt.params.validate import parse_cluster_params

LOG = redact.get_logger(__name__)


class Lifecycle:
    """Stateless implementation of the fourteen Mgmt Driver hooks."""

    # -- hooks with work ------------------------------------------------

    def instantiate_end(self, context, vnf_instance, instantiate_vnf_request,
                        grant, grant_request, **kwargs):
        # Validate the whole request before any host or API is touched.
        params = parse_cluster_params(
            tacker_objects.additional_params(instantiate_vnf_request))
        instantiate(context, vnf_instance, params, kwargs.get('vnf'))

    # -- explicit no-ops --------------------------------------------------
    # Tacker calls every hook the VNFD routes to this driver; these have
    # nothing to do for a Kubernetes cluster (yet) and say so.

    def instantiate_start(self, context, vnf_instance,
                          instantiate_vnf_request, grant, grant_request,
                          **kwargs):
        _nothing_to_do('instantiate_start', vnf_instance)

    def terminate_start(self, context, vnf_instance, terminate_vnf_request,
                        grant, grant_request, **kwargs):
        _nothing_to_do('terminate_start', vnf_instance)

    def terminate_end(self, context, vnf_instance, terminate_vnf_request,
                      grant, grant_request, **kwargs):
        instance_state.forget(vnf_instance)

    def scale_start(self, context, vnf_instance, scale_vnf_request, grant,
                    grant_request, **kwargs):
        _nothing_to_do('scale_start', vnf_instance)

    def scale_end(self, context, vnf_instance, scale_vnf_request, grant,
                  grant_request, **kwargs):
        _nothing_to_do('scale_end', vnf_instance)

    def heal_start(self, context, vnf_instance, heal_vnf_request, grant,
                   grant_request, **kwargs):
        _nothing_to_do('heal_start', vnf_instance)

    def heal_end(self, context, vnf_instance, heal_vnf_request, grant,
                 grant_request, **kwargs):
        _nothing_to_do('heal_end', vnf_instance)

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

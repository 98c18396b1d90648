"""The work behind each Tacker hook (the shim module forwards here).

This layer translates Tacker's objects into our typed parameters and
topology, then runs the phases. It keeps no state between calls: what later
hooks need is stored in the VNF instance (``instance_state``).
"""
from __future__ import annotations

import time

from kubernetes_mgmt import instance_state, redact, tacker_objects
from kubernetes_mgmt.cluster.preflight import HostFacts, preflight
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.orchestration.access import endpoint_for
from kubernetes_mgmt.orchestration.parallel import for_each
from kubernetes_mgmt.params.model import ClusterParams
from kubernetes_mgmt.params.validate import parse_cluster_params
from kubernetes_mgmt.remote.hostkeys import HostKeyStore
from kubernetes_mgmt.remote.ssh import Sessions
from kubernetes_mgmt.topology.heat import read_topology
from kubernetes_mgmt.topology.heat_client import heat_client_for
from kubernetes_mgmt.topology.model import Host, Topology

LOG = redact.get_logger(__name__)


class Lifecycle:
    """Stateless implementation of the fourteen Mgmt Driver hooks."""

    # -- hooks with work ------------------------------------------------

    def instantiate_end(self, context, vnf_instance, instantiate_vnf_request,
                        grant, grant_request, **kwargs):
        # Validate the whole request before any host or API is touched.
        params = parse_cluster_params(
            tacker_objects.additional_params(instantiate_vnf_request))
        started = time.monotonic()
        topology = self._topology(context, vnf_instance, params,
                                  kwargs.get('vnf'))
        state = instance_state.load(vnf_instance)
        keys = self._host_keys(state)
        with Sessions(keys) as sessions:
            facts = self._preflight(sessions, topology, params)
        state.host_keys = dict(keys.known)
        instance_state.save(vnf_instance, state)
        LOG.info('instance %s: %d host(s) reachable (%s) in %.1f s',
                 tacker_objects.instance_id(vnf_instance), len(facts),
                 ', '.join(sorted({f'{f.os_id} {f.os_version}'
                                   for f in facts})),
                 time.monotonic() - started)

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

    # -- phases -------------------------------------------------------------

    @staticmethod
    def _topology(context, vnf_instance, params: ClusterParams,
                  vnf: dict | None) -> Topology:
        heat = heat_client_for(vnf_instance, context)
        stack = tacker_objects.stack_id(vnf_instance, vnf)
        topology = read_topology(heat, stack, params)
        LOG.info('stack %s: %d master(s), %d worker(s)%s', stack,
                 len(topology.masters), len(topology.workers),
                 ', storage server' if topology.storage else '')
        return topology

    @staticmethod
    def _host_keys(state: instance_state.DriverState,
                   replacing: set[str] | None = None) -> HostKeyStore:
        return HostKeyStore(known=dict(state.host_keys),
                            replacing=set(replacing or ()),
                            checking=CONF.kubernetes_mgmt.host_key_checking)

    @staticmethod
    def _preflight(sessions: Sessions, topology: Topology,
                   params: ClusterParams) -> list[HostFacts]:
        def check(host: Host) -> HostFacts:
            return preflight(sessions.get(endpoint_for(host, params)))

        return for_each(topology.hosts, check, phase='preflight',
                        label=lambda h: h.label,
                        parallel=CONF.kubernetes_mgmt.max_parallel_hosts)


def _nothing_to_do(hook: str, vnf_instance) -> None:
    LOG.debug('%s: nothing to do for instance %s', hook,
              tacker_objects.instance_id(vnf_instance))

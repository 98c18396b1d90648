"""instantiate_end: from the VNF's VMs to a registered Kubernetes VIM."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster import roles
from kubernetes_mgmt.cluster.admin_account import AdminCredentials
from kubernetes_mgmt.cluster.api_server import server_version
from kubernetes_mgmt.cluster.cluster_plan import ClusterPlan, build_plan
from kubernetes_mgmt.cluster.placement import node_labels
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.engine import runner as engine
from kubernetes_mgmt.engine.graph import CLUSTER, Graph
from kubernetes_mgmt.engine.progress import Progress
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.operations import access
from kubernetes_mgmt.operations.checkpoint import Checkpoint, remember
from kubernetes_mgmt.params.cluster_params import ClusterParams
from kubernetes_mgmt.remote.ssh import Sessions
from kubernetes_mgmt.shim import tacker_objects
from kubernetes_mgmt.shim.package_source import package_dir
from kubernetes_mgmt.state import instance_state
from kubernetes_mgmt.state.instance_state import DriverState
from kubernetes_mgmt.steps import declare as steps
from kubernetes_mgmt.steps.cluster_setup import ClusterSetup
from kubernetes_mgmt.topology.heat import read_topology
from kubernetes_mgmt.topology.heat_client import heat_client_for
from kubernetes_mgmt.vim.connection import add_vim_connection
from kubernetes_mgmt.vim.registration import VimRecord, VimSpec
from kubernetes_mgmt.vim.registry import registry_for

LOG = redact.get_logger(__name__)


def instantiate(context: Any, vnf_instance: Any, params: ClusterParams,
                vnf: dict | None = None, operation: str = 'instantiate',
                zones: dict[str, str] | None = None) -> Progress:
    """Install the cluster, register it as a VIM, remember what later
    hooks need (``zones``: server id -> availability zone granted).
    Returns the timing of the phases and steps."""
    instance_id = tacker_objects.instance_id(vnf_instance)
    progress = Progress(operation, instance_id)
    state = instance_state.load(vnf_instance)   # refuses a tampered one
    with progress.phase('read topology'):
        heat = heat_client_for(vnf_instance, context)
        stack_id = tacker_objects.stack_id(vnf_instance, vnf)
        topology = read_topology(heat, stack_id, params)
        # A re-run, or a rebuild of the whole VNF, follows the record of
        # the cluster's first build; a new stack has a new endpoint.
        plan = build_plan(instance_id, params, topology,
                          package_dir(context, vnf_instance),
                          record=state.record,
                          keep_endpoint=state.stack_id == stack_id)
        roles.check_plan(plan)      # before any host is touched
        registry_for().check_ready()
        labels = node_labels(plan.topology, plan.nodes, zones or {})
    LOG.info('instance %s: %d master(s), %d worker(s), endpoint %s',
             instance_id, len(plan.masters), len(plan.workers),
             plan.control_plane_endpoint)
    if state.record is None or state.stack_id != stack_id:
        state.record = plan.freeze()    # frozen before any host changes
    keys = access.host_keys(state, heat)
    checkpoint = Checkpoint(vnf_instance, state, keys, plan)

    def register(admin: AdminCredentials) -> None:
        record = register_vim(context, vnf_instance, plan, admin)
        state.vim_id, state.vim_name = record.id, record.name

    try:
        with Sessions(keys, identity=access.login_key(
                instance_id, first_use=True)) as sessions:
            progress.sessions = sessions
            setup = ClusterSetup(plan, sessions, progress, installs=True)
            graph = install_graph(operation, setup, labels, state, register)
            with steps.tokens_deleted_on_failure(setup):
                engine.run(graph, progress,
                           parallel=CONF.kubernetes_mgmt.max_parallel_hosts,
                           on_settled=checkpoint)
    finally:
        # Keep what was learnt even when a step failed: a re-run then
        # checks the same host keys and builds the same cluster.
        checkpoint.keep_keys()
        _remember_cluster(state, plan)
        instance_state.save(vnf_instance, state)
    LOG.info('%s', progress.summary())
    return progress


def install_graph(operation: str, setup: ClusterSetup,
                  labels: dict[str, dict[str, str]], state: DriverState,
                  register: Callable[[AdminCredentials], None]) -> Graph:
    """Every node prepared; in HA the load balancers; the control plane;
    the joins; then, once every node is Ready, the admin account and the
    VIM, labels and PersistentVolumes. The storage server is set up
    beside all of it (it shares no host with the cluster)."""
    plan = setup.plan
    graph = Graph(operation)
    prepared = steps.prepare(graph, setup, plan.nodes)
    lbs = (steps.load_balancers(graph, setup, plan.masters, after=prepared)
           if plan.ha else {})
    credentials = steps.control_plane(
        graph, setup, [prepared[plan.first_master.name], *lbs.values()])
    joined = steps.joins(graph, setup, [*plan.masters[1:], *plan.workers],
                         credentials, {**prepared, **lbs})
    steps.delete_join_tokens(graph, setup, [credentials, *joined])
    ready = steps.wait_ready(graph, setup, plan.nodes,
                             [credentials, *joined])
    graph.add('read Kubernetes version', CLUSTER,
              lambda _: _record_patch(state, setup), needs=[ready])
    admin = graph.add('admin account', CLUSTER,
                      lambda _: setup.admin_account(), needs=[ready])
    graph.add('register VIM', CLUSTER, lambda _: register(setup.admin),
              needs=[admin])
    steps.label_nodes(graph, setup, labels, [ready])
    server = steps.storage_server(graph, setup)
    steps.register_volumes(graph, setup, [ready, server])
    return graph


def _record_patch(state: DriverState, setup: ClusterSetup) -> None:
    """The patch release kubeadm installed, once the API answers."""
    record = state.record
    if record is not None and record.kubernetes_patch is None:
        state.record = dataclasses.replace(
            record,
            kubernetes_patch=server_version(setup.session(setup.first)))


def register_vim(context: Any, vnf_instance: Any, plan: ClusterPlan,
                 admin: AdminCredentials | None) -> VimRecord:
    if admin is None:
        raise MgmtDriverError(f'instance {plan.instance_id}: no admin '
                              'credentials to register the VIM with')
    spec = VimSpec(name=plan.vim_name, auth_url=plan.auth_url,
                   bearer_token=admin.bearer_token,
                   ssl_ca_cert=admin.ca_cert,
                   description=f'Kubernetes cluster of VNF instance '
                               f'{plan.instance_id}')
    record = registry_for().register(context, spec)
    add_vim_connection(vnf_instance, record, spec.ssl_ca_cert)
    return record


def _remember_cluster(state: DriverState, plan: ClusterPlan) -> None:
    remember(state, plan.nodes)
    state.first_master = plan.first_master.host.server_id
    state.stack_id = plan.topology.stack_id
    state.control_plane_endpoint = plan.control_plane_endpoint
    state.auth_url = plan.auth_url
    state.lb_port = plan.lb_port if plan.ha else None
    state.vrrp_router_id = plan.vrrp_router_id if plan.ha else None
    state.storage_server = plan.storage.host.server_id if plan.storage \
        else None

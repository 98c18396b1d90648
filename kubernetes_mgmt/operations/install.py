"""Installing the cluster on the VNF's VMs and registering it as a VIM:
instantiate_end, and heal_end of the whole VNF (on the new stack)."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster.admin_account import AdminCredentials
from kubernetes_mgmt.cluster.api_server import server_version
from kubernetes_mgmt.cluster.cluster_plan import ClusterPlan, Node
from kubernetes_mgmt.cluster.placement import node_labels
from kubernetes_mgmt.engine.graph import CLUSTER, Graph
from kubernetes_mgmt.engine.progress import Progress
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.operations.checkpoint import remember
from kubernetes_mgmt.operations.context import OperationContext
from kubernetes_mgmt.operations.request import InstanceStore, OperationRequest
from kubernetes_mgmt.state.instance_state import DriverState
from kubernetes_mgmt.steps import declare
from kubernetes_mgmt.steps.certificates import certificates
from kubernetes_mgmt.steps.cluster_setup import ClusterSetup
from kubernetes_mgmt.steps.declare import Master
from kubernetes_mgmt.vim.registration import VimSpec

LOG = redact.get_logger(__name__)
Register = Callable[[AdminCredentials], None]


def install(operation: str, request: OperationRequest,
            store: InstanceStore) -> Progress:
    """Install the cluster, register it as a VIM, remember what later
    hooks need. Returns the timing of the phases and steps."""
    op = OperationContext.open(operation, request, store)
    plan = op.read_plan(install=True)
    store.vims.check_ready()        # before any host is touched
    labels = node_labels(plan.topology, plan.nodes, request.zones,
                         request.instance_id, request.vnfc_of_server())
    LOG.info('instance %s: %d master(s), %d worker(s), endpoint %s',
             op.instance_id, len(plan.masters), len(plan.workers),
             plan.control_plane_endpoint)

    def register(admin: AdminCredentials) -> None:
        spec = vim_spec(plan, admin)
        record = store.vims.register(spec)
        store.add_vim_connection(record, spec.ssl_ca_cert)
        op.state.vim_id, op.state.vim_name = record.id, record.name

    with op.setup(plan, first_use=True) as setup:
        try:
            with declare.tokens_deleted_on_failure(setup):
                op.run(install_graph(operation, setup, labels, op.state,
                                     register))
        finally:
            # Kept even when a step failed: a re-run then checks the same
            # host keys and builds the same cluster.
            _remember_cluster(op.state, plan)
    return op.finish()


def install_graph(operation: str, setup: ClusterSetup,
                  labels: dict[str, dict[str, str]], state: DriverState,
                  register: Register) -> Graph:
    """Every node prepared; in HA the load balancers; the control plane;
    the joins; then, once every node is Ready, the masters' certificates
    read (and renewed where due, as on every operation), the admin
    account and the VIM, labels and PersistentVolumes. The storage
    server is set up beside all of it (it shares no host with the
    cluster)."""
    plan = setup.plan
    first = Master(node=plan.first_master)
    graph = Graph(operation)
    prepared = declare.prepare(graph, setup, plan.nodes,
                               with_cni=plan.first_master)
    lbs = (declare.load_balancers(graph, setup, plan.masters,
                                  after=prepared) if plan.ha else {})
    credentials = declare.control_plane(
        graph, setup, prepared[plan.first_master.name], list(lbs.values()))
    joined = declare.joins(graph, setup, [*plan.masters[1:], *plan.workers],
                           credentials, first, {**prepared, **lbs},
                           reported=prepared)
    made = [*credentials.steps, *joined]
    declare.delete_join_tokens(graph, setup, first, made)
    ready = declare.wait_ready(graph, setup, plan.nodes, first, made)
    graph.add('read Kubernetes version', CLUSTER,
              lambda _: _record_patch(state, setup, plan.first_master),
              needs=[ready])
    certified = certificates(graph, setup, plan.masters, first, [ready],
                             state=state)
    admin = graph.add('admin account', CLUSTER,
                      lambda _: setup.admin_account(plan.first_master),
                      needs=[ready, *certified.needs])
    graph.add('register VIM', CLUSTER, lambda g: register(g.of(admin)),
              needs=[admin])
    declare.label_nodes(graph, setup, labels, certified, [ready])
    server = declare.storage_server(graph, setup)
    declare.register_volumes(graph, setup, certified, [ready, server])
    return graph


def _record_patch(state: DriverState, setup: ClusterSetup,
                  first: Node) -> None:
    """The patch release kubeadm installed, once the API answers."""
    record = state.record
    if record is not None and record.kubernetes_patch is None:
        state.record = dataclasses.replace(
            record, kubernetes_patch=server_version(setup.session(first)))


def vim_spec(plan: ClusterPlan, admin: AdminCredentials | None) -> VimSpec:
    if admin is None:
        raise MgmtDriverError(f'instance {plan.instance_id}: no admin '
                              'credentials to register the VIM with')
    return VimSpec(name=plan.vim_name, auth_url=plan.auth_url,
                   bearer_token=admin.bearer_token,
                   ssl_ca_cert=admin.ca_cert,
                   description=f'Kubernetes cluster of VNF instance '
                               f'{plan.instance_id}')


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

"""scale_end (SCALE_OUT) and scale_start (SCALE_IN, and the rollback of a
failed SCALE_OUT): workers join and leave the cluster.

Only the worker aspect scales: the control plane's etcd quorum and
HAProxy backends are fixed at instantiate. Every request is checked
before any host is touched.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster.cluster_plan import ClusterPlan, Node
from kubernetes_mgmt.cluster.naming import member_node_name
from kubernetes_mgmt.cluster.node_removal import remove_node
from kubernetes_mgmt.cluster.placement import node_labels
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.engine.graph import CLUSTER, Graph
from kubernetes_mgmt.engine.progress import Progress
from kubernetes_mgmt.errors import Problem, TopologyError, ValidationError
from kubernetes_mgmt.operations.context import OperationContext
from kubernetes_mgmt.operations.request import (
    SCALE_IN,
    SCALE_OUT,
    InstanceStore,
    OperationRequest,
    ScaleRequest,
)
from kubernetes_mgmt.params.cluster_params import ClusterParams
from kubernetes_mgmt.steps import declare
from kubernetes_mgmt.steps.certificates import certificates
from kubernetes_mgmt.steps.cluster_setup import ClusterSetup
from kubernetes_mgmt.topology.heat import read_topology
from kubernetes_mgmt.topology.hosts import Role

LOG = redact.get_logger(__name__)


def check_request(request: ScaleRequest, params: ClusterParams) -> str:
    """The request's type, once its aspect is known to be the workers'."""
    kind, aspect = request.kind, request.aspect_id
    master, worker = params.master.aspect_id, params.worker.aspect_id
    problems = []
    if kind not in (SCALE_OUT, SCALE_IN):
        problems.append(Problem('type', f'{kind!r} is neither SCALE_OUT '
                                'nor SCALE_IN'))
    if aspect and aspect == master:
        problems.append(Problem(
            'aspectId', f'{aspect!r} is the master aspect: the control '
            'plane cannot be scaled (its etcd members and load balancer '
            f'are fixed at instantiate); only {worker!r} scales'
            if worker else f'{aspect!r} is the master aspect: the control '
            'plane cannot be scaled'))
    elif not worker:
        problems.append(Problem(
            'aspectId', 'the workers of this cluster form no scaling '
            'group (worker_node.aspect_id was not given at instantiate)'))
    elif aspect != worker:
        problems.append(Problem(
            'aspectId', f'{aspect!r} is not an aspect of this cluster; '
            f'its workers scale with {worker!r}'))
    if problems:
        raise ValidationError(problems)
    return kind


# -- SCALE_OUT ------------------------------------------------------------

def scale_out(request: OperationRequest, store: InstanceStore,
              scale: ScaleRequest,
              member_stack_ids: Sequence[str]) -> Progress | None:
    """Prepare and join the new workers (nested stack ids of the new
    group members, Tacker's ``scale_out_id_list``) in parallel, label
    them with where they run (the request's granted zones), then add
    them to every node's /etc/hosts."""
    op = OperationContext.open('scale-out', request, store)
    check_request(scale, request.cluster_params())
    ids = list(dict.fromkeys(member_stack_ids))
    if not ids:
        LOG.info('scale-out %s: no new members', op.instance_id)
        return None
    plan = op.read_plan(settled=True)
    new = _members(plan, ids, lambda n: n.host.member_stack_id,
                   'stack id')
    labels = node_labels(plan.topology, new, request.zones,
                         request.instance_id, request.vnfc_of_server())
    LOG.info('scale-out %s: joining %s', op.instance_id,
             ', '.join(n.label for n in new))
    # Known before any host is touched: a rollback finds them.
    op.remember(new)
    with op.setup(plan) as setup:
        with declare.tokens_deleted_on_failure(setup):
            op.run(scale_out_graph(op, setup, new, labels))
    return op.finish()


def scale_out_graph(op: OperationContext, setup: ClusterSetup,
                    new: Sequence[Node],
                    labels: dict[str, dict[str, str]]) -> Graph:
    """Each new worker prepared, then joined as soon as it and the join
    credentials are ready (and the masters' certificates read, renewed
    where due); once all are Ready, labelled and added to the
    /etc/hosts of the other nodes. Those are bystanders: one that is down
    must not undo the scale-out."""
    graph = Graph(op.operation)
    master = certificates(graph, setup, setup.plan.masters,
                          op.choose_master(graph, setup), state=op.state)
    prepared = declare.prepare(graph, setup, new)
    credentials = declare.refresh_join(graph, setup, master)
    joined = declare.joins(graph, setup, new, credentials, master,
                           prepared, reported=prepared)
    declare.delete_join_tokens(graph, setup, master,
                               [*credentials.steps, *joined])
    ready = declare.wait_ready(graph, setup, new, master, joined)
    declare.label_nodes(graph, setup, labels, master, [ready])
    declare.bystander_hosts(graph, setup,
                            [n for n in setup.plan.nodes if n not in new],
                            [ready])
    return graph


# -- SCALE_IN and the rollback of SCALE_OUT --------------------------------

def scale_in(request: OperationRequest, store: InstanceStore,
             scale: ScaleRequest,
             member_names: Sequence[str]) -> Progress | None:
    """Remove the workers named by group member resource names (Tacker's
    ``scale_name_list``) before Heat deletes their VMs: cordon, drain,
    delete each node, forget its host key and record, drop it from the
    other nodes' /etc/hosts.

    With a SCALE_OUT request this is the rollback of a failed scale-out:
    the same, for nodes that may have joined only partly (or not at
    all)."""
    op = OperationContext.open('scale-in', request, store)
    params = request.cluster_params()
    if scale.kind == SCALE_OUT and scale.aspect_id == params.master.aspect_id:
        # scale_end refused this scale-out before touching any VM: there
        # is nothing to undo, and Tacker's rollback must be able to go on
        # and delete the VMs.
        LOG.info('scale-out rollback %s: the master aspect never scales; '
                 'no node was joined', op.instance_id)
        return None
    rollback = check_request(scale, params) == SCALE_OUT
    if rollback:
        op.operation = op.progress.operation = 'scale-out rollback'
    names = list(dict.fromkeys(member_names))
    if not names:
        LOG.info('%s %s: no members to remove', op.operation,
                 op.instance_id)
        return None
    plan = op.read_plan()
    in_heat = {n.host.member_name for n in plan.workers}
    known = [n for n in names if n in in_heat]
    leaving = _members(plan, known, lambda n: n.host.member_name,
                       'member name')
    gone = [n for n in names if n not in in_heat]
    if gone and not rollback:
        _members(plan, gone, lambda n: n.host.member_name, 'member name')
    # A rollback may name members Heat no longer lists; their nodes can
    # still be registered.
    names_only = [member_node_name(Role.WORKER, n) for n in gone]
    staying = dataclasses.replace(
        plan, workers=tuple(w for w in plan.workers if w not in leaving))
    with op.setup(staying) as setup:
        op.run(scale_in_graph(op, setup, leaving, names_only))
    return op.finish()


def scale_in_graph(op: OperationContext, setup: ClusterSetup,
                   leaving: Sequence[Node],
                   names_only: Sequence[str]) -> Graph:
    """Every leaving node drained and deleted (in parallel), then
    forgotten, then dropped from the /etc/hosts of the nodes that stay
    (``setup.plan``). ``names_only``: nodes Heat no longer lists. The
    masters' certificates are read (renewed where due) first."""
    graph = Graph(op.operation)
    master = certificates(graph, setup, setup.plan.masters,
                          op.choose_master(graph, setup), state=op.state)
    timeout = CONF.kubernetes_mgmt.drain_timeout
    removed = [graph.add('remove node', where,
                         lambda g, name=name: remove_node(
                             setup.session(master.of(g)), name,
                             drain_timeout=timeout), needs=master.needs)
               for name, where in [*((n.name, n.label) for n in leaving),
                                   *((n, n) for n in names_only)]]

    def forget(_) -> None:
        for node in leaving:
            setup.runtime.forget_host_key(node.host.server_id)
            op.state.forget_node(node.host.server_id)
        for server_id, record in list(op.state.node_records().items()):
            if record.name in names_only:
                op.state.forget_node(server_id)

    forgotten = graph.add('forget nodes', CLUSTER, forget, needs=removed)
    declare.bystander_hosts(graph, setup, setup.plan.nodes, [forgotten])
    return graph


def _members(plan: ClusterPlan, keys: Sequence[str], key_of,
             what: str) -> list[Node]:
    """The worker nodes whose ``key_of`` is in ``keys``, in that order."""
    workers = {key_of(n): n for n in plan.workers}
    masters = {key_of(n) for n in plan.masters}
    problems = []
    for key in keys:
        if key in masters:
            problems.append(f'{key} is a master')
        elif key not in workers:
            problems.append(f'no worker group member with {what} {key}')
    if problems:
        raise TopologyError(
            f'stack {plan.topology.stack_id}: {"; ".join(problems)}; the '
            f'worker members are: '
            f'{", ".join(sorted(str(k) for k in workers)) or "(none)"}')
    return [workers[k] for k in keys]


def members_outside(request: OperationRequest, store: InstanceStore,
                    known_servers: Collection[str]) -> list[str]:
    """Worker members Heat has whose server is not in ``known_servers``:
    what the rollback of a failed scale-out removes when Tacker names
    none (v2 lists only the VNFCs from before the scale-out; its failed
    attempt may have joined some)."""
    topology = read_topology(store.heat(), request.stack(),
                             request.cluster_params())
    return [h.member_name for h in topology.workers
            if h.member_name and h.server_id not in known_servers]

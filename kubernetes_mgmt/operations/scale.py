"""scale_end (SCALE_OUT) and scale_start (SCALE_IN, and the rollback of a
failed SCALE_OUT): workers join and leave the cluster.

Only the worker aspect scales: the control plane's etcd quorum and
HAProxy backends are fixed at instantiate. Every request is checked
before any host is touched.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster.cluster_plan import ClusterPlan, Node
from kubernetes_mgmt.cluster.naming import member_node_name
from kubernetes_mgmt.cluster.node_removal import remove_node
from kubernetes_mgmt.cluster.placement import node_labels
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.engine.graph import CLUSTER, Graph
from kubernetes_mgmt.engine.progress import Progress
from kubernetes_mgmt.errors import Problem, TopologyError, ValidationError
from kubernetes_mgmt.operations.context import Day2
from kubernetes_mgmt.params.cluster_params import ClusterParams
from kubernetes_mgmt.shim import tacker_objects
from kubernetes_mgmt.steps import declare as steps
from kubernetes_mgmt.steps.cluster_setup import ClusterSetup
from kubernetes_mgmt.topology.hosts import Role

LOG = redact.get_logger(__name__)
SCALE_OUT = 'SCALE_OUT'
SCALE_IN = 'SCALE_IN'


def check_request(request: Any, params: ClusterParams) -> str:
    """The request's type, once its aspect is known to be the workers'."""
    kind = tacker_objects.scale_type(request)
    aspect = tacker_objects.aspect_id(request)
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

def scale_out(context: Any, vnf_instance: Any, request: Any,
              member_stack_ids: Sequence[str],
              vnf: dict | None = None,
              zones: dict[str, str] | None = None) -> Progress | None:
    """Prepare and join the new workers (nested stack ids of the new
    group members, Tacker's ``scale_out_id_list``) in parallel, label
    them with where they run (``zones``: server id -> granted zone), then
    add them to every node's /etc/hosts."""
    op = Day2.load('scale-out', context, vnf_instance)
    check_request(request, op.params)
    ids = list(dict.fromkeys(member_stack_ids))
    if not ids:
        LOG.info('scale-out %s: no new members', op.instance_id)
        return None
    plan = op.read_plan(vnf, settled=True)
    new = _members(plan, ids, lambda n: n.host.member_stack_id,
                   'stack id')
    labels = node_labels(plan.topology, new, zones or {})
    LOG.info('scale-out %s: joining %s', op.instance_id,
             ', '.join(n.label for n in new))
    # Known before any host is touched: a rollback finds them.
    op.remember(new)
    with op.sessions() as sessions:
        setup = ClusterSetup(plan, sessions, op.progress)
        with steps.tokens_deleted_on_failure(setup):
            op.run(scale_out_graph(op, setup, new, labels))
    return op.finish()


def scale_out_graph(op: Day2, setup: ClusterSetup, new: Sequence[Node],
                    labels: dict[str, dict[str, str]]) -> Graph:
    """Each new worker prepared, then joined as soon as it and the join
    credentials are ready; once all are Ready, labelled and added to the
    /etc/hosts of the other nodes. Those are bystanders: one that is down
    must not undo the scale-out."""
    graph = Graph(op.operation)
    helper = op.choose_helper(graph, setup)
    prepared = steps.prepare(graph, setup, new)
    credentials = steps.refresh_join(graph, setup, [helper])
    joined = steps.joins(graph, setup, new, credentials, prepared)
    steps.delete_join_tokens(graph, setup, [credentials, *joined])
    ready = steps.wait_ready(graph, setup, new, joined)
    steps.label_nodes(graph, setup, labels, [ready])
    steps.bystander_hosts(graph, setup,
                          [n for n in setup.plan.nodes if n not in new],
                          [ready])
    return graph


# -- SCALE_IN and the rollback of SCALE_OUT --------------------------------

def scale_in(context: Any, vnf_instance: Any, request: Any,
             member_names: Sequence[str]) -> Progress | None:
    """Remove the workers named by group member resource names (Tacker's
    ``scale_name_list``) before Heat deletes their VMs: cordon, drain,
    delete each node, forget its host key and record, drop it from the
    other nodes' /etc/hosts.

    With a SCALE_OUT request this is the rollback of a failed scale-out:
    the same, for nodes that may have joined only partly (or not at
    all)."""
    op = Day2.load('scale-in', context, vnf_instance)
    if tacker_objects.scale_type(request) == SCALE_OUT and \
            tacker_objects.aspect_id(request) == op.params.master.aspect_id:
        # scale_end refused this scale-out before touching any VM: there
        # is nothing to undo, and Tacker's rollback must be able to go on
        # and delete the VMs.
        LOG.info('scale-out rollback %s: the master aspect never scales; '
                 'no node was joined', op.instance_id)
        return None
    rollback = check_request(request, op.params) == SCALE_OUT
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
    with op.sessions() as sessions:
        setup = ClusterSetup(staying, sessions, op.progress)
        op.run(scale_in_graph(op, setup, leaving, names_only))
    return op.finish()


def scale_in_graph(op: Day2, setup: ClusterSetup, leaving: Sequence[Node],
                   names_only: Sequence[str]) -> Graph:
    """Every leaving node drained and deleted (in parallel), then
    forgotten, then dropped from the /etc/hosts of the nodes that stay
    (``setup.plan``). ``names_only``: nodes Heat no longer lists."""
    graph = Graph(op.operation)
    helper = op.choose_helper(graph, setup)
    timeout = CONF.kubernetes_mgmt.drain_timeout
    removed = [graph.add('remove node', where,
                         lambda _, name=name: remove_node(
                             setup.session(setup.first), name,
                             drain_timeout=timeout), needs=[helper])
               for name, where in [*((n.name, n.label) for n in leaving),
                                   *((n, n) for n in names_only)]]

    def forget(_) -> None:
        for node in leaving:
            setup.sessions.keys.forget(node.host.server_id)
            op.state.forget_node(node.host.server_id)
        for server_id, record in list(op.state.node_records().items()):
            if record.name in names_only:
                op.state.forget_node(server_id)

    forgotten = graph.add('forget nodes', CLUSTER, forget, needs=removed)
    steps.bystander_hosts(graph, setup, setup.plan.nodes, [forgotten])
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

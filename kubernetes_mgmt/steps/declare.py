"""The step graphs' building blocks for the operations that change the
cluster's nodes.

Each function declares steps on a ``Graph`` (nothing runs here): the
actions are ``ClusterSetup`` methods, bound to the node they concern and
fed with the results of the steps they need. What a step needs is all
it waits for: a worker joins as soon as its own preparation and the join
credentials are ready, not when the slowest node is prepared;
control-plane joins run one at a time (each grows etcd) in the order of
the masters.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster import etcd_snapshot as etcd_snapshot_mod
from kubernetes_mgmt.cluster.cluster_plan import Node
from kubernetes_mgmt.cluster.roles import JoinSecrets
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.engine.graph import CLUSTER, Check, Given, Graph, Step
from kubernetes_mgmt.steps import storage_actions
from kubernetes_mgmt.steps.cluster_setup import ClusterSetup
from kubernetes_mgmt.topology.hosts import Role

LOG = redact.get_logger(__name__)
ETCD = 'etcd'   # the serial group of control-plane membership changes


@dataclass(frozen=True)
class Master:
    """The master a step runs kubectl on: the plan's first master
    (instantiate sets it up), or the result of the step that chose it."""

    node: Node | None = None
    chosen_by: Step | None = None

    def of(self, given: Given) -> Node:
        if self.chosen_by is not None:
            return given.of(self.chosen_by)
        assert self.node is not None
        return self.node

    @property
    def needs(self) -> list[Step]:
        return [self.chosen_by] if self.chosen_by is not None else []


@dataclass(frozen=True)
class Credentials:
    """The steps whose results may be the join credentials: the first
    that produced them wins (``init`` makes them; a ``refresh-join``
    after it is skipped then)."""

    steps: tuple[Step, ...]

    def of(self, given: Given) -> JoinSecrets:
        for step in self.steps:
            secrets = given.of(step)
            if secrets is not None:
                return secrets
        raise ValueError('no step of the graph made join credentials')


def prepare(graph: Graph, setup: ClusterSetup, nodes: Sequence[Node], *,
            with_cni: Node | None = None) -> dict[str, Step]:
    """``prepare`` on each node (``with_cni``: the node that will apply
    the package's CNI manifest); by node name. Each step's result is the
    facts the node reported."""
    return {n.name: graph.add(
        'prepare', n.label,
        lambda _, n=n: setup.prepare(n, with_cni=n is with_cni))
        for n in nodes}


def load_balancers(graph: Graph, setup: ClusterSetup, on: Sequence[Node],
                   after: Mapping[str, Step | None] | None = None,
                   backends: Sequence[Node] | None = None,
                   needs: Sequence[Step | None] = ()) -> dict[str, Step]:
    """HAProxy and keepalived on the masters ``on`` (forwarding to
    ``backends``, default all masters), each after its own step in
    ``after`` and the VRRP password; by node name."""
    after = after or {}
    password = graph.add('read VRRP password', CLUSTER,
                         lambda _: setup.vrrp_password(on), needs=needs)
    return {m.name: graph.add(
        'load balancer', m.label,
        lambda g, m=m: setup.load_balancer(m, g.of(password), backends),
        needs=[password, after.get(m.name), *needs]) for m in on}


def control_plane(graph: Graph, setup: ClusterSetup, prepared: Step,
                  needs: Sequence[Step | None]) -> Credentials:
    """``kubeadm init`` on the first master (``prepared``: its prepare)
    unless facts show it done; else fresh join credentials from the
    control plane an earlier attempt set up."""
    first = setup.plan.first_master
    init = graph.add(
        'init', first.label, lambda g: setup.init(first, g.facts),
        check=lambda g: setup.init_needed(first, g.of(prepared)),
        needs=[prepared, *needs],
        why='the first master runs an initialised control plane')
    refresh = graph.add(
        'refresh-join', first.label,
        lambda _: setup.refresh_join(first, apply_cni=True),
        check=lambda g: g.of(init) is None, needs=[init],
        why='init made the join credentials')
    return Credentials((init, refresh))


def refresh_join(graph: Graph, setup: ClusterSetup,
                 master: Master) -> Credentials:
    """Fresh join credentials from the running control plane."""
    return Credentials((graph.add(
        'refresh-join', CLUSTER,
        lambda g: setup.refresh_join(master.of(g)), needs=master.needs),))


def joins(graph: Graph, setup: ClusterSetup, nodes: Sequence[Node],
          credentials: Credentials, master: Master,
          ready: Mapping[str, Step | None],
          reported: Mapping[str, Step] | None = None) -> list[Step]:
    """Each node joins once the credentials and its own entry of
    ``ready`` are done; masters one at a time, in order, and workers once
    the control plane is complete (as kubeadm-based installers do: a
    worker never joins through a control plane still growing). Masters
    come first in ``nodes``. ``reported``: the steps whose results are
    the facts each node reported (its prepare), where its entry of
    ``ready`` is that step."""
    steps: list[Step] = []
    previous_master: Step | None = None
    for node in nodes:
        is_master = node.host.role is Role.MASTER
        facts = (reported or {}).get(node.name)
        step = graph.add(
            'join-master' if is_master else 'join-worker', node.label,
            lambda g, n=node: setup.join(n, g.facts, master.of(g),
                                         credentials.of(g)),
            check=lambda g, n=node, f=facts: setup.join_needed(
                n, master.of(g), g.of(f) if f else None),
            needs=[*credentials.steps, *master.needs, ready.get(node.name),
                   facts, previous_master],
            serial=ETCD if is_master else None,
            why='the node has joined')
        if is_master:
            previous_master = step
        steps.append(step)
    return steps


def delete_join_tokens(graph: Graph, setup: ClusterSetup, master: Master,
                       joins: Sequence[Step | None]) -> Step:
    """Once every join of the operation is done (``joins``: the join
    steps and the steps that made the credentials), the bootstrap tokens
    the driver made are deleted: kubeadm would keep them for their TTL.
    Should a join fail, ``tokens_deleted_on_failure`` does it instead."""
    return graph.add('delete bootstrap tokens', CLUSTER,
                     lambda g: setup.delete_join_tokens(master.of(g)),
                     needs=[*joins, *master.needs])


@contextlib.contextmanager
def tokens_deleted_on_failure(setup: ClusterSetup) -> Iterator[None]:
    """Around the run of an operation's graph: when it fails after join
    credentials were made, the bootstrap tokens are deleted all the same
    through the master that made them (the graph's own step needs every
    join to have succeeded). A retry makes new ones."""
    try:
        yield
    except Exception:
        master = setup.tokens.made_on
        if setup.tokens.ids and master is not None:
            try:
                setup.delete_join_tokens(master)
            except Exception:   # never hide the operation's own error
                LOG.exception('deleting the bootstrap tokens failed')
        raise


def wait_ready(graph: Graph, setup: ClusterSetup, nodes: Sequence[Node],
               master: Master, needs: Sequence[Step | None]) -> Step:
    return graph.add('wait for Ready', CLUSTER,
                     lambda g: setup.wait_ready(master.of(g), nodes),
                     needs=[*needs, *master.needs])


def label_nodes(graph: Graph, setup: ClusterSetup,
                labels: dict[str, dict[str, str]], master: Master,
                needs: Sequence[Step | None]) -> Step | None:
    if not labels:
        return None
    return graph.add('label nodes', CLUSTER,
                     lambda g: setup.label_nodes(master.of(g), labels),
                     needs=[*needs, *master.needs])


def bystander_hosts(graph: Graph, setup: ClusterSetup,
                    nodes: Sequence[Node],
                    needs: Sequence[Step | None]) -> list[Step]:
    """/etc/hosts of nodes outside the operation: best effort each."""
    return [graph.add('update /etc/hosts', n.label,
                      lambda _, n=n: setup.refresh_bystander_hosts(n),
                      needs=needs)
            for n in nodes]


def storage_server(graph: Graph, setup: ClusterSetup) -> Step | None:
    """The NFS server's volumes and exports, beside the cluster."""
    node = setup.plan.storage
    if node is None:
        return None
    return graph.add('storage server', node.label,
                     lambda _: storage_actions.setup_server(
                         setup.plan, setup.session(node)))


def register_volumes(graph: Graph, setup: ClusterSetup, master: Master,
                     needs: Sequence[Step | None]) -> Step | None:
    if not setup.plan.persistent_volumes:
        return None
    return graph.add('register persistent volumes', CLUSTER,
                     lambda g: storage_actions.register_volumes(
                         setup.plan, setup.session(master.of(g))),
                     needs=[*needs, *master.needs])


def etcd_snapshot(graph: Graph, setup: ClusterSetup, masters: Sequence[Node],
                  needs: Sequence[Step | None], operation: str,
                  remember: Callable[[etcd_snapshot_mod.Snapshot], None]
                  | None = None, check: Check | None = None,
                  why: str = '') -> Step:
    """An etcd snapshot before a control-plane change, on the first
    healthy master of ``masters`` (those that stay); ``remember`` gets
    it (to record it in the instance). Steps that change the control
    plane must need this one. ``check``: falsy when no change is left
    (a retry after the control plane was done; ``why`` says so)."""
    def take(_) -> etcd_snapshot_mod.Snapshot:
        snapshot = etcd_snapshot_mod.take(
            setup.plan, setup.session, operation,
            CONF.kubernetes_mgmt.etcd_snapshot_retention, masters=masters)
        if remember is not None:
            remember(snapshot)
        return snapshot

    return graph.add('etcd snapshot', CLUSTER, take, needs=list(needs),
                     check=check, why=why)

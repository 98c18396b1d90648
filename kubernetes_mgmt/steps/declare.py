"""The step graphs of the operations that change the cluster's nodes.

Each function declares steps on a ``Graph`` (nothing runs here): the
actions are ``ClusterSetup`` methods, bound to the node they concern.
What a step needs is all it waits for: a worker joins as soon as its own
preparation and the join credentials are ready, not when the slowest
node is prepared; control-plane joins run one at a time (each grows
etcd) in the order of the masters.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster.cluster_plan import Node
from kubernetes_mgmt.engine.graph import CLUSTER, Graph, Step
from kubernetes_mgmt.steps import storage_actions as storage
from kubernetes_mgmt.steps.cluster_setup import ClusterSetup
from kubernetes_mgmt.topology.hosts import Role

LOG = redact.get_logger(__name__)
ETCD = 'etcd'   # the serial group of control-plane membership changes


def prepare(graph: Graph, setup: ClusterSetup,
            nodes: Sequence[Node]) -> dict[str, Step]:
    """``prepare`` on each node; by node name."""
    return {n.name: graph.add('prepare', n.label, _on(setup.prepare, n))
            for n in nodes}


def load_balancers(graph: Graph, setup: ClusterSetup, on: Sequence[Node],
                   after: dict[str, Step | None] | None = None,
                   backends: Sequence[Node] | None = None,
                   needs: Sequence[Step | None] = ()) -> dict[str, Step]:
    """HAProxy and keepalived on the masters ``on`` (forwarding to
    ``backends``, default all masters), each after its own step in
    ``after`` and the VRRP password; by node name."""
    after = after or {}
    password = graph.add('read VRRP password', CLUSTER,
                         lambda _: setup.read_vrrp_password(on),
                         needs=needs)
    return {m.name: graph.add(
        'load balancer', m.label,
        lambda _, m=m: setup.load_balancer(m, backends),
        needs=[password, after.get(m.name), *needs]) for m in on}


def control_plane(graph: Graph, setup: ClusterSetup,
                  needs: Sequence[Step | None]) -> Step:
    """``kubeadm init`` on the first master unless facts show it done;
    then the join credentials (made by init, or refreshed when init was
    done before)."""
    first = setup.first.label
    init = graph.add('init', first, setup.init, check=setup.init_needed,
                     needs=needs, why='the first master runs an initialised '
                                      'control plane')
    return graph.add('refresh-join', first,
                     lambda _: setup.refresh_join(apply_cni=True),
                     check=lambda: setup.secrets is None, needs=[init],
                     why='init made the join credentials')


def refresh_join(graph: Graph, setup: ClusterSetup,
                 needs: Sequence[Step | None]) -> Step:
    """Fresh join credentials from the running control plane."""
    return graph.add('refresh-join', CLUSTER,
                     lambda _: setup.refresh_join(), needs=needs)


def joins(graph: Graph, setup: ClusterSetup, nodes: Sequence[Node],
          credentials: Step, ready: dict[str, Step | None]) -> list[Step]:
    """Each node joins once ``credentials`` and its own entry of
    ``ready`` are done; masters one at a time, in order, and workers
    once the control plane is complete (as kubeadm-based installers do:
    a worker never joins through a control plane still growing). Masters
    come first in ``nodes``."""
    steps: list[Step] = []
    previous_master: Step | None = None
    for node in nodes:
        master = node.host.role is Role.MASTER
        step = graph.add(
            'join-master' if master else 'join-worker', node.label,
            _on(setup.join, node), check=_on0(setup.join_needed, node),
            needs=[credentials, ready.get(node.name), previous_master],
            serial=ETCD if master else None,
            why='the node has joined')
        if master:
            previous_master = step
        steps.append(step)
    return steps


def delete_join_tokens(graph: Graph, setup: ClusterSetup,
                       joins: Sequence[Step | None]) -> Step:
    """Once every join of the operation is done (``joins``: the join
    steps and the step that made the credentials), the bootstrap tokens
    the driver made are deleted: kubeadm would keep them for their TTL.
    Should a join fail, ``tokens_deleted_on_failure`` does it instead."""
    return graph.add('delete bootstrap tokens', CLUSTER,
                     lambda _: setup.delete_join_tokens(), needs=joins)


@contextlib.contextmanager
def tokens_deleted_on_failure(setup: ClusterSetup) -> Iterator[None]:
    """Around the run of an operation's graph: when it fails after join
    credentials were made, the bootstrap tokens are deleted all the same
    (the graph's own step needs every join to have succeeded). A retry
    makes new ones."""
    try:
        yield
    except Exception:
        if setup.made_tokens and setup.sessions is not None:
            try:
                setup.delete_join_tokens()
            except Exception:   # never hide the operation's own error
                LOG.exception('deleting the bootstrap tokens failed')
        raise


def wait_ready(graph: Graph, setup: ClusterSetup, nodes: Sequence[Node],
               needs: Sequence[Step | None]) -> Step:
    return graph.add('wait for Ready', CLUSTER,
                     lambda _: setup.wait_ready(nodes), needs=needs)


def label_nodes(graph: Graph, setup: ClusterSetup,
                labels: dict[str, dict[str, str]],
                needs: Sequence[Step | None]) -> Step | None:
    if not labels:
        return None
    return graph.add('label nodes', CLUSTER,
                     lambda _: setup.label_nodes(labels), needs=needs)


def bystander_hosts(graph: Graph, setup: ClusterSetup,
                    nodes: Sequence[Node],
                    needs: Sequence[Step | None]) -> list[Step]:
    """/etc/hosts of nodes outside the operation: best effort each."""
    return [graph.add('update /etc/hosts', n.label,
                      _on(setup.refresh_bystander_hosts, n), needs=needs)
            for n in nodes]


def _on(method: Callable[..., Any], node: Node) -> Callable[[Any], Any]:
    """An action: ``method(node)``, or ``method(node, facts)`` when the
    step's check handed facts over."""
    def action(facts: Any) -> Any:
        return method(node) if facts is None else method(node, facts)
    return action


def _on0(method: Callable[[Node], Any], node: Node) -> Callable[[], Any]:
    return lambda: method(node)


def storage_server(graph: Graph, setup: ClusterSetup) -> Step | None:
    """The NFS server's volumes and exports, beside the cluster."""
    node = setup.plan.storage
    if node is None:
        return None
    return graph.add('storage server', node.label,
                     lambda _: storage.setup_server(setup.plan,
                                                    setup.session(node)))


def register_volumes(graph: Graph, setup: ClusterSetup,
                     needs: Sequence[Step | None]) -> Step | None:
    if not setup.plan.persistent_volumes:
        return None
    return graph.add('register persistent volumes', CLUSTER,
                     lambda _: storage.register_volumes(
                         setup.plan, setup.session(setup.first)),
                     needs=needs)

"""What an operation learnt is stored as soon as it is learnt.

After every step of the graph, the host keys the operation has verified
and the nodes that have joined go into the instance's state, which is
saved when it changed (a registered VIM's id is put there by its step).
A conductor killed in the middle of an operation thus leaves a state
from which ``op retry`` goes on with the same pinned keys, not one that
trusts anew.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from kubernetes_mgmt.cluster.cluster_plan import ClusterPlan, Node
from kubernetes_mgmt.engine.graph import Step
from kubernetes_mgmt.operations.request import InstanceStore
from kubernetes_mgmt.remote.hostkeys import HostKeyStore
from kubernetes_mgmt.state.instance_state import DriverState, NodeRecord

# The steps after which a node is part of the cluster.
JOINS = ('init', 'join-master', 'join-worker')


class Checkpoint:
    """``on_settled`` for the engine: keeps ``state`` saved."""

    def __init__(self, store: InstanceStore, state: DriverState,
                 keys: HostKeyStore, plan: ClusterPlan):
        self._store = store
        self._state = state
        self._keys = keys
        self._plan = plan
        self._by_label = {n.label: n for n in plan.nodes}
        self._saved: dict | None = None

    def __call__(self, step: Step, succeeded: bool) -> None:
        node = self._by_label.get(step.host)
        if succeeded and node is not None and step.name in JOINS:
            remember(self._state, [node])
        self.keep_keys()
        self.save_if_changed()

    def keep_keys(self) -> None:
        """The verified keys of the plan's hosts (entries of older
        releases by address included) replace the stored ones."""
        hosts = self._plan.topology.hosts
        wanted = [h.server_id for h in hosts] + [h.ssh_ip for h in hosts]
        self._state.host_keys = self._keys.for_hosts(wanted)

    def save_if_changed(self) -> None:
        current = dataclasses.asdict(self._state)
        if current != self._saved:
            self._store.save(self._state)
            self._saved = current


def remember(state: DriverState, nodes: Sequence[Node]) -> None:
    """``nodes`` as the state's records of their servers."""
    for node in nodes:
        state.remember_node(node.host.server_id, NodeRecord(
            name=node.name, role=node.host.role.value, ip=node.ip))

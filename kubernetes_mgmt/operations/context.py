"""What every operation after instantiate starts from.

The instantiate request as Tacker stored it (validated again), what the
driver stored in the instance, the cluster plan read from the current
Heat stack, a healthy master to run kubectl on, and SSH sessions whose
host keys are written back to the instance when the operation ends.
"""
from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster import roles
from kubernetes_mgmt.cluster.cluster_plan import ClusterPlan, Node, build_plan
from kubernetes_mgmt.cluster.record import ClusterRecord
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.engine import runner as engine
from kubernetes_mgmt.engine.graph import CLUSTER, Graph, Step
from kubernetes_mgmt.engine.progress import Progress
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.operations import access
from kubernetes_mgmt.operations.checkpoint import Checkpoint, remember
from kubernetes_mgmt.params.cluster_params import ClusterParams
from kubernetes_mgmt.params.validate import read_stored_params
from kubernetes_mgmt.remote.ssh import Sessions
from kubernetes_mgmt.shim import tacker_objects
from kubernetes_mgmt.shim.package_source import package_dir
from kubernetes_mgmt.state import instance_state
from kubernetes_mgmt.state.instance_state import DriverState
from kubernetes_mgmt.steps.cluster_setup import ClusterSetup
from kubernetes_mgmt.steps.helper_master import (
    reachable_ready_master,
)
from kubernetes_mgmt.topology.heat import read_topology
from kubernetes_mgmt.topology.heat_client import heat_client_for
from kubernetes_mgmt.topology.hosts import Topology
from kubernetes_mgmt.topology.stack_status import require_settled

LOG = redact.get_logger(__name__)


def stored_params(vnf_instance: Any) -> ClusterParams:
    """The instantiate request's cluster parameters, validated again."""
    stored = tacker_objects.stored_additional_params(vnf_instance)
    if not stored:
        raise MgmtDriverError(
            f'VNF instance {tacker_objects.instance_id(vnf_instance)} has '
            'no stored instantiate parameters '
            '(instantiated_vnf_info.additional_params is empty): it was '
            'not instantiated with this driver')
    return read_stored_params(stored)


@dataclass
class Day2:
    operation: str
    context: Any
    vnf_instance: Any
    params: ClusterParams
    state: DriverState
    progress: Progress
    # Set by read_plan and sessions: the stack's Heat client, the plan,
    # and what saves the state after each step.
    heat: Any = None
    plan: ClusterPlan | None = None
    checkpoint: Checkpoint | None = None

    @classmethod
    def load(cls, operation: str, context: Any, vnf_instance: Any) -> Day2:
        """Read and verify what Tacker stored; touches no host."""
        instance_id = tacker_objects.instance_id(vnf_instance)
        state = instance_state.load(vnf_instance)  # refuses tampered ones
        return cls(operation, context, vnf_instance,
                   stored_params(vnf_instance), state,
                   Progress(operation, instance_id))

    @property
    def instance_id(self) -> str:
        return tacker_objects.instance_id(self.vnf_instance)

    def read_plan(self, vnf: dict | None = None,
                  settled: bool = False) -> ClusterPlan:
        """The cluster as the current Heat stack holds it, planned from
        the cluster's record; with ``settled`` (after Tacker's stack
        update) once Heat has finished with the stack, successfully."""
        with self.progress.phase('read topology'):
            heat = self.heat = heat_client_for(self.vnf_instance,
                                               self.context)
            stack_id = tacker_objects.stack_id(self.vnf_instance, vnf)
            if settled:
                require_settled(
                    heat, stack_id,
                    CONF.kubernetes_mgmt.stack_settle_timeout)
            topology = read_topology(heat, stack_id, self.params)
            root = package_dir(self.context, self.vnf_instance)
            record = self.state.record or self._legacy_record(topology,
                                                              root)
            plan = self.plan = build_plan(self.instance_id, self.params,
                                          topology, root, record=record)
            roles.check_plan(plan)  # before any host is touched
            return plan

    def _legacy_record(self, topology: Topology, root: Path
                       ) -> ClusterRecord:
        """A cluster instantiated by plugin 0.1 has no record: rebuild
        one from what that version stored (endpoint, LB port, VRRP id)
        and today's configuration for the rest, and keep it."""
        if not self.state.nodes:
            raise MgmtDriverError(
                f'{self.operation}: VNF instance {self.instance_id} has no '
                'cluster record (the driver state stored at instantiate): '
                'it was not instantiated by this driver, or its '
                'instantiate never reached the VMs. Heal the whole VNF to '
                'install the cluster again.')
        state = self.state
        today = build_plan(self.instance_id, self.params, topology,
                           root).freeze()
        record = dataclasses.replace(
            today,
            control_plane_endpoint=state.control_plane_endpoint
            or today.control_plane_endpoint,
            auth_url=state.auth_url or today.auth_url,
            lb_port=state.lb_port or today.lb_port,
            vrrp_router_id=state.vrrp_router_id or today.vrrp_router_id)
        LOG.warning('%s %s: no cluster record (instantiated by an older '
                    'plugin version): recorded %s from the stored state '
                    'and today\'s configuration', self.operation,
                    self.instance_id, record)
        state.record = record
        return record

    def helper(self, plan: ClusterPlan, avoid: Collection[str],
               sessions: Sessions) -> Node:
        """The master that runs kubectl, etcdctl and refresh-join: the
        stored first master unless it is in ``avoid`` (node names being
        rebuilt or removed), else the next master in Heat's order; a
        master that does not answer SSH or whose node is NotReady is
        skipped with a warning. The choice is remembered, so later hooks
        start from the same master."""
        candidates = [m for m in plan.masters if m.name not in avoid]
        if not candidates:
            raise MgmtDriverError(
                f'{self.operation}: no master outside '
                f'{", ".join(sorted(avoid))} is left to run the cluster '
                'from')
        stored = [m for m in candidates
                  if m.host.server_id == self.state.first_master]
        ordered = stored + [m for m in candidates if m not in stored]
        chosen = reachable_ready_master(
            f'{self.operation} {self.instance_id}', ordered, sessions)
        if chosen.host.server_id != self.state.first_master:
            LOG.info('%s %s: %s now runs the cluster operations',
                     self.operation, self.instance_id, chosen.label)
            self.state.first_master = chosen.host.server_id
        return chosen

    def choose_helper(self, graph: Graph, setup: ClusterSetup,
                      avoid: Collection[str] = ()) -> Step:
        """The step that makes ``helper`` the master of ``setup`` (its
        ``first``): every step that runs kubectl needs it."""
        def choose(_) -> None:
            setup.first = self.helper(setup.plan, avoid, setup.sessions)
        return graph.add('choose master', CLUSTER, choose)

    def run(self, graph: Graph) -> dict[str, Any]:
        return engine.run(graph, self.progress,
                          parallel=CONF.kubernetes_mgmt.max_parallel_hosts,
                          on_settled=self.checkpoint)

    @contextlib.contextmanager
    def sessions(self, replacing: Iterable[str] = ()) -> Iterator[Sessions]:
        """SSH sessions of the plan read last (``read_plan``); a VM not
        seen before, or one of the server ids in ``replacing`` (rebuilt
        in place), must present the key it published. Host keys learnt
        are stored after each step and when the operation ends, even
        when it fails."""
        keys = access.host_keys(self.state, self.heat, replacing)
        self.checkpoint = Checkpoint(self.vnf_instance, self.state, keys,
                                     self.plan)
        try:
            with Sessions(keys, identity=access.login_key(
                    self.instance_id)) as sessions:
                self.progress.sessions = sessions
                yield sessions
        finally:
            self.checkpoint.keep_keys()
            self.save()

    def remember(self, nodes: Iterable[Node]) -> None:
        remember(self.state, list(nodes))

    def save(self) -> None:
        instance_state.save(self.vnf_instance, self.state)

    def finish(self) -> Progress:
        self.save()
        LOG.info('%s', self.progress.summary())
        return self.progress

"""Opening an operation: its state, its cluster plan, its SSH sessions,
and what is saved when, for every operation and for ``plan``.

The state stored in the instance is loaded (and checked), the cluster
plan read from the current Heat stack following the cluster's record, a
master chosen to run kubectl (a step), and SSH sessions opened whose host
keys are saved after each step and when the operation ends.
"""
from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster import roles
from kubernetes_mgmt.cluster.cluster_plan import ClusterPlan, Node, build_plan
from kubernetes_mgmt.cluster.etcd_snapshot import Snapshot
from kubernetes_mgmt.cluster.registry_config import skip_verify_registries
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.engine import runner
from kubernetes_mgmt.engine.graph import CLUSTER, Graph
from kubernetes_mgmt.engine.progress import Progress
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.monitoring import targets
from kubernetes_mgmt.operations import access
from kubernetes_mgmt.operations.checkpoint import Checkpoint, remember
from kubernetes_mgmt.operations.request import InstanceStore, OperationRequest
from kubernetes_mgmt.params.cluster_params import ClusterParams
from kubernetes_mgmt.remote.ssh import Sessions
from kubernetes_mgmt.state.cluster_record import ClusterRecord
from kubernetes_mgmt.state.instance_state import DriverState
from kubernetes_mgmt.steps import runtime
from kubernetes_mgmt.steps.cluster_setup import ClusterSetup
from kubernetes_mgmt.steps.declare import Master
from kubernetes_mgmt.steps.helper_master import reachable_ready_master
from kubernetes_mgmt.topology.heat import read_topology
from kubernetes_mgmt.topology.hosts import Topology
from kubernetes_mgmt.topology.stack_status import require_settled

LOG = redact.get_logger(__name__)


@dataclass
class OperationContext:
    operation: str
    request: OperationRequest
    store: InstanceStore
    state: DriverState
    progress: Progress
    # Saves the state after each step, once sessions are open.
    checkpoint: Checkpoint | None = None

    @classmethod
    def open(cls, operation: str, request: OperationRequest,
             store: InstanceStore) -> OperationContext:
        """Read and verify what Tacker stored; touches no host."""
        state = store.load()        # refuses a tampered one
        return cls(operation, request, store, state,
                   Progress(operation, request.instance_id))

    @property
    def instance_id(self) -> str:
        return self.request.instance_id

    @property
    def who(self) -> str:
        return f'{self.operation} {self.instance_id}'

    # -- the cluster plan ---------------------------------------------------

    def read_plan(self, *, settled: bool = False, install: bool = False,
                  minor: str | None = None) -> ClusterPlan:
        """The cluster as the current Heat stack holds it, planned from
        the cluster's record. ``settled``: after Tacker's stack update,
        once Heat has finished with the stack, successfully. ``install``:
        the operation installs the cluster (instantiate, a heal of the
        whole VNF): a re-run follows the record of the first build, a new
        stack gets a new endpoint, and the record is frozen now if the
        cluster has none for this stack. ``minor``: the one the
        operation installs, when not the cluster's (an upgrade's)."""
        with self.progress.phase('read topology'):
            params = self.request.cluster_params()
            heat = self.store.heat()
            stack_id = self.request.stack()
            if settled:
                require_settled(heat, stack_id,
                                CONF.kubernetes_mgmt.stack_settle_timeout)
            topology = read_topology(heat, stack_id, params)
            root = self.store.package_root()
            if install:
                plan = build_plan(self.instance_id, params, topology, root,
                                  record=self.state.record,
                                  keep_endpoint=self.state.stack_id
                                  == stack_id)
            else:
                record = self.state.record or self._legacy_record(
                    topology, root)
                plan = build_plan(self.instance_id, params, topology, root,
                                  record=record)
            roles.check_plan(plan, minor)  # before any host is touched
            _warn_unverified_registries(self.who, params)
        if install and (self.state.record is None
                        or self.state.stack_id != stack_id):
            self.state.record = plan.freeze()   # before any host changes
        elif install and plan.image_bundle and \
                not self.state.record.image_bundle:
            # A re-run that installs from a bundle the first run lacked.
            self.state.record = dataclasses.replace(
                self.state.record,
                image_bundle=plan.image_bundle.kubernetes_version)
        return plan

    def _legacy_record(self, topology: Topology, root) -> ClusterRecord:
        """A cluster instantiated by plugin 0.1 has no record: rebuild
        one from what that version stored (endpoint, LB port, VRRP id)
        and today's configuration for the rest, and keep it."""
        state = self.state
        if not state.nodes:
            raise MgmtDriverError(
                f'{self.operation}: VNF instance {self.instance_id} has no '
                'cluster record (the driver state stored at instantiate): '
                'it was not instantiated by this driver, or its '
                'instantiate never reached the VMs. Heal the whole VNF to '
                'install the cluster again.')
        today = build_plan(self.instance_id, self.request.cluster_params(),
                           topology, root).freeze()
        record = dataclasses.replace(
            today,
            control_plane_endpoint=state.control_plane_endpoint
            or today.control_plane_endpoint,
            auth_url=state.auth_url or today.auth_url,
            lb_port=state.lb_port or today.lb_port,
            vrrp_router_id=state.vrrp_router_id or today.vrrp_router_id)
        LOG.warning('%s: no cluster record (instantiated by an older '
                    'plugin version): recorded %s from the stored state '
                    'and today\'s configuration', self.who, record)
        state.record = record
        return record

    # -- the master that runs kubectl ----------------------------------------

    def choose_master(self, graph: Graph, setup: ClusterSetup,
                      avoid: Collection[str] = ()) -> Master:
        """The step whose result is the master that runs kubectl,
        etcdctl and refresh-join: the stored first master unless it is
        in ``avoid`` (node names being rebuilt or removed), else the next
        master in Heat's order; a master that does not answer SSH or
        whose node is NotReady is skipped with a warning. The choice is
        remembered, so later hooks start from the same master."""
        step = graph.add('choose master', CLUSTER,
                         lambda _: self._helper(setup, avoid))
        return Master(chosen_by=step)

    def _helper(self, setup: ClusterSetup, avoid: Collection[str]) -> Node:
        candidates = [m for m in setup.plan.masters if m.name not in avoid]
        if not candidates:
            raise MgmtDriverError(
                f'{self.operation}: no master outside '
                f'{", ".join(sorted(avoid))} is left to run the cluster '
                'from')
        stored = [m for m in candidates
                  if m.host.server_id == self.state.first_master]
        ordered = stored + [m for m in candidates if m not in stored]
        chosen = reachable_ready_master(self.who, ordered, setup.runtime)
        if chosen.host.server_id != self.state.first_master:
            LOG.info('%s: %s now runs the cluster operations', self.who,
                     chosen.label)
            self.state.first_master = chosen.host.server_id
        return chosen

    # -- sessions, runs and saves --------------------------------------------

    @contextlib.contextmanager
    def setup(self, plan: ClusterPlan, *, replacing: Iterable[str] = (),
              first_use: bool = False) -> Iterator[ClusterSetup]:
        """The actions over SSH sessions to the hosts of ``plan``; a VM
        not seen before, or one of the server ids in ``replacing``
        (rebuilt in place), must present the key it published.
        ``first_use``: instantiate, where the site's key may be made.
        Host keys learnt are stored after each step and when the
        operation ends, even when it fails."""
        keys = access.host_keys(self.state, self.store.heat(), replacing)
        checkpoint = self.checkpoint = Checkpoint(self.store, self.state,
                                                  keys, plan)
        try:
            with Sessions(keys, identity=access.login_key(
                    self.instance_id, first_use=first_use)) as sessions:
                self.progress.remote_clock = sessions.command_seconds
                yield ClusterSetup(plan, runtime.Live(sessions), self.who)
        finally:
            checkpoint.keep_keys()
            self.save()

    def run(self, graph: Graph) -> None:
        runner.run(graph, self.progress,
                   parallel=CONF.kubernetes_mgmt.max_parallel_hosts,
                   on_settled=self.checkpoint)

    def remember(self, nodes: Iterable[Node]) -> None:
        remember(self.state, list(nodes))

    def save(self) -> None:
        self.store.save(self.state)

    def remember_snapshot(self, snapshot: Snapshot) -> None:
        """The latest etcd snapshot, in the instance's stored state."""
        self.state.etcd_snapshot = snapshot.record()
        self.save()

    def finish(self) -> Progress:
        self.save()
        self.publish_targets()
        LOG.info('%s', self.progress.summary())
        return self.progress

    def publish_targets(self) -> None:
        """The nodes' exporters for Prometheus, as the operation left
        them (``[kubernetes_mgmt] monitoring_targets_dir``)."""
        conf = CONF.kubernetes_mgmt
        if not conf.monitoring_targets_dir:
            return
        members = [targets.Member(sid, r.name, r.role, r.ip)
                   for sid, r in self.state.node_records().items()]
        groups = targets.entries(self.instance_id, members,
                                 self.request.vnfc_of_server(),
                                 conf.node_exporter_port)
        try:
            path = targets.write(conf.monitoring_targets_dir,
                                 self.instance_id, groups)
        except OSError as exc:
            raise MgmtDriverError(
                f'{self.who}: cannot write the monitoring targets in '
                f'{conf.monitoring_targets_dir}: {exc}') from exc
        LOG.info('%s: %d node exporter(s) in %s', self.who, len(groups),
                 path)


def plan_only(plan: ClusterPlan, operation: str) -> ClusterSetup:
    """The actions of a graph that is printed, never run."""
    return ClusterSetup(plan, runtime.PlanOnly(),
                        f'{operation} {plan.instance_id}')


def _warn_unverified_registries(who: str, params: ClusterParams) -> None:
    """Each operation says it again: a registry whose certificates are
    not checked lets anyone on the path serve the cluster's images."""
    unverified = skip_verify_registries(params)
    if unverified:
        LOG.warning('%s: TLS certificates of registr%s %s are not verified '
                    '(skip_verify in private_registries): any host on the '
                    'path can serve this cluster\'s images', who,
                    'y' if len(unverified) == 1 else 'ies',
                    ', '.join(unverified))

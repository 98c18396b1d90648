"""heal_start / heal_end for named VNFCs (SOL002 ``vnfcInstanceId``).

Before Heat rebuilds the VMs (heal_start), each node leaves the cluster
from a master that stays: a master first leaves the HAProxy backends of
the other masters, then its node is deleted and its etcd member removed;
a worker is drained and deleted. The VMs being healed are not contacted.
After the rebuild (heal_end) the new VMs are prepared and join again -
masters one at a time as control-plane nodes with a fresh certificate
key, then back into HAProxy - and their new SSH host keys are accepted.

At least one master must stay untouched: healing the only master of a
single-master cluster (or every master) is refused before anything
changes; a heal of the whole VNF rebuilds such a cluster.

The storage server's VNFC heals too (``steps.storage_actions``): refused
while a PersistentVolume is Bound, else the PVs are deleted first and
registered again, pointing at the new server, once it is set up.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster import etcd, heal_guard, vip
from kubernetes_mgmt.cluster.cluster_plan import ClusterPlan, Node
from kubernetes_mgmt.cluster.node_health import read_health
from kubernetes_mgmt.cluster.node_removal import remove_node
from kubernetes_mgmt.cluster.placement import node_labels
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.engine.graph import CLUSTER, Graph
from kubernetes_mgmt.engine.progress import Progress
from kubernetes_mgmt.errors import MgmtDriverError, Problem, ValidationError
from kubernetes_mgmt.monitoring import alerts
from kubernetes_mgmt.operations.context import OperationContext
from kubernetes_mgmt.operations.request import InstanceStore, OperationRequest
from kubernetes_mgmt.state.instance_state import DriverState
from kubernetes_mgmt.steps import declare, storage_actions
from kubernetes_mgmt.steps.certificates import certificates
from kubernetes_mgmt.steps.cluster_setup import ClusterSetup
from kubernetes_mgmt.steps.declare import Master
from kubernetes_mgmt.topology.hosts import Role

LOG = redact.get_logger(__name__)
MASTER = Role.MASTER.value
STORAGE = Role.STORAGE.value
STORAGE_SERVER = 'storage server'    # the Target name of the NFS server
# keepalived: HAProxy check rise (2 x 2 s) plus VRRP adverts.
VIP_TAKEOVER_DEADLINE = 30.0


@dataclass(frozen=True)
class Target:
    """A VNFC being healed and the node it was."""

    vnfc_id: str
    server_id: str      # the VM before the heal
    name: str
    role: str
    ip: str

    @property
    def record(self) -> dict:
        return {'server_id': self.server_id, 'name': self.name,
                'role': self.role, 'ip': self.ip}


# -- which nodes ------------------------------------------------------------

def targets(request: OperationRequest, vnfc_ids: Sequence[str],
            state: DriverState) -> list[Target]:
    """VNFC ids -> the nodes they are, from the VNFCs Tacker recorded and
    the stored nodes (no network). Raises ValidationError."""
    vnfcs = request.vnfcs
    records = state.node_records()
    found, problems = [], []
    for index, vnfc_id in enumerate(dict.fromkeys(vnfc_ids)):
        path = f'vnfcInstanceId[{index}]'
        vnfc = vnfcs.get(vnfc_id)
        pending = state.healing.get(vnfc_id)
        if vnfc is None:
            problems.append(Problem(
                path, f'{vnfc_id!r} is not a VNFC of VNF instance '
                f'{request.instance_id}; its VNFCs '
                f'are: {", ".join(sorted(vnfcs)) or "(none)"}'))
            continue
        record = records.get(vnfc.server_id)
        if record is not None:
            found.append(Target(vnfc_id, vnfc.server_id, record.name,
                                record.role, record.ip))
        elif vnfc.server_id and vnfc.server_id == state.storage_server:
            found.append(Target(vnfc_id, vnfc.server_id, STORAGE_SERVER,
                                STORAGE, ''))
        elif pending is not None:      # heal_start is being repeated
            found.append(Target(vnfc_id, **pending))
        else:
            problems.append(Problem(
                path, f'VNFC {vnfc_id} (server {vnfc.server_id or "?"}, '
                f'VDU {vnfc.vdu_id or "?"}) is not a node of this '
                'Kubernetes cluster'))
    if problems:
        raise ValidationError(problems)
    _check_a_master_stays(state, found)
    return found


def _check_a_master_stays(state: DriverState,
                          chosen: Sequence[Target]) -> None:
    masters = {r.name for r in state.node_records().values()
               if r.role == MASTER}
    healed = {t.name for t in chosen if t.role == MASTER}
    if not masters or masters - healed:
        return
    where = [t.vnfc_id for t in chosen if t.role == MASTER]
    if len(masters) == 1:
        message = (f'VNFC {where[0]} is the only master of this '
                   'single-master cluster: rebuilding it would lose the '
                   "cluster's etcd data and certificates. Heal the whole "
                   'VNF instead (a heal request without vnfcInstanceId), '
                   'which installs the cluster again.')
    else:
        message = (f'VNFCs {", ".join(where)} are all {len(masters)} '
                   'masters: at least one must stay to rebuild the others '
                   'from. Heal them in separate requests, or heal the '
                   'whole VNF.')
    raise ValidationError([Problem('vnfcInstanceId', message)])


# -- heal_start -------------------------------------------------------------

def heal_start(request: OperationRequest, store: InstanceStore,
               vnfc_ids: Sequence[str], force: bool = False) -> Progress:
    """``force``: the request's ``additionalParams.force`` (lifts the
    heal guards an operator may overrule)."""
    op = OperationContext.open('heal', request, store)
    log_alerts(op, request, vnfc_ids)
    chosen = targets(request, vnfc_ids, op.state)
    plan = op.read_plan()
    limits = guard_limits(lifted=force or not request.autoheal)
    with op.setup(plan) as setup:
        op.run(heal_start_graph(op, setup, chosen, limits))
    return op.finish()


def log_alerts(op: OperationContext, request: OperationRequest,
               vnfc_ids: Sequence[str]) -> None:
    """Which auto-heal alerts fire for the VNFCs healed, when Alertmanager
    is configured: Tacker passes the driver no trace of them."""
    url = CONF.kubernetes_mgmt.alertmanager_url
    if not (url and request.autoheal and vnfc_ids):
        return
    try:
        found = alerts.firing(url, request.instance_id, vnfc_ids)
    except alerts.AlertsUnreadable as exc:
        LOG.warning('%s: the alerts behind this heal are unknown: %s',
                    op.who, exc)
        return
    LOG.info('%s: heal of %s; auto-heal alerts firing for them: %s',
             op.who, ', '.join(vnfc_ids),
             '; '.join(a.describe() for a in found)
             or 'none (an operator\'s heal, or the alerts resolved since)')


def guard_limits(lifted: bool) -> heal_guard.Limits:
    """The configured guards; ``lifted``: only the quorum guard holds
    (a forced heal, or an instance Tacker never heals on an alert: the
    driver cannot tell Tacker's automatic heal from an operator's, as
    Tacker 16 passes it no mark of one)."""
    conf = CONF.kubernetes_mgmt
    return heal_guard.Limits(conf.heal_max_unhealthy, conf.heal_repeat_limit,
                             float(conf.heal_repeat_window), force=lifted)


def check_safe(op: OperationContext, setup: ClusterSetup, master: Node,
               chosen: Sequence[Target], limits: heal_guard.Limits) -> None:
    """Refuse the heal (before anything changes) when a guard says so;
    the cluster's health is read now, from ``master``."""
    health, members = _guard_facts(setup, master)
    names = [t.name for t in chosen if t.role != STORAGE]
    try:
        heal_guard.check(names, health, limits, op.state.heals, time.time(),
                         members)
    except heal_guard.HealRefused as refused:
        raise MgmtDriverError(f'heal refused, nothing changed: {refused}') \
            from None
    LOG.info('%s: heal of %s is safe: %s', op.who, ', '.join(names),
             '; '.join(h.describe() for h in health.values()))


def _guard_facts(setup: ClusterSetup, master: Node
                 ) -> tuple[dict[str, heal_guard.NodeHealth], list[str]]:
    """Each node's health and etcd's member names, read through
    ``master``. When they cannot be read the guards cannot judge the
    heal, so it is refused."""
    plan = setup.plan
    session = setup.session(master)
    try:
        health = read_health(session, plan.masters, plan.workers)
        members = [m.name for m in etcd.members(session, master.name)]
    except MgmtDriverError as exc:
        raise MgmtDriverError(
            'heal refused, nothing changed: the cluster cannot be read '
            f'through {master.name} ({exc}), so the heal guards cannot '
            'judge it. If etcd has lost its quorum (too few masters up), '
            'bring masters back, or restore etcd from the latest snapshot '
            '(docs/etcd-restore.rst)') from None
    return health, members


def heal_start_graph(op: OperationContext, setup: ClusterSetup,
                     chosen: Sequence[Target],
                     limits: heal_guard.Limits) -> Graph:
    """From a master that stays: refuse a storage heal while a PV is
    Bound (before anything changes); note the targets in the instance;
    take healed masters out of the other masters' HAProxy; remove each
    healed master (node and etcd member, one at a time) and each healed
    worker; delete the PVs of a healed storage server."""
    plan, graph = setup.plan, Graph(op.operation)
    names = {t.name for t in chosen}
    masters = [t for t in chosen if t.role == MASTER]
    workers = [t for t in chosen if t.role not in (MASTER, STORAGE)]
    healing_storage = any(t.role == STORAGE for t in chosen)
    timeout = CONF.kubernetes_mgmt.drain_timeout

    helper = op.choose_master(graph, setup, names)
    safe = graph.add('check heal is safe', CLUSTER,
                     lambda g: check_safe(op, setup, helper.of(g), chosen,
                                          limits),
                     needs=helper.needs)
    master = certificates(graph, setup, _staying(plan, names), helper,
                          [safe], state=op.state)

    def kube(given):
        return setup.session(master.of(given))

    refused = graph.add('check volumes unused', CLUSTER,
                        lambda g: storage_actions.refuse_if_in_use(
                            plan, kube(g)),
                        needs=master.needs) if healing_storage else None

    def note(_) -> None:
        for target in chosen:
            op.state.healing[target.vnfc_id] = target.record
        op.save()

    noted = graph.add('note healed VNFCs', CLUSTER, note,
                      needs=[*master.needs, refused])
    lbs: dict = {}
    previous = None
    if masters and plan.ha:
        staying = [m for m in plan.masters if m.name not in names]
        previous = declare.etcd_snapshot(
            graph, setup, staying, [noted, *master.needs], 'heal',
            remember=op.remember_snapshot)
        lbs = declare.load_balancers(graph, setup, staying,
                                     backends=staying, needs=[previous])
    for target in masters:
        previous = graph.add(
            'remove master', target.name,
            lambda g, t=target: _remove_master(setup, master.of(g), t,
                                               timeout),
            needs=[noted, previous, *lbs.values(), *master.needs],
            serial=declare.ETCD)
    for target in workers:
        graph.add('remove node', target.name,
                  lambda g, t=target: remove_node(kube(g), t.name,
                                                  drain_timeout=timeout),
                  needs=[noted, *master.needs])
    if healing_storage and plan.persistent_volumes:
        graph.add('delete persistent volumes', CLUSTER,
                  lambda g: storage_actions.release_volumes(plan, kube(g)),
                  needs=[noted, *master.needs])
    return graph


def _remove_master(setup: ClusterSetup, master: Node, target: Target,
                   timeout: float) -> None:
    kube = setup.session(master)
    remove_node(kube, target.name, drain_timeout=timeout)
    etcd.remove_node_member(kube, master.name, target.name, target.ip)


# -- heal_end -------------------------------------------------------------

def rebuilt(request: OperationRequest, vnfc_ids: Sequence[str],
            state: DriverState, plan: ClusterPlan) -> list[tuple[str, Node]]:
    """(VNFC id, node on its new VM) for each VNFC: the server Tacker now
    records for the VNFC, else the node heal_start noted for it."""
    vnfcs = request.vnfcs
    hosts = plan.nodes + ((plan.storage,) if plan.storage else ())
    by_server = {n.host.server_id: n for n in hosts}
    by_name: dict[str, Node] = {n.name: n for n in plan.nodes}
    if plan.storage:
        by_name[STORAGE_SERVER] = plan.storage
    found, problems = [], []
    for index, vnfc_id in enumerate(dict.fromkeys(vnfc_ids)):
        vnfc = vnfcs.get(vnfc_id)
        node = by_server.get(vnfc.server_id) if vnfc else None
        pending = state.healing.get(vnfc_id)
        if node is None and pending is not None:
            node = by_name.get(pending['name'])
        if node is None:
            problems.append(Problem(
                f'vnfcInstanceId[{index}]',
                f'{vnfc_id!r}: no VM of stack {plan.topology.stack_id} '
                'belongs to this VNFC' + (
                    '' if vnfc else ' (it is not in vnfc_resource_info)')))
        else:
            found.append((vnfc_id, node))
    if problems:
        raise ValidationError(problems)
    return found


def heal_end(request: OperationRequest, store: InstanceStore,
             vnfc_ids: Sequence[str]) -> Progress:
    op = OperationContext.open('heal', request, store)
    plan = op.read_plan(settled=True)
    healed = rebuilt(request, vnfc_ids, op.state, plan)
    server = [(vnfc_id, n) for vnfc_id, n in healed if n is plan.storage]
    healed = [(vnfc_id, n) for vnfc_id, n in healed if n is not plan.storage]
    nodes = [node for _, node in healed]
    names = {n.name for n in nodes}
    if not {m.name for m in plan.masters} - names:
        raise ValidationError([Problem(
            'vnfcInstanceId', 'every master is being healed: no master is '
            'left to join them to; heal the whole VNF instead')])
    labels = node_labels(plan.topology, nodes, request.zones,
                         request.instance_id, request.vnfc_of_server())
    moved = [n for vnfc_id, n in healed
             if op.state.healing.get(vnfc_id, {}).get('ip', n.ip) != n.ip]
    # A rebuilt VM is a new Nova server: its key is the one it publishes.
    with op.setup(plan) as setup:
        with declare.tokens_deleted_on_failure(setup):
            op.run(heal_end_graph(
                op, setup, nodes, moved, labels, storage_server=bool(server),
                refresh_others=request.registries_replaced))
    for vnfc_id, node in healed:
        for server_id, record in list(op.state.node_records().items()):
            if record.name == node.name:
                op.state.forget_node(server_id)
        op.state.healing.pop(vnfc_id, None)
    op.remember(nodes)
    op.state.record_heals([n.name for n in nodes], time.time(),
                          CONF.kubernetes_mgmt.heal_repeat_window)
    for vnfc_id, node in server:
        op.state.storage_server = node.host.server_id
        op.state.healing.pop(vnfc_id, None)
    return op.finish()


def heal_end_graph(op: OperationContext, setup: ClusterSetup,
                   nodes: Sequence[Node],
                   moved: Sequence[Node], labels: dict[str, dict[str, str]],
                   storage_server: bool = False,
                   refresh_others: bool = False) -> Graph:
    """The rebuilt VMs become nodes again: each is prepared, its old
    self (node object, etcd member) removed unless it has joined, then it
    joins (masters one at a time). Once all are Ready: HAProxy on every
    master again, the VIP back on the first master if it was rebuilt,
    labels, and - if an address changed, or ``refresh_others`` (the
    request replaced the registries) - every other node's /etc/hosts
    and registries. A rebuilt storage server is set up and the PVs
    registered again. The certificates of the masters that stay are
    read (renewed where due) before anything joins."""
    graph = Graph(op.operation)
    names = {n.name for n in nodes}
    master = certificates(graph, setup, _staying(setup.plan, names),
                          op.choose_master(graph, setup, names),
                          state=op.state)
    if nodes:
        _rejoin(graph, setup, master, nodes, moved, labels,
                refresh_others)
    if storage_server:
        server = declare.storage_server(graph, setup)
        declare.register_volumes(graph, setup, master, [server])
    return graph


def _rejoin(graph: Graph, setup: ClusterSetup, master: Master,
            nodes: Sequence[Node], moved: Sequence[Node],
            labels: dict[str, dict[str, str]],
            refresh_others: bool = False) -> None:
    plan = setup.plan
    prepared = declare.prepare(graph, setup, nodes)
    cleared = {n.name: graph.add(
        'check old node gone', n.label,
        lambda g, n=n: _forget_old_self(setup, master.of(g), n),
        check=lambda g, n=n: not setup.joined(n, master.of(g),
                                              g.of(prepared[n.name])),
        needs=[*master.needs, prepared[n.name]],
        serial=declare.ETCD if n.host.role is Role.MASTER else None,
        why='the new VM has joined') for n in nodes}
    credentials = declare.refresh_join(graph, setup, master)
    joined = declare.joins(graph, setup, _masters_first(nodes), credentials,
                           master, cleared)
    declare.delete_join_tokens(graph, setup, master,
                               [*credentials.steps, *joined])
    ready = declare.wait_ready(graph, setup, nodes, master, joined)
    masters = [n for n in nodes if n.host.role is Role.MASTER]
    if masters and plan.ha:
        lbs = declare.load_balancers(graph, setup, plan.masters,
                                     needs=[ready])
        if plan.masters[0] in masters:
            # The VRRP MASTER is back: let it take the VIP now.
            first = plan.masters[0]
            graph.add('VIP back on', first.label,
                      lambda _: vip.wait_for_vip(
                          setup.session(first), plan.topology.cluster_ip,
                          deadline=VIP_TAKEOVER_DEADLINE),
                      needs=list(lbs.values()))
    declare.label_nodes(graph, setup, labels, master, [ready])
    # A new address changes every node's /etc/hosts; new registries
    # every node's certs.d.
    if moved or refresh_others:
        declare.bystander_hosts(graph, setup,
                              [n for n in plan.nodes if n not in nodes],
                              [ready])


def _staying(plan: ClusterPlan, names: set[str]) -> list[Node]:
    """The masters not being healed."""
    return [m for m in plan.masters if m.name not in names]


def _masters_first(nodes: Sequence[Node]) -> list[Node]:
    return sorted(nodes, key=lambda n: n.host.role is not Role.MASTER)


def _forget_old_self(setup: ClusterSetup, master: Node, node: Node) -> None:
    """Before a rebuilt VM joins: no node object and no etcd member of
    its old self may remain (kubeadm refuses to join then). heal_start
    removed them; this repeats it for nodes not joined yet, so heal_end
    also completes after a heal_start that failed half-way."""
    kube = setup.session(master)
    remove_node(kube, node.name,
                drain_timeout=CONF.kubernetes_mgmt.drain_timeout)
    if node.host.role is Role.MASTER:
        etcd.remove_node_member(kube, master.name, node.name, node.ip)

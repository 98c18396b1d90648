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

The storage server's VNFC heals too (``orchestration.storage``): refused
while a PersistentVolume is Bound, else the PVs are deleted first and
registered again, pointing at the new server, once it is set up.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes_mgmt import redact, tacker_objects
from kubernetes_mgmt.cluster import etcd, vip
from kubernetes_mgmt.cluster.node_removal import remove_node
from kubernetes_mgmt.cluster.node_state import ClusterFacts, Stage
from kubernetes_mgmt.cluster.placement import node_labels
from kubernetes_mgmt.cluster.plan import ClusterPlan, Node
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import Problem, ValidationError
from kubernetes_mgmt.instance_state import DriverState
from kubernetes_mgmt.orchestration import storage
from kubernetes_mgmt.orchestration.cluster_setup import ClusterSetup
from kubernetes_mgmt.orchestration.day2 import Day2
from kubernetes_mgmt.orchestration.parallel import for_each
from kubernetes_mgmt.orchestration.progress import Progress
from kubernetes_mgmt.topology.model import Role

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

def targets(vnf_instance: Any, vnfc_ids: Sequence[str],
            state: DriverState) -> list[Target]:
    """VNFC ids -> the nodes they are, from ``vnfc_resource_info`` and
    the stored nodes (no network). Raises ValidationError."""
    vnfcs = tacker_objects.vnfc_resources(vnf_instance)
    records = state.node_records()
    found, problems = [], []
    for index, vnfc_id in enumerate(dict.fromkeys(vnfc_ids)):
        path = f'vnfcInstanceId[{index}]'
        vnfc = vnfcs.get(vnfc_id)
        pending = state.healing.get(vnfc_id)
        if vnfc is None:
            problems.append(Problem(
                path, f'{vnfc_id!r} is not a VNFC of VNF instance '
                f'{tacker_objects.instance_id(vnf_instance)}; its VNFCs '
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

def heal_start(context: Any, vnf_instance: Any,
               vnfc_ids: Sequence[str]) -> Progress:
    op = Day2.load('heal', context, vnf_instance)
    chosen = targets(vnf_instance, vnfc_ids, op.state)
    plan = op.read_plan()
    names = {t.name for t in chosen}
    masters = [t for t in chosen if t.role == MASTER]
    workers = [t for t in chosen if t.role not in (MASTER, STORAGE)]
    healing_storage = any(t.role == STORAGE for t in chosen)
    timeout = CONF.kubernetes_mgmt.drain_timeout
    with op.sessions() as sessions:
        helper = op.helper(plan, names, sessions)
        setup = ClusterSetup(plan, sessions, op.progress, first=helper)
        kube = setup.session(helper)
        if healing_storage:     # before anything changes
            storage.refuse_if_in_use(plan, kube)
        for target in chosen:
            op.state.healing[target.vnfc_id] = target.record
        op.save()
        if masters and plan.ha:
            staying = [m for m in plan.masters if m.name not in names]
            setup.load_balancers(on=staying, backends=staying)
        # One master at a time: each removal changes etcd's quorum.
        for target in masters:
            with op.progress.phase('remove master', target.name):
                remove_node(kube, target.name, drain_timeout=timeout)
                etcd.remove_node_member(kube, helper.name, target.name,
                                        target.ip)
        if workers:
            with op.progress.phase('remove workers',
                                   ', '.join(t.name for t in workers)):
                for_each(workers, lambda t: remove_node(
                    kube, t.name, drain_timeout=timeout),
                    phase='remove workers', label=lambda t: t.name,
                    parallel=CONF.kubernetes_mgmt.max_parallel_hosts)
        if healing_storage:
            storage.release_volumes(plan, kube, op.progress)
    return op.finish()


# -- heal_end -------------------------------------------------------------

def rebuilt(vnf_instance: Any, vnfc_ids: Sequence[str], state: DriverState,
            plan: ClusterPlan) -> list[tuple[str, Node]]:
    """(VNFC id, node on its new VM) for each VNFC: the server Tacker now
    records for the VNFC, else the node heal_start noted for it."""
    vnfcs = tacker_objects.vnfc_resources(vnf_instance)
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


def heal_end(context: Any, vnf_instance: Any, vnfc_ids: Sequence[str],
             vnf: dict | None = None,
             zones: dict[str, str] | None = None) -> Progress:
    op = Day2.load('heal', context, vnf_instance)
    plan = op.read_plan(vnf)
    healed = rebuilt(vnf_instance, vnfc_ids, op.state, plan)
    new_vms = {n.host.ssh_ip for _, n in healed}
    server = [(vnfc_id, n) for vnfc_id, n in healed if n is plan.storage]
    healed = [(vnfc_id, n) for vnfc_id, n in healed if n is not plan.storage]
    nodes = [node for _, node in healed]
    names = {n.name for n in nodes}
    if not {m.name for m in plan.masters} - names:
        raise ValidationError([Problem(
            'vnfcInstanceId', 'every master is being healed: no master is '
            'left to join them to; heal the whole VNF instead')])
    labels = node_labels(plan.topology, nodes, zones or {})
    moved = [n for vnfc_id, n in healed
             if op.state.healing.get(vnfc_id, {}).get('ip', n.ip) != n.ip]
    with op.sessions(replacing=new_vms) as sessions:
        helper = op.helper(plan, names, sessions)
        setup = ClusterSetup(plan, sessions, op.progress, first=helper)
        if nodes:
            _rejoin(setup, helper, nodes, moved)
            setup.label_nodes(labels)
        if server:
            storage.setup_server(plan, sessions, op.progress)
            storage.register_volumes(plan, setup.session(helper),
                                     op.progress)
    for vnfc_id, node in healed:
        for server_id, record in list(op.state.node_records().items()):
            if record.name == node.name:
                op.state.forget_node(server_id)
        op.state.healing.pop(vnfc_id, None)
    op.remember(nodes)
    for vnfc_id, node in server:
        op.state.storage_server = node.host.server_id
        op.state.healing.pop(vnfc_id, None)
    return op.finish()


def _rejoin(setup: ClusterSetup, helper: Node, nodes: Sequence[Node],
            moved: Sequence[Node]) -> None:
    """The rebuilt VMs become nodes again (masters one at a time)."""
    plan = setup.plan
    masters = [n for n in nodes if n.host.role is Role.MASTER]
    workers = [n for n in nodes if n.host.role is not Role.MASTER]
    setup.prepare(nodes)
    _forget_old_selves(setup, helper, nodes)
    secrets = setup.refresh_join()
    setup.join_masters(masters, secrets)
    setup.join_workers(workers, secrets)
    setup.wait_ready(nodes)
    if masters and plan.ha:
        setup.load_balancers()
        if plan.masters[0] in masters:
            # The VRRP MASTER is back: let it take the VIP now.
            with setup.progress.phase('VIP back on',
                                      plan.masters[0].name):
                vip.wait_for_vip(setup.session(plan.masters[0]),
                                 plan.topology.cluster_ip,
                                 deadline=VIP_TAKEOVER_DEADLINE)
    if moved:   # a new address: every node's /etc/hosts changes
        setup.refresh_bystander_hosts(
            [n for n in plan.nodes if n not in nodes])


def _forget_old_selves(setup: ClusterSetup, helper: Node,
                       nodes: Sequence[Node]) -> None:
    """Before a rebuilt VM joins: no node object and no etcd member of
    its old self may remain (kubeadm refuses to join then). heal_start
    removed them; this repeats it for nodes not joined yet, so heal_end
    also completes after a heal_start that failed half-way."""
    kube = setup.session(helper)
    with setup.progress.phase('check old nodes gone',
                              f'{len(nodes)} node(s)'):
        cluster = setup.cluster_facts(with_etcd=True)
        for node in nodes:
            if _joined(setup, node, cluster):
                continue
            remove_node(kube, node.name,
                        drain_timeout=CONF.kubernetes_mgmt.drain_timeout)
            if node.host.role is Role.MASTER:
                etcd.remove_node_member(kube, helper.name, node.name,
                                        node.ip)


def _joined(setup: ClusterSetup, node: Node, cluster: ClusterFacts) -> bool:
    """The new VM finished ``kubeadm join`` (judged by the same facts as
    the join itself: a kubelet.conf left by a join that failed before its
    etcd membership does not count)."""
    return setup.join_stage(node, cluster) in (Stage.DONE, Stage.RESUME)

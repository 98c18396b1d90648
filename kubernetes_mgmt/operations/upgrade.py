"""An in-place upgrade of the cluster to the next Kubernetes minor, and
its rollback.

Tacker v2's ChangeCurrentVnfPackage runs it (``change_current_package_
start``) with the new package naming the target minor; no VM is
rebuilt. Before anything changes: the target is checked against the
cluster's record (one minor up, never down), then against the facts
(every node registered, Ready, and movable to the target). Then the
control plane, one master at a time (the first with ``kubeadm upgrade
apply``), then the workers in batches of ``max_unavailable``; each node
drained, upgraded, Ready on the new version and uncordoned before the
next batch starts. Nodes already upgraded are skipped from their facts,
so a retry continues where an attempt stopped. At the end the record
holds the new version (later scale-outs and heals join at it) and the
instance's metadata shows each node's.

A rollback can only move back what has not reached the new control
plane: while every master's API server is on the old minor, the nodes'
packages go back to the old minor's and cordoned nodes are uncordoned;
otherwise it is refused, pointing at ``retry``.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster import node_versions
from kubernetes_mgmt.cluster.api_server import server_version
from kubernetes_mgmt.cluster.cluster_plan import ClusterPlan, Node
from kubernetes_mgmt.cluster.node_removal import uncordon
from kubernetes_mgmt.cluster.upgrade_order import upgrade_order
from kubernetes_mgmt.engine.graph import CLUSTER, Graph, Step
from kubernetes_mgmt.engine.progress import Progress
from kubernetes_mgmt.errors import MgmtDriverError, ValidationError
from kubernetes_mgmt.operations.context import OperationContext
from kubernetes_mgmt.operations.request import InstanceStore, OperationRequest
from kubernetes_mgmt.params import versions
from kubernetes_mgmt.params.upgrade_request import UpgradeOptions
from kubernetes_mgmt.params.versions import Minor
from kubernetes_mgmt.state.instance_state import DriverState
from kubernetes_mgmt.steps import declare
from kubernetes_mgmt.steps.certificates import certificates
from kubernetes_mgmt.steps.cluster_setup import ClusterSetup
from kubernetes_mgmt.steps.upgrade_actions import Upgrade

LOG = redact.get_logger(__name__)
OPERATION = 'upgrade'
TARGET_FIELD = 'software_version of the new VNF package'
# What the instance's metadata shows (strings: Tacker v1 keeps only
# those).
VERSION_KEY = 'kubernetes_version'
NODE_VERSIONS_KEY = 'kubernetes_node_versions'


def target_minor(state: DriverState, instance_id: str, target: str
                 ) -> Minor:
    """The minor to move to, checked against the cluster's record before
    any host is touched: a skip or a downgrade is refused naming both
    versions."""
    record = state.record
    if record is None:
        raise MgmtDriverError(
            f'{OPERATION} {instance_id}: the instance has no cluster '
            'record, so its Kubernetes version is not known; it was not '
            'instantiated by this driver')
    problem = versions.upgrade_problem(record.kubernetes_version, target,
                                       TARGET_FIELD)
    if problem is not None:
        raise ValidationError([problem])
    minor = Minor.parse(target)
    assert minor is not None     # upgrade_problem refuses what is not
    return minor


def upgrade(request: OperationRequest, store: InstanceStore, target: str,
            options: UpgradeOptions) -> Progress:
    op = OperationContext.open(OPERATION, request, store)
    minor = target_minor(op.state, op.instance_id, target)
    plan = op.read_plan(minor=str(minor))
    _require_bundle(op, plan, str(minor))
    LOG.info('%s: %s to %s, %d master(s) then %d worker(s), at most %d '
             'worker(s) at once', op.who, plan.kubernetes_version, minor,
             len(plan.masters), len(plan.workers), options.max_unavailable)
    with op.setup(plan) as setup:
        op.run(upgrade_graph(op, Upgrade(setup, minor, options),
                             renew=str(minor) == plan.kubernetes_version))
    return op.finish()


def _require_bundle(op: OperationContext, plan: ClusterPlan,
                    minor: str) -> None:
    """A cluster installed from an image bundle pulls nothing: the new
    minor's images must come in the new package's bundle. Refused before
    any host is touched."""
    record = op.state.record
    built_from = record.image_bundle if record else None
    bundle = plan.image_bundle
    if built_from and (bundle is None or bundle.minor != minor):
        has = (f'has a bundle of {bundle.kubernetes_version}' if bundle
               else 'has no image bundle')
        raise MgmtDriverError(
            f'{op.who}: the cluster was installed from an image bundle '
            f'(Kubernetes {built_from}) and reaches no registry; the '
            f'package of the upgrade {has}. Build it with the images of '
            f'{minor} (kubernetes-mgmt package build --image-bundle DIR '
            f'--kubernetes-version {minor}). Nothing was changed.')
    plan.bundle_for(minor)      # a bundle of another minor: refused


def upgrade_graph(op: OperationContext, work: Upgrade,
                  renew: bool = False) -> Graph:
    """Survey (refusals before any change); each batch's nodes after the
    whole previous batch; then the certificates (``renew``: on every
    master, the package naming the cluster's own minor: renewal on
    demand; else kubeadm renewed them as it upgraded), the record and
    the metadata."""
    setup, graph = work.setup, Graph(op.operation)
    plan = setup.plan
    master = op.choose_master(graph, setup)
    survey = graph.add('check nodes and versions', CLUSTER,
                       lambda g: work.survey(master.of(g)),
                       needs=master.needs)
    # Before the first control-plane change; a retry once every master
    # runs the target has none left to protect.
    snapshot = declare.etcd_snapshot(
        graph, setup, plan.masters, [survey, *master.needs], OPERATION,
        remember=op.remember_snapshot,
        check=lambda g: any(not g.of(survey)[m.name].on(work.target)
                            for m in plan.masters),
        why=f'every master runs {work.target}')
    previous: list[Step] = [survey, snapshot]
    upgraded: list[Step] = []
    for batch in upgrade_order(plan.masters, plan.workers,
                               work.options.max_unavailable):
        previous = [graph.add(
            'upgrade', node.label,
            lambda g, n=node, c=batch.command: work.upgrade(
                n, master.of(g), c),
            check=lambda g, n=node: work.needed(n, master.of(g)),
            needs=[*previous, *master.needs],
            why=f'the node runs {work.target}, Ready and schedulable')
            for node in batch.nodes]
        upgraded += previous
    after = certificates(graph, setup, plan.masters, master, upgraded,
                         state=op.state, requested=renew)
    graph.add('record version', CLUSTER,
              lambda g: _record(op, work, after.of(g)),
              needs=[*upgraded, *after.needs])
    return graph


def _record(op: OperationContext, work: Upgrade, master: Node) -> None:
    """The record and the metadata follow the cluster's new version."""
    session = work.setup.session(master)
    patch = server_version(session)
    record = op.state.record
    assert record is not None
    op.state.record = dataclasses.replace(
        record, kubernetes_version=str(work.target), kubernetes_patch=patch)
    op.store.publish(metadata(patch, work.versions(master,
                                                   work.setup.plan.nodes)))
    LOG.info('%s: the cluster runs %s', op.who, patch)


def metadata(cluster: str | None, nodes: Mapping[str, str]
             ) -> dict[str, str]:
    return {VERSION_KEY: cluster or '',
            NODE_VERSIONS_KEY: json.dumps(dict(sorted(nodes.items())))}


# -- rollback ----------------------------------------------------------------

def rollback(request: OperationRequest, store: InstanceStore) -> Progress:
    """Back to the record's minor where nothing reached the new control
    plane; else refused, naming the masters already upgraded."""
    op = OperationContext.open(OPERATION + ' rollback', request, store)
    plan = op.read_plan()
    with op.setup(plan) as setup:
        op.run(rollback_graph(op, setup))
    return op.finish()


def rollback_graph(op: OperationContext, setup: ClusterSetup) -> Graph:
    plan, graph = setup.plan, Graph(op.operation)
    master = op.choose_master(graph, setup)
    refused = graph.add('check control plane old', CLUSTER,
                        lambda g: _refuse_if_upgraded(
                            setup, master.of(g), op.instance_id),
                        needs=master.needs)
    for node in plan.nodes:
        graph.add('packages back', node.label,
                  lambda _, n=node: setup.prepare(n),
                  needs=[refused])
        graph.add('uncordon', node.label,
                  lambda g, n=node: uncordon(setup.session(master.of(g)),
                                             n.name),
                  needs=[refused, *master.needs])
    return graph


def _refuse_if_upgraded(setup: ClusterSetup, master: Node,
                        instance_id: str) -> None:
    plan = setup.plan
    old = Minor.parse(plan.kubernetes_version)
    session = setup.session(master)
    newer = {m.name: version for m in plan.masters
             for version in [_api_version(session, m)]
             if version and (Minor.parse(version) or old) > old}
    if newer:
        raise MgmtDriverError(
            'rollback refused: the control plane is already upgraded on '
            + ', '.join(f'{name} ({v})' for name, v in newer.items())
            + f'; kubeadm cannot take a control plane back to '
            f'{plan.kubernetes_version}. Finish the upgrade instead: '
            f'openstack vnflcm op retry <operation of {instance_id}>')


def _api_version(session, master: Node) -> str | None:
    try:
        return node_versions.api_server_version(session, master.ip)
    except MgmtDriverError as exc:
        LOG.warning('[%s] API server version not read: %s', master.name,
                    exc)
        return None


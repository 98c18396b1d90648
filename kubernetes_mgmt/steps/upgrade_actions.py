"""The actions of an in-place upgrade, one node at a time.

Whether a node still needs its upgrade is decided by facts the cluster
reports (``cluster.node_versions``): a node whose kubelet - and, on a
master, whose own API server - is on the target minor, Ready and
schedulable is skipped, so a retry continues where an attempt stopped.
A node is drained before anything of it changes; its kubelet moves to
the new version only after kubeadm upgraded the rest, and kubeadm rolls
its own static pods back when it fails: a failed attempt leaves a node
on its old version (cordoned), never half-way.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster import node_versions, roles
from kubernetes_mgmt.cluster.cluster_plan import Node
from kubernetes_mgmt.cluster.node_removal import drain_node, uncordon
from kubernetes_mgmt.cluster.node_versions import NodeVersion
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import MgmtDriverError, Problem, ValidationError
from kubernetes_mgmt.params import versions
from kubernetes_mgmt.params.upgrade_request import UpgradeOptions
from kubernetes_mgmt.params.versions import Minor
from kubernetes_mgmt.remote.retry import poll
from kubernetes_mgmt.steps.cluster_setup import ClusterSetup
from kubernetes_mgmt.topology.hosts import Role

LOG = redact.get_logger(__name__)
DRAIN_SETTING = 'the request\'s additionalParams.drain_timeout'


@dataclass(frozen=True)
class Upgrade:
    """An upgrade of the cluster of ``setup`` to ``target``."""

    setup: ClusterSetup
    target: Minor
    options: UpgradeOptions

    # -- before anything changes -------------------------------------------

    def survey(self, master: Node) -> dict[str, NodeVersion]:
        """Every node's version, read through ``master``; refuses (naming
        the nodes and versions) when a node is missing or NotReady, or
        when the skew rules forbid moving a node to the target."""
        plan, session = self.setup.plan, self.setup.session(master)
        found = node_versions.nodes(session)
        for m in plan.masters:
            if m.name in found:     # one node list, then each API server
                found[m.name] = dataclasses.replace(
                    found[m.name], api_server=node_versions.
                    api_server_version(session, m.ip))
        problems = [p for n in plan.nodes
                    for p in self._node_problems(n, found.get(n.name))]
        if problems:
            raise ValidationError(problems)
        return {n.name: found[n.name] for n in plan.nodes}

    def _node_problems(self, node: Node, facts: NodeVersion | None
                       ) -> list[Problem]:
        where = f'node {node.name}'
        if facts is None:
            return [Problem(where, 'is not registered in the cluster: '
                            'heal it before the upgrade')]
        found = []
        if not facts.ready:
            found.append(Problem(where, 'is NotReady: every node must be '
                                 'Ready before an upgrade (heal it first)'))
        for version in {facts.kubelet, facts.api_server} - {None}:
            problem = versions.upgrade_problem(
                str(version), str(self.target), where)
            if problem is not None:
                found.append(problem)
        return found

    # -- one node ------------------------------------------------------------

    def needed(self, node: Node, master: Node) -> NodeVersion | None:
        """None when ``node`` is upgraded (on the target, Ready,
        schedulable); else its facts."""
        facts = self._facts(node, master)
        if facts is not None and facts.upgraded(self.target):
            LOG.info('[%s] already on %s', node.name, facts.version)
            return None
        if facts is None:
            raise MgmtDriverError(f'[{node.name}] upgrade: the node is not '
                                  'registered in the cluster')
        return facts

    def upgrade(self, node: Node, master: Node, command: str) -> str:
        """Drain ``node``, run its part of the upgrade (``command``:
        apply or node), wait for it Ready on the target, uncordon it.
        Returns the version it runs."""
        kube = self.setup.session(master)
        drain_node(kube, node.name, self.options.drain_timeout,
                   afterwards='The node is still on its old version; '
                   'no node was upgraded half-way.',
                   setting=DRAIN_SETTING)
        roles.upload_image_bundle(self.setup.session(node),
                                  self.setup.plan, str(self.target))
        out = self.setup.script.run(
            self.setup.session(node), 'upgrade',
            roles.upgrade(self.setup.plan, node, str(self.target), command))
        facts = self._wait_on_target(node, master)
        uncordon(kube, node.name)
        LOG.info('[%s] upgraded to %s (kubeadm upgrade %s: %s)', node.name,
                 facts.version, command,
                 out.get('KUBERNETES_VERSION', '?'))
        return facts.version

    def _wait_on_target(self, node: Node, master: Node) -> NodeVersion:
        last: list[NodeVersion | str | None] = [None]

        def on_target() -> NodeVersion | None:
            try:
                facts = self._facts(node, master)
            except MgmtDriverError as exc:     # its API server restarting
                last[0] = str(exc)
                return None
            last[0] = facts
            if facts is not None and facts.on(self.target) and facts.ready:
                return facts
            return None

        deadline = CONF.kubernetes_mgmt.node_ready_timeout
        try:
            return poll(on_target, deadline=deadline,
                        what=f'{node.name} Ready on {self.target}')
        except TimeoutError:
            raise MgmtDriverError(
                f'[{node.name}] upgrade: not Ready on {self.target} within '
                f'{deadline:g} s ([kubernetes_mgmt] node_ready_timeout); '
                f'last seen: {last[0]}. The node stays cordoned.') from None

    def _facts(self, node: Node, master: Node) -> NodeVersion | None:
        ip = node.ip if node.host.role is Role.MASTER else None
        return node_versions.node_version(self.setup.session(master),
                                          node.name, ip)

    # -- afterwards -----------------------------------------------------

    def versions(self, master: Node, nodes: Sequence[Node]) -> dict[str, str]:
        """Node name -> the version it runs, for the instance's
        metadata."""
        found = node_versions.nodes(self.setup.session(master))
        return {n.name: found[n.name].kubelet for n in nodes
                if n.name in found}

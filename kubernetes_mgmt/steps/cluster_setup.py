"""The actions of the steps that turn VMs into cluster nodes.

``steps.declare`` says which of these run, on which node, after what, and
hands each the results of the steps it needs; the engine runs them. Every
action is safe to repeat. Whether the control plane must be set up, or a
node must join, is decided by a check of facts (``cluster.node_state``):
a finished role is skipped, a half-finished kubeadm run is undone
(``kubeadm reset -f``, and a control-plane node's etcd member removed
through a serving master) before it is retried. What talks to the VMs is
the cluster layer's; this module only decides and passes data on.
"""
from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster import (
    credentials,
    etcd,
    join_tokens,
    node_state,
    placement,
    roles,
    vip,
)
from kubernetes_mgmt.cluster.admin_account import (
    AdminCredentials,
    ensure_admin_credentials,
)
from kubernetes_mgmt.cluster.api_server import (
    node_readiness,
    wait_until_ready,
)
from kubernetes_mgmt.cluster.cluster_plan import ClusterPlan, Node
from kubernetes_mgmt.cluster.node_state import ClusterFacts, HostFacts, Stage
from kubernetes_mgmt.cluster.roles import JoinSecrets
from kubernetes_mgmt.cluster.script import InstallScript
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import ConnectError, MgmtDriverError
from kubernetes_mgmt.remote.ssh import SshSession
from kubernetes_mgmt.steps.runtime import Runtime
from kubernetes_mgmt.topology.hosts import Role

LOG = redact.get_logger(__name__)


class TokenLedger:
    """Ids of the bootstrap tokens an operation made, and the master it
    made them on: deleted there when its joins are over, or when it fails
    (``declare.tokens_deleted_on_failure``)."""

    def __init__(self) -> None:
        self._ids: list[str] = []
        self._lock = threading.Lock()
        self.made_on: Node | None = None

    def add(self, token: str, master: Node) -> None:
        with self._lock:
            self._ids.append(token.split('.')[0])
            self.made_on = master

    @property
    def ids(self) -> list[str]:
        with self._lock:
            return list(self._ids)


class ClusterSetup:
    """The actions of one operation: its plan, the runtime that reaches
    the VMs, and the bootstrap tokens it made. Nothing else is kept:
    each action receives what earlier steps produced."""

    def __init__(self, plan: ClusterPlan, runtime: Runtime, operation: str):
        """``operation``: who acts (``scale-out <instance>``), for the
        warnings of best-effort actions."""
        self.plan = plan
        self.runtime = runtime
        self.operation = operation
        self.script = InstallScript(plan.script)
        self.tokens = TokenLedger()

    # -- preparation and load balancers ----------------------------------

    def prepare(self, node: Node, *, with_cni: bool = False
                ) -> HostFacts | None:
        """The node's packages and settings; returns the facts it
        reported, for its next decision (None if it reported none)."""
        session = self.session(node)
        self.script.upload(session)
        if with_cni:
            roles.upload_cni_manifest(session, self.plan)
        roles.upload_image_bundle(session, self.plan,
                                  self.plan.kubernetes_version)
        out = self.script.run(session, 'prepare',
                              roles.prepare(self.plan, node))
        return node_state.reported_facts(out, session.endpoint.name)

    def vrrp_password(self, masters: Sequence[Node]) -> str:
        """The password of an earlier run, read from the first of
        ``masters`` that has one, so re-running changes no keepalived
        configuration; otherwise a new one."""
        for node in masters:
            if node.host.role is Role.MASTER:
                found = vip.configured_vrrp_password(self.session(node))
                if found:
                    return found
        return credentials.vrrp_password()

    def load_balancer(self, node: Node, password: str,
                      backends: Sequence[Node] | None = None) -> None:
        """HAProxy and keepalived on master ``node``, forwarding to
        ``backends`` (default: all masters). The script reloads a service
        only when its configuration changed."""
        rank = self.plan.masters.index(node)
        self.script.run(self.session(node), 'lb',
                        roles.load_balancer(self.plan, node, rank, password,
                                            backends))

    # -- control plane ----------------------------------------------------

    def init_needed(self, first: Node, reported: HostFacts | None
                    ) -> Stage | None:
        """None when ``kubeadm init`` and the init role are done on the
        first master (its API answers and knows its node), else how far
        they got."""
        host = self.host_facts(first, reported)
        cluster = (ClusterFacts(node_readiness(self.session(first)))
                   if host.api_ready else None)
        stage = node_state.init_stage(host, cluster, first.name)
        LOG.info('[%s] init: %s', first.name, stage.value)
        return None if stage is Stage.DONE else stage

    def init(self, first: Node, stage: Stage) -> JoinSecrets:
        """Init the first master (resuming an init whose kubeadm step
        finished, undoing a half-finished one first); the CNI is applied
        too. Returns the join credentials it made."""
        if stage is Stage.HALF:
            self.reset(first)
        secrets = self._new_secrets(first)
        out = self.script.run(self.session(first), 'init',
                              roles.init(self.plan, first, secrets))
        return dataclasses.replace(secrets, ca_cert_hash=out['CA_CERT_HASH'])

    def refresh_join(self, master: Node, apply_cni: bool = False
                     ) -> JoinSecrets:
        """Fresh join credentials (token and certificate key) from a
        running control plane; never initializes one. ``apply_cni``: the
        control plane was set up by an earlier attempt of this operation,
        whose CNI apply may not have happened."""
        secrets = self._new_secrets(master)
        config = roles.refresh_join(master, secrets,
                                    self.plan if apply_cni else None)
        out = self.script.run(self.session(master), 'refresh-join', config)
        return dataclasses.replace(secrets, ca_cert_hash=out['CA_CERT_HASH'])

    # -- joins ------------------------------------------------------------

    def join_needed(self, node: Node, master: Node,
                    reported: HostFacts | None = None) -> Stage | None:
        """None when ``node`` has joined (facts of the node and of the
        cluster as ``master`` sees it), else how far it got."""
        control_plane = node.host.role is Role.MASTER
        host = self.host_facts(node, reported)
        if control_plane or host.kubeadm_files or host.kubeadm_join:
            cluster = self.cluster_facts(master, with_etcd=control_plane)
        else:       # nothing of kubeadm on the worker: a new join
            cluster = ClusterFacts({})
        stage = node_state.join_stage(host, cluster, node, control_plane)
        LOG.info('[%s] join-%s: %s', node.name,
                 'master' if control_plane else 'worker', stage.value)
        return None if stage is Stage.DONE else stage

    def join(self, node: Node, stage: Stage, master: Node,
             secrets: JoinSecrets) -> None:
        if stage is Stage.HALF:
            self.undo_join(node, master)
        control_plane = node.host.role is Role.MASTER
        self.script.run(self.session(node),
                        'join-master' if control_plane else 'join-worker',
                        roles.join(self.plan, node, secrets, control_plane))

    def undo_join(self, node: Node, master: Node) -> None:
        """A half-finished join: its etcd member (if one was added) goes,
        through ``master``, then ``kubeadm reset -f``."""
        if node.host.role is Role.MASTER:
            etcd.remove_node_member(self.session(master), master.name,
                                    node.name, node.ip)
        self.reset(node)

    def reset(self, node: Node) -> None:
        LOG.warning('[%s] half-finished kubeadm run: kubeadm reset -f '
                    'before retrying', node.name)
        self.script.run(self.session(node), 'reset', roles.reset(node))

    def delete_join_tokens(self, master: Node) -> None:
        """Once the joins of the operation are over: the bootstrap
        tokens the driver made are deleted through ``master``. Best
        effort - the joins are done, or failed already - with a warning
        naming what is left (it expires at its TTL)."""
        try:
            # A master that went away is not waited for long.
            deleted = join_tokens.delete_driver_tokens(
                self.runtime.bystander_session(master), self.tokens.ids)
        except MgmtDriverError as error:
            LOG.warning('%s: bootstrap tokens not deleted through %s: %s; '
                        'they expire by themselves (kubeadm token list '
                        'shows them)', self.operation, master.name, error)
            return
        if deleted:
            LOG.info('[%s] bootstrap token(s) %s deleted', master.name,
                     ', '.join(deleted))

    # -- the cluster as a whole --------------------------------------------

    def wait_ready(self, master: Node, nodes: Sequence[Node]) -> None:
        wait_until_ready(self.session(master), [n.name for n in nodes],
                         deadline=CONF.kubernetes_mgmt.node_ready_timeout)

    def admin_account(self, master: Node) -> AdminCredentials:
        """The ServiceAccount, token and CA the VIM is registered with."""
        return ensure_admin_credentials(
            self.session(master),
            deadline=CONF.kubernetes_mgmt.node_ready_timeout)

    def label_nodes(self, master: Node,
                    labels: dict[str, dict[str, str]]) -> None:
        """Placement labels (``cluster.placement``) on joined nodes."""
        if labels:
            placement.apply_labels(self.session(master), labels)

    def refresh_bystander_hosts(self, node: Node) -> None:
        """Best effort: the /etc/hosts block and the registries of
        ``node``, which is not part of the operation. One that cannot be
        reached or updated is skipped with a warning naming it; the next
        operation that refreshes them repairs it."""
        try:
            self.script.run(self.runtime.bystander_session(node), 'hosts',
                            roles.hosts(self.plan, node))
        except MgmtDriverError as error:
            LOG.warning(
                '%s: /etc/hosts and registries of %s (%s) not refreshed, '
                '%s: %s; the next scale or heal refreshes them',
                self.operation,
                node.name, node.ip,
                'unreachable' if isinstance(error, ConnectError)
                else 'failed', error)

    # -- facts --------------------------------------------------------------

    def host_facts(self, node: Node, reported: HostFacts | None = None
                   ) -> HostFacts:
        """The facts ``node`` reported moments ago in this operation (its
        prepare's), else its ``status`` role's."""
        if reported is not None:
            return reported
        return node_state.gather_host(self.script, self.session(node),
                                      roles.status(node))

    def cluster_facts(self, master: Node, with_etcd: bool) -> ClusterFacts:
        """Nodes (and etcd members) as ``master`` sees them."""
        session = self.session(master)
        if with_etcd:
            return node_state.gather_cluster(session, master.name)
        return ClusterFacts(node_readiness(session))

    def joined(self, node: Node, master: Node,
               reported: HostFacts | None = None) -> bool:
        """``node`` finished ``kubeadm join`` (a kubelet.conf left by a
        join that failed before its etcd membership does not count)."""
        stage = self.join_needed(node, master, reported)
        return stage is None or stage is Stage.RESUME

    # -- helpers ------------------------------------------------------------

    def session(self, node: Node) -> SshSession:
        return self.runtime.session(node)

    def _new_secrets(self, master: Node) -> JoinSecrets:
        token = credentials.bootstrap_token()
        self.tokens.add(token, master)
        return JoinSecrets(token, credentials.certificate_key())

"""Turn prepared VMs into a cluster: the phases of instantiate.

Every phase is safe to repeat. Before the control plane is set up or a
node joins, its state is gathered from facts (``cluster.node_state``):
a finished role is not run again, a half-finished kubeadm run is undone
(``kubeadm reset -f``, and a control-plane node's etcd member removed
through a serving master) before it is retried.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster import (
    credentials,
    etcd,
    node_state,
    placement,
    roles,
)
from kubernetes_mgmt.cluster.admin_account import (
    AdminCredentials,
    ensure_admin_credentials,
)
from kubernetes_mgmt.cluster.kubectl import node_readiness, wait_until_ready
from kubernetes_mgmt.cluster.node_state import ClusterFacts, HostFacts, Stage
from kubernetes_mgmt.cluster.plan import ClusterPlan, Node
from kubernetes_mgmt.cluster.roles import JoinSecrets
from kubernetes_mgmt.cluster.script import InstallScript
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import ConnectError
from kubernetes_mgmt.orchestration.helper_master import bystander_session
from kubernetes_mgmt.orchestration.parallel import PhaseFailed, for_each
from kubernetes_mgmt.orchestration.progress import Progress
from kubernetes_mgmt.remote.ssh import Sessions, SshSession
from kubernetes_mgmt.topology.model import Role

LOG = redact.get_logger(__name__)
KEEPALIVED_CONF = '/etc/keepalived/keepalived.conf'
_AUTH_PASS = re.compile(r'^\s*auth_pass\s+(\S+)\s*$', re.MULTILINE)


class ClusterSetup:
    def __init__(self, plan: ClusterPlan, sessions: Sessions,
                 progress: Progress, first: Node | None = None):
        """``first``: the master that runs kubectl and refreshes join
        credentials (default: the plan's first master). Later operations
        pass a healthy master here when the first one is being healed."""
        self.plan = plan
        self.sessions = sessions
        self.progress = progress
        self.first = first or plan.first_master
        self.script = InstallScript(plan.script)

    def build(self) -> AdminCredentials:
        plan = self.plan
        self.prepare(plan.nodes)
        if plan.ha:
            self.load_balancers()
        secrets = self.control_plane()
        self.join_masters(plan.masters[1:], secrets)
        self.join_workers(plan.workers, secrets)
        self.wait_ready(plan.nodes)
        with self.progress.phase('admin account'):
            return ensure_admin_credentials(
                self.session(self.first),
                deadline=CONF.kubernetes_mgmt.node_ready_timeout)

    # -- phases -------------------------------------------------------------

    def prepare(self, nodes: Sequence[Node]) -> None:
        with self.progress.phase('prepare nodes', f'{len(nodes)} node(s)'):
            self._each(nodes, self._prepare_one, 'prepare nodes')

    def load_balancers(self, on: Sequence[Node] | None = None,
                       backends: Sequence[Node] | None = None) -> None:
        """HAProxy and keepalived on the masters ``on`` (default: all),
        forwarding to ``backends`` (default: all masters). The script
        reloads a service only when its configuration changed."""
        masters = self.plan.masters
        targets = masters if on is None else on
        detail = f'{len(targets)} master(s)'
        if backends is not None:
            detail += f', backends {", ".join(m.name for m in backends)}'
        with self.progress.phase('load balancer', detail):
            password = self._vrrp_password(targets)

            def configure(node: Node) -> None:
                rank = masters.index(node)
                self.script.run(self.session(node), 'lb',
                                roles.load_balancer(self.plan, node, rank,
                                                    password, backends))

            self._each(targets, configure, 'load balancer')

    def control_plane(self) -> JoinSecrets:
        """Init the first master; resume an init whose kubeadm step
        finished; undo a half-finished one first; or, once init is done,
        refresh the join credentials. The CNI is applied (idempotently)
        on every path."""
        first = self.first
        session = self.session(first)
        secrets = JoinSecrets(credentials.bootstrap_token(),
                              credentials.certificate_key())
        host = self.host_facts(first)
        cluster = (ClusterFacts(node_readiness(session)) if host.api_ready
                   else None)
        stage = node_state.init_stage(host, cluster, first.name)
        LOG.info('[%s] init: %s', first.name, stage.value)
        done = stage is Stage.DONE
        role = 'refresh-join' if done else 'init'
        with self.progress.phase(f'control plane {role}', first.label):
            if stage is Stage.HALF:
                self.reset(first)
            config = (roles.refresh_join(first, secrets, self.plan) if done
                      else roles.init(self.plan, first, secrets))
            out = self.script.run(session, role, config)
        return dataclasses.replace(secrets,
                                   ca_cert_hash=out['CA_CERT_HASH'])

    def refresh_join(self) -> JoinSecrets:
        """Fresh join credentials (token and certificate key) from a
        running control plane; never initializes one."""
        first = self.first
        secrets = JoinSecrets(credentials.bootstrap_token(),
                              credentials.certificate_key())
        with self.progress.phase('control plane refresh-join', first.label):
            out = self.script.run(self.session(first), 'refresh-join',
                                  roles.refresh_join(first, secrets))
        return dataclasses.replace(secrets,
                                   ca_cert_hash=out['CA_CERT_HASH'])

    def refresh_bystander_hosts(self, nodes: Sequence[Node]) -> list[Node]:
        """Best effort: the /etc/hosts block of ``nodes``, which are not
        part of the operation. Each is given the short bystander connect
        deadline, all in parallel; one that cannot be reached or updated
        is skipped with a warning naming it (the next operation that
        refreshes /etc/hosts repairs it). Returns the skipped nodes."""
        skipped: list[Node] = []
        with self.progress.phase('update /etc/hosts (other nodes)',
                                 f'{len(nodes)} node(s)'):
            def refresh(node: Node) -> None:
                self.script.run(bystander_session(self.sessions, node),
                                'hosts', roles.hosts(self.plan, node))

            try:
                self._each(nodes, refresh, 'update /etc/hosts')
            except PhaseFailed as failed:
                by_label = {n.label: n for n in nodes}
                for label, error in failed.failures:
                    node = by_label[label]
                    skipped.append(node)
                    LOG.warning(
                        '%s %s: /etc/hosts of %s (%s) not refreshed, %s: '
                        '%s; the next scale or heal refreshes it',
                        self.progress.operation, self.progress.instance_id,
                        node.name, node.ip,
                        'unreachable' if isinstance(error, ConnectError)
                        else 'failed', error)
        return skipped

    def join_masters(self, masters: Sequence[Node],
                     secrets: JoinSecrets) -> None:
        # One at a time: each join grows etcd, and a second join while the
        # first is still syncing could cost quorum.
        for node in masters:
            stage = self.join_stage(node, self.cluster_facts(with_etcd=True))
            if stage is Stage.DONE:
                continue
            with self.progress.phase('join master', node.label):
                if stage is Stage.HALF:
                    self.undo_join(node)
                self.script.run(self.session(node), 'join-master',
                                roles.join(self.plan, node, secrets, True))

    def join_workers(self, workers: Sequence[Node],
                     secrets: JoinSecrets) -> None:
        cluster = self.cluster_facts(with_etcd=False)

        def join(node: Node) -> None:
            stage = self.join_stage(node, cluster)
            if stage is Stage.DONE:
                return
            if stage is Stage.HALF:
                self.undo_join(node)
            self.script.run(self.session(node), 'join-worker',
                            roles.join(self.plan, node, secrets, False))

        with self.progress.phase('join workers',
                                 f'{len(workers)} worker(s)'):
            self._each(workers, join, 'join workers')

    # -- facts --------------------------------------------------------------

    def host_facts(self, node: Node) -> HostFacts:
        """The node's own facts (its ``status`` role)."""
        return node_state.gather_host(self.script, self.session(node),
                                      roles.status(node))

    def cluster_facts(self, with_etcd: bool) -> ClusterFacts:
        """Nodes (and etcd members) as the serving master ``first``
        sees them."""
        session = self.session(self.first)
        if with_etcd:
            return node_state.gather_cluster(session, self.first.name)
        return ClusterFacts(node_readiness(session))

    def join_stage(self, node: Node, cluster: ClusterFacts) -> Stage:
        control_plane = node.host.role is Role.MASTER
        stage = node_state.join_stage(self.host_facts(node), cluster, node,
                                      control_plane)
        LOG.info('[%s] join-%s: %s', node.name,
                 'master' if control_plane else 'worker', stage.value)
        return stage

    def undo_join(self, node: Node) -> None:
        """A half-finished join: its etcd member (if one was added) goes,
        through the serving master, then ``kubeadm reset -f``."""
        if node.host.role is Role.MASTER:
            etcd.remove_node_member(self.session(self.first),
                                    self.first.name, node.name, node.ip)
        self.reset(node)

    def reset(self, node: Node) -> None:
        LOG.warning('[%s] half-finished kubeadm run: kubeadm reset -f '
                    'before retrying', node.name)
        self.script.run(self.session(node), 'reset', roles.reset(node))

    def wait_ready(self, nodes: Sequence[Node]) -> None:
        with self.progress.phase('wait for Ready', f'{len(nodes)} node(s)'):
            wait_until_ready(self.session(self.first),
                             [n.name for n in nodes],
                             deadline=CONF.kubernetes_mgmt.node_ready_timeout)

    def label_nodes(self, labels: dict[str, dict[str, str]]) -> None:
        """Placement labels (``cluster.placement``) on joined nodes."""
        if not labels:
            return
        with self.progress.phase('label nodes', ', '.join(labels)):
            placement.apply_labels(self.session(self.first), labels)

    # -- helpers ------------------------------------------------------------

    def session(self, node: Node) -> SshSession:
        return self.sessions.get(node.endpoint)

    def _prepare_one(self, node: Node) -> None:
        session = self.session(node)
        self.script.upload(session)
        cni = self.plan.cni
        if node is self.first and cni.package_path:
            session.upload(cni.package_path.read_bytes(),
                           roles.REMOTE_CNI_MANIFEST,
                           step='upload CNI manifest', sudo=True)
        self.script.run(session, 'prepare', roles.prepare(self.plan, node))

    def _each(self, nodes: Sequence[Node], step, phase: str) -> None:
        for_each(nodes, step, phase=phase, label=lambda n: n.label,
                 parallel=CONF.kubernetes_mgmt.max_parallel_hosts)

    def _vrrp_password(self, masters: Sequence[Node]) -> str:
        """Keep the password of an earlier run so that re-running changes
        no keepalived configuration; otherwise make a new one. Read from
        ``first``, else from the other masters being configured."""
        tried: list[Node] = []
        for node in [self.first, *masters]:
            if node.host.role is not Role.MASTER or node in tried:
                continue
            tried.append(node)
            match = _AUTH_PASS.search(self._keepalived_conf(node))
            if match:
                redact.register(match.group(1))
                return match.group(1)
        return credentials.vrrp_password()

    def _keepalived_conf(self, node: Node) -> str:
        """The file as it is on the master, or '' if it has none."""
        session = self.session(node)
        present = session.run(['test', '-f', KEEPALIVED_CONF],
                              step='read keepalived', sudo=True,
                              check=False).exit_status == 0
        if not present:
            return ''
        return session.read_file(KEEPALIVED_CONF, step='read keepalived',
                                 sudo=True).decode('utf-8', 'replace')

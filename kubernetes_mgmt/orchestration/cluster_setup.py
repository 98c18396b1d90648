"""Turn prepared VMs into a cluster: the phases of instantiate.

Every phase is safe to repeat: the install script checks each node's
state first, so re-running after a failure continues where it stopped.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster import credentials, placement, roles
from kubernetes_mgmt.cluster.admin_account import (
    AdminCredentials,
    ensure_admin_credentials,
)
from kubernetes_mgmt.cluster.kubectl import ADMIN_CONF, wait_until_ready
from kubernetes_mgmt.cluster.plan import ClusterPlan, Node
from kubernetes_mgmt.cluster.roles import JoinSecrets
from kubernetes_mgmt.cluster.script import InstallScript
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import ConnectError
from kubernetes_mgmt.orchestration.helper_master import bystander_sessions
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
        """Init the first master, or refresh join credentials if it was
        initialized by an earlier run."""
        first = self.first
        session = self.session(first)
        secrets = JoinSecrets(credentials.bootstrap_token(),
                              credentials.certificate_key())
        initialized = session.run(['test', '-e', ADMIN_CONF],
                                  step='check control plane', sudo=True,
                                  check=False).exit_status == 0
        role = 'refresh-join' if initialized else 'init'
        with self.progress.phase(f'control plane {role}', first.label):
            config = (roles.refresh_join(first, secrets) if initialized
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
                                 f'{len(nodes)} node(s)'), \
                bystander_sessions(self.sessions.keys) as quick:
            def refresh(node: Node) -> None:
                # The helper is connected already; the others may be down.
                session = (self.session(node) if node is self.first
                           else quick.get(node.endpoint))
                self.script.run(session, 'hosts',
                                roles.hosts(self.plan, node))

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
            with self.progress.phase('join master', node.label):
                self.script.run(self.session(node), 'join-master',
                                roles.join(self.plan, node, secrets, True))

    def join_workers(self, workers: Sequence[Node],
                     secrets: JoinSecrets) -> None:
        with self.progress.phase('join workers',
                                 f'{len(workers)} worker(s)'):
            self._each(workers, lambda node: self.script.run(
                self.session(node), 'join-worker',
                roles.join(self.plan, node, secrets, False)),
                'join workers')

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
        """The file as it is: command output would come back with known
        secrets (this very password, in a second run) masked."""
        session = self.session(node)
        present = session.run(['test', '-f', KEEPALIVED_CONF],
                              step='read keepalived', sudo=True,
                              check=False).exit_status == 0
        if not present:
            return ''
        return session.read_file(KEEPALIVED_CONF, step='read keepalived',
                                 sudo=True).decode('utf-8', 'replace')

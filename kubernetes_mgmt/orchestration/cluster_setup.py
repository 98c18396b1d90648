"""Turn prepared VMs into a cluster: the phases of instantiate.

Every phase is safe to repeat: the install script checks each node's
state first, so re-running after a failure continues where it stopped.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster import credentials, roles
from kubernetes_mgmt.cluster.admin_account import (
    AdminCredentials,
    ensure_admin_credentials,
)
from kubernetes_mgmt.cluster.kubectl import ADMIN_CONF, wait_until_ready
from kubernetes_mgmt.cluster.plan import ClusterPlan, Node
from kubernetes_mgmt.cluster.roles import JoinSecrets
from kubernetes_mgmt.cluster.script import InstallScript
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.orchestration.parallel import for_each
from kubernetes_mgmt.orchestration.progress import Progress
from kubernetes_mgmt.remote.ssh import Sessions, SshSession

LOG = redact.get_logger(__name__)
KEEPALIVED_CONF = '/etc/keepalived/keepalived.conf'
_AUTH_PASS = re.compile(r'^\s*auth_pass\s+(\S+)\s*$', re.MULTILINE)


class ClusterSetup:
    def __init__(self, plan: ClusterPlan, sessions: Sessions,
                 progress: Progress):
        self.plan = plan
        self.sessions = sessions
        self.progress = progress
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
                self.session(plan.first_master),
                deadline=CONF.kubernetes_mgmt.node_ready_timeout)

    # -- phases -------------------------------------------------------------

    def prepare(self, nodes: Sequence[Node]) -> None:
        with self.progress.phase('prepare nodes', f'{len(nodes)} node(s)'):
            self._each(nodes, self._prepare_one, 'prepare nodes')

    def load_balancers(self) -> None:
        masters = self.plan.masters
        with self.progress.phase('load balancer',
                                 f'{len(masters)} master(s)'):
            password = self._vrrp_password()

            def configure(node: Node) -> None:
                rank = masters.index(node)
                self.script.run(self.session(node), 'lb',
                                roles.load_balancer(self.plan, node, rank,
                                                    password))

            self._each(masters, configure, 'load balancer')

    def control_plane(self) -> JoinSecrets:
        """Init the first master, or refresh join credentials if it was
        initialized by an earlier run."""
        first = self.plan.first_master
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
            wait_until_ready(self.session(self.plan.first_master),
                             [n.name for n in nodes],
                             deadline=CONF.kubernetes_mgmt.node_ready_timeout)

    # -- helpers ------------------------------------------------------------

    def session(self, node: Node) -> SshSession:
        return self.sessions.get(node.endpoint)

    def _prepare_one(self, node: Node) -> None:
        session = self.session(node)
        self.script.upload(session)
        cni = self.plan.cni
        if node is self.plan.first_master and cni.package_path:
            session.upload(cni.package_path.read_bytes(),
                           roles.REMOTE_CNI_MANIFEST,
                           step='upload CNI manifest', sudo=True)
        self.script.run(session, 'prepare', roles.prepare(self.plan, node))

    def _each(self, nodes: Sequence[Node], step, phase: str) -> None:
        for_each(nodes, step, phase=phase, label=lambda n: n.label,
                 parallel=CONF.kubernetes_mgmt.max_parallel_hosts)

    def _vrrp_password(self) -> str:
        """Keep the password of an earlier run so that re-running changes
        no keepalived configuration; otherwise make a new one."""
        session = self.session(self.plan.first_master)
        found = session.run(['cat', KEEPALIVED_CONF], step='read keepalived',
                            sudo=True, check=False)
        match = _AUTH_PASS.search(found.stdout) if found.exit_status == 0 \
            else None
        if match:
            redact.register(match.group(1))
            return match.group(1)
        return credentials.vrrp_password()

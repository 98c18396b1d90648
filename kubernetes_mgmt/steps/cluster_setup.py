"""The actions of the steps that turn VMs into cluster nodes.

``orchestration.steps`` declares which of these run, on which node and
after what; the engine runs them. Every action is safe to repeat. Whether
the control plane must be set up, or a node must join, is decided by a
check of facts (``cluster.node_state``): a finished role is skipped, a
half-finished kubeadm run is undone (``kubeadm reset -f``, and a
control-plane node's etcd member removed through a serving master)
before it is retried.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster import (
    credentials,
    etcd,
    join_tokens,
    node_state,
    placement,
    roles,
)
from kubernetes_mgmt.cluster.admin_account import (
    AdminCredentials,
    ensure_admin_credentials,
)
from kubernetes_mgmt.cluster.api_server import node_readiness, wait_until_ready
from kubernetes_mgmt.cluster.cluster_plan import ClusterPlan, Node
from kubernetes_mgmt.cluster.node_state import ClusterFacts, HostFacts, Stage
from kubernetes_mgmt.cluster.roles import JoinSecrets
from kubernetes_mgmt.cluster.script import InstallScript
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.engine.progress import Progress
from kubernetes_mgmt.errors import ConnectError, MgmtDriverError
from kubernetes_mgmt.remote.ssh import Sessions, SshSession
from kubernetes_mgmt.steps.helper_master import bystander_session
from kubernetes_mgmt.topology.hosts import Role

LOG = redact.get_logger(__name__)
KEEPALIVED_CONF = '/etc/keepalived/keepalived.conf'
_AUTH_PASS = re.compile(r'^\s*auth_pass\s+(\S+)\s*$', re.MULTILINE)


class ClusterSetup:
    """What the steps of one operation share: its plan and sessions, the
    master that runs kubectl (``first``), and what earlier steps learnt
    (join credentials, the VRRP password)."""

    def __init__(self, plan: ClusterPlan, sessions: Sessions | None,
                 progress: Progress, *, installs: bool = False):
        """``installs``: the operation sets up the control plane, on the
        plan's first master. Otherwise ``first``, the master that runs
        kubectl and refreshes join credentials, is chosen by a step of
        the operation (``Day2.choose_helper``)."""
        self.plan = plan
        self.sessions = sessions
        self.progress = progress
        self.installs = installs
        self.first = plan.first_master
        self.script = InstallScript(plan.script)
        self.secrets: JoinSecrets | None = None
        self.made_tokens: list[str] = []   # ids of the bootstrap tokens
        self.vrrp_password: str | None = None
        self.admin: AdminCredentials | None = None
        # Facts each node's prepare printed, for its next decision.
        self._reported: dict[str, HostFacts] = {}

    # -- preparation and load balancers ----------------------------------

    def prepare(self, node: Node) -> None:
        session = self.session(node)
        self.script.upload(session)
        cni = self.plan.cni
        if self.installs and node is self.first and cni.package_path:
            session.upload(cni.package_path.read_bytes(),
                           roles.REMOTE_CNI_MANIFEST,
                           step='upload CNI manifest', sudo=True)
        out = self.script.run(session, 'prepare',
                              roles.prepare(self.plan, node))
        facts = node_state.reported_facts(out, session.endpoint.name)
        if facts is not None:
            self._reported[node.name] = facts

    def read_vrrp_password(self, masters: Sequence[Node]) -> None:
        """Keep the password of an earlier run so that re-running changes
        no keepalived configuration; otherwise make a new one. Read from
        ``first``, else from the other masters to be configured."""
        tried: list[Node] = []
        for node in [self.first, *masters]:
            if node.host.role is not Role.MASTER or node in tried:
                continue
            tried.append(node)
            match = _AUTH_PASS.search(self._keepalived_conf(node))
            if match:
                redact.register(match.group(1))
                self.vrrp_password = match.group(1)
                return
        self.vrrp_password = credentials.vrrp_password()

    def load_balancer(self, node: Node,
                      backends: Sequence[Node] | None = None) -> None:
        """HAProxy and keepalived on master ``node``, forwarding to
        ``backends`` (default: all masters). The script reloads a service
        only when its configuration changed."""
        if self.vrrp_password is None:
            raise MgmtDriverError('load balancer before the VRRP password '
                                  'was read (a step graph without it)')
        rank = self.plan.masters.index(node)
        self.script.run(self.session(node), 'lb',
                        roles.load_balancer(self.plan, node, rank,
                                            self.vrrp_password, backends))

    # -- control plane ----------------------------------------------------

    def init_needed(self) -> Stage | None:
        """None when ``kubeadm init`` and the init role are done on the
        first master (its API answers and knows its node), else how far
        they got."""
        session = self.session(self.first)
        host = self.host_facts(self.first)
        cluster = (ClusterFacts(node_readiness(session)) if host.api_ready
                   else None)
        stage = node_state.init_stage(host, cluster, self.first.name)
        LOG.info('[%s] init: %s', self.first.name, stage.value)
        return None if stage is Stage.DONE else stage

    def init(self, stage: Stage) -> None:
        """Init the first master (resuming an init whose kubeadm step
        finished, undoing a half-finished one first); the CNI is applied
        too. The join credentials it made are kept for the joins."""
        if stage is Stage.HALF:
            self.reset(self.first)
        secrets = self._new_secrets()
        out = self.script.run(self.session(self.first), 'init',
                              roles.init(self.plan, self.first, secrets))
        self.secrets = dataclasses.replace(secrets,
                                           ca_cert_hash=out['CA_CERT_HASH'])

    def refresh_join(self, apply_cni: bool = False) -> None:
        """Fresh join credentials (token and certificate key) from a
        running control plane; never initializes one. ``apply_cni``: the
        control plane was set up by an earlier attempt of this operation,
        whose CNI apply may not have happened."""
        secrets = self._new_secrets()
        config = roles.refresh_join(self.first, secrets,
                                    self.plan if apply_cni else None)
        out = self.script.run(self.session(self.first), 'refresh-join',
                              config)
        self.secrets = dataclasses.replace(secrets,
                                           ca_cert_hash=out['CA_CERT_HASH'])

    # -- joins ------------------------------------------------------------

    def join_needed(self, node: Node) -> Stage | None:
        """None when ``node`` has joined (facts of the node and of the
        cluster as the serving master sees it), else how far it got."""
        control_plane = node.host.role is Role.MASTER
        host = self.host_facts(node)
        if control_plane or host.kubeadm_files or host.kubeadm_join:
            cluster = self.cluster_facts(with_etcd=control_plane)
        else:       # nothing of kubeadm on the worker: a new join
            cluster = ClusterFacts({})
        stage = node_state.join_stage(host, cluster, node, control_plane)
        LOG.info('[%s] join-%s: %s', node.name,
                 'master' if control_plane else 'worker', stage.value)
        return None if stage is Stage.DONE else stage

    def join(self, node: Node, stage: Stage) -> None:
        if self.secrets is None:
            raise MgmtDriverError(f'[{node.label}] join before the join '
                                  'credentials were made (a step graph '
                                  'without them)')
        if stage is Stage.HALF:
            self.undo_join(node)
        control_plane = node.host.role is Role.MASTER
        self.script.run(self.session(node),
                        'join-master' if control_plane else 'join-worker',
                        roles.join(self.plan, node, self.secrets,
                                   control_plane))

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

    def delete_join_tokens(self) -> None:
        """Once the joins of the operation are over: the bootstrap
        tokens the driver made are deleted through ``first``. Best
        effort - the joins are done, or failed already - with a warning
        naming what is left (it expires at its TTL)."""
        if self.sessions is None:
            raise MgmtDriverError('no SSH sessions: this setup only plans')
        try:
            # A master that went away is not waited for long.
            deleted = join_tokens.delete_driver_tokens(
                bystander_session(self.sessions, self.first),
                self.made_tokens)
        except MgmtDriverError as error:
            LOG.warning('%s %s: bootstrap tokens not deleted through %s: '
                        '%s; they expire by themselves (kubeadm token '
                        'list shows them)', self.progress.operation,
                        self.progress.instance_id, self.first.name, error)
            return
        if deleted:
            LOG.info('[%s] bootstrap token(s) %s deleted', self.first.name,
                     ', '.join(deleted))

    # -- the cluster as a whole --------------------------------------------

    def wait_ready(self, nodes: Sequence[Node]) -> None:
        wait_until_ready(self.session(self.first), [n.name for n in nodes],
                         deadline=CONF.kubernetes_mgmt.node_ready_timeout)

    def admin_account(self) -> None:
        """The ServiceAccount, token and CA the VIM is registered with."""
        self.admin = ensure_admin_credentials(
            self.session(self.first),
            deadline=CONF.kubernetes_mgmt.node_ready_timeout)

    def label_nodes(self, labels: dict[str, dict[str, str]]) -> None:
        """Placement labels (``cluster.placement``) on joined nodes."""
        if labels:
            placement.apply_labels(self.session(self.first), labels)

    def refresh_bystander_hosts(self, node: Node) -> None:
        """Best effort: the /etc/hosts block of ``node``, which is not
        part of the operation, with the short bystander connect
        deadline. One that cannot be reached or updated is skipped with a
        warning naming it; the next operation that refreshes /etc/hosts
        repairs it."""
        try:
            self.script.run(bystander_session(self.sessions, node),
                            'hosts', roles.hosts(self.plan, node))
        except MgmtDriverError as error:
            LOG.warning(
                '%s %s: /etc/hosts of %s (%s) not refreshed, %s: %s; the '
                'next scale or heal refreshes it', self.progress.operation,
                self.progress.instance_id, node.name, node.ip,
                'unreachable' if isinstance(error, ConnectError)
                else 'failed', error)

    # -- facts --------------------------------------------------------------

    def host_facts(self, node: Node) -> HostFacts:
        """The node's own facts: those its prepare reported moments ago
        in this operation (once: only init, join and reset change them,
        and they follow), else its ``status`` role's."""
        reported = self._reported.pop(node.name, None)
        if reported is not None:
            return reported
        return node_state.gather_host(self.script, self.session(node),
                                      roles.status(node))

    def cluster_facts(self, with_etcd: bool) -> ClusterFacts:
        """Nodes (and etcd members) as the serving master ``first``
        sees them."""
        session = self.session(self.first)
        if with_etcd:
            return node_state.gather_cluster(session, self.first.name)
        return ClusterFacts(node_readiness(session))

    def joined(self, node: Node) -> bool:
        """``node`` finished ``kubeadm join`` (a kubelet.conf left by a
        join that failed before its etcd membership does not count)."""
        stage = self.join_needed(node)
        return stage is None or stage is Stage.RESUME

    # -- helpers ------------------------------------------------------------

    def session(self, node: Node) -> SshSession:
        if self.sessions is None:
            raise MgmtDriverError('no SSH sessions: this setup only plans')
        return self.sessions.get(node.endpoint)

    def _new_secrets(self) -> JoinSecrets:
        token = credentials.bootstrap_token()
        self.made_tokens.append(token.split('.')[0])
        return JoinSecrets(token, credentials.certificate_key())

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

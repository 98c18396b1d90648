"""How far each node got, judged by facts, before the driver acts.

Files kubeadm writes early (``admin.conf``, ``kubelet.conf``) prove
nothing: a run that failed after writing them leaves them behind. A
node's state per role comes from

- the node itself (install script role ``status``): the completion
  record each role writes as its last step (with the script contract
  version), the record of ``kubeadm init``/``join`` having exited 0, the
  kubeadm files present, and whether its API server answers;
- the cluster, through a master whose API answers: the Node objects and
  their readiness, and the etcd members.

A role is *done* when its record is there and the cluster agrees; the
kubeadm step of a role may be finished while the role is not (then the
role is run again and skips kubeadm); kubeadm files, or an etcd member,
without a finished kubeadm step are a *half-finished* run, which is
undone before the role is retried.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster import etcd
from kubernetes_mgmt.cluster.api_server import node_readiness
from kubernetes_mgmt.cluster.cluster_plan import Node
from kubernetes_mgmt.cluster.etcd import EtcdMember
from kubernetes_mgmt.cluster.script import CONTRACT_VERSION, InstallScript
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.remote.ssh import SshSession

LOG = redact.get_logger(__name__)


class Stage(enum.Enum):
    """Where a role stands on one node."""

    NONE = 'not installed'
    HALF = 'partly installed: half-finished kubeadm run'
    RESUME = 'partly installed: kubeadm finished, role not'
    DONE = 'done'


@dataclass(frozen=True)
class HostFacts:
    """What the node's own ``status`` role reports."""

    contract: int
    done: dict[str, int] = field(default_factory=dict)   # role -> contract
    kubeadm_files: tuple[str, ...] = ()
    api_ready: bool = False

    def finished(self, role: str) -> bool:
        return role in self.done

    @property
    def kubeadm_init(self) -> bool:
        return 'kubeadm-init' in self.done

    @property
    def kubeadm_join(self) -> bool:
        return 'kubeadm-join' in self.done


@dataclass(frozen=True)
class ClusterFacts:
    """What a serving master reports about every node."""

    nodes: dict[str, bool]          # registered Node -> Ready
    members: tuple[EtcdMember, ...] = ()

    def registered(self, name: str) -> bool:
        return name in self.nodes

    def members_of(self, name: str, ip: str) -> list[EtcdMember]:
        return [m for m in self.members if m.is_node(name, ip)]


def parse_status(values: dict[str, str], where: str) -> HostFacts:
    """The ``status`` role's KEY=VALUE output -> HostFacts."""
    try:
        contract = int(values['CONTRACT_VERSION'])
        done = {}
        for key, value in values.items():
            if key.startswith('DONE_'):
                role = key[len('DONE_'):].lower().replace('_', '-')
                done[role] = int(value) if value else 0
        files = tuple(f for f in values.get('KUBEADM_FILES', '').split(',')
                      if f)
        api = values.get('API_READY', '0') == '1'
    except (KeyError, ValueError) as exc:
        raise MgmtDriverError(f'[{where}] status: unexpected output of the '
                              f'install script ({exc!r})') from None
    return HostFacts(contract, done, files, api)


def reported_facts(values: dict[str, str], where: str) -> HostFacts | None:
    """The facts another role printed after its work (prepare does), or
    None when it printed none (a script that does not)."""
    if 'CONTRACT_VERSION' not in values:
        return None
    return parse_status(values, where)


def gather_host(script: InstallScript, session: SshSession,
                config: dict) -> HostFacts:
    facts = parse_status(script.run(session, 'status', config),
                         session.endpoint.name)
    old = {r: v for r, v in facts.done.items() if v != CONTRACT_VERSION}
    if old:
        LOG.info('[%s] completion records of another script contract '
                 '(this plugin speaks %d): %s', session.endpoint.name,
                 CONTRACT_VERSION,
                 ', '.join(f'{r}={v}' for r, v in sorted(old.items())))
    return facts


def gather_cluster(session: SshSession, via: str) -> ClusterFacts:
    """Nodes and etcd members as master ``via`` (whose API answers)
    sees them."""
    return ClusterFacts(node_readiness(session),
                        tuple(etcd.members(session, via)))


# -- decisions --------------------------------------------------------------

def init_stage(host: HostFacts, cluster: ClusterFacts | None,
               name: str) -> Stage:
    """The first master's ``init``: ``cluster`` is None when its API
    does not answer."""
    kubeadm_done = host.kubeadm_init or (
        host.api_ready and cluster is not None and cluster.registered(name))
    if kubeadm_done and host.api_ready and cluster is not None \
            and cluster.registered(name) and host.finished('init'):
        return Stage.DONE
    if kubeadm_done:
        return Stage.RESUME
    return Stage.HALF if host.kubeadm_files else Stage.NONE


def join_stage(host: HostFacts, cluster: ClusterFacts, node: Node,
               control_plane: bool) -> Stage:
    """A node joining a cluster whose facts are ``cluster``."""
    role = 'join-master' if control_plane else 'join-worker'
    members = cluster.members_of(node.name, node.ip)
    member_ok = not control_plane or any(m.name == node.name
                                         for m in members)
    registered = cluster.registered(node.name)
    # Before records existed: a registered node with its kubelet.conf
    # (and, on a master, its started etcd member) finished kubeadm join.
    kubeadm_done = host.kubeadm_join or (
        registered and 'kubelet.conf' in host.kubeadm_files)
    if kubeadm_done and registered and member_ok:
        return Stage.DONE if host.finished(role) else Stage.RESUME
    if host.kubeadm_files or members or host.kubeadm_join:
        return Stage.HALF
    return Stage.NONE

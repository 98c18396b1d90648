"""What the step actions reach the VMs through: the operation's SSH
sessions (``Live``), or nothing at all when a graph is only built to be
printed (``PlanOnly``: ``kubernetes-mgmt plan``)."""
from __future__ import annotations

from typing import Protocol

from kubernetes_mgmt.cluster.cluster_plan import Node
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.remote.ssh import Sessions, SshSession


class Runtime(Protocol):
    def session(self, node: Node) -> SshSession:
        """The operation's connection to ``node``."""

    def bystander_session(self, node: Node) -> SshSession:
        """The connection to a node outside the operation, made with the
        short bystander deadline: one that is down must not hold the
        operation for ``ssh_connect_deadline``."""

    def forget_host_key(self, server_id: str) -> None:
        """The VM is leaving: its host key is no longer trusted."""


class Live:
    def __init__(self, sessions: Sessions):
        self.sessions = sessions

    def session(self, node: Node) -> SshSession:
        return self.sessions.get(node.endpoint)

    def bystander_session(self, node: Node) -> SshSession:
        return self.sessions.get(node.endpoint, deadline=CONF.kubernetes_mgmt
                                 .bystander_connect_deadline)

    def forget_host_key(self, server_id: str) -> None:
        self.sessions.keys.forget(server_id)


class PlanOnlyError(MgmtDriverError):
    """A step of a printed plan was run."""


class PlanOnly:
    """The runtime of a graph that is printed, never run."""

    def session(self, node: Node) -> SshSession:
        raise PlanOnlyError(f'[{node.label}] this graph only plans: no '
                            'step of it reaches a VM')

    bystander_session = session

    def forget_host_key(self, server_id: str) -> None:
        raise PlanOnlyError('this graph only plans: no host key changes')

"""The Kubernetes version each node runs, as the cluster reports it: the
facts an upgrade decides with, never a record of its own progress.

A node is on a version when its kubelet reports it (the kubelet package
upgraded and restarted) and, on a master, when its own API server serves
it (kubeadm upgraded its static pods); a node not yet uncordoned after
its upgrade is not done either.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from kubernetes_mgmt.cluster.conditions import is_ready
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.params.versions import Minor
from kubernetes_mgmt.remote.kubectl import kubectl
from kubernetes_mgmt.remote.ssh import SshSession

API_PORT = 6443     # each master's own kube-apiserver, behind any LB


@dataclass(frozen=True)
class NodeVersion:
    name: str
    kubelet: str                # e.g. 'v1.36.4', as the node reports it
    ready: bool
    unschedulable: bool
    api_server: str | None = None   # a master's own API server

    def on(self, minor: Minor) -> bool:
        """Wholly on ``minor``: kubelet and (master) API server."""
        return Minor.parse(self.kubelet) == minor and (
            self.api_server is None
            or Minor.parse(self.api_server) == minor)

    def upgraded(self, minor: Minor) -> bool:
        """On ``minor``, Ready and schedulable again: nothing left."""
        return self.on(minor) and self.ready and not self.unschedulable

    @property
    def version(self) -> str:
        """The version the node runs: its API server's on a master."""
        return self.api_server or self.kubelet


def parse_nodes(text: str) -> dict[str, NodeVersion]:
    """``kubectl get nodes -o json`` -> node name -> its version facts
    (no API server version: ``api_server_version`` asks each master)."""
    found = {}
    for item in json.loads(text).get('items', []):
        name = item['metadata']['name']
        info = (item.get('status') or {}).get('nodeInfo') or {}
        found[name] = NodeVersion(
            name, str(info.get('kubeletVersion') or ''), is_ready(item),
            bool((item.get('spec') or {}).get('unschedulable')))
    return found


def nodes(session: SshSession) -> dict[str, NodeVersion]:
    out = kubectl(session, ['get', 'nodes', '-o', 'json'],
                  step='read node versions').stdout
    return parse_nodes(out)


def api_server_version(session: SshSession, ip: str) -> str:
    """The gitVersion the API server of the master at ``ip`` serves
    (asked directly, not through the control-plane endpoint)."""
    out = kubectl(session, ['--server', f'https://{ip}:{API_PORT}', 'get',
                            '--raw', '/version'],
                  step=f'read API server version of {ip}').stdout
    try:
        return str(json.loads(out)['gitVersion'])
    except (ValueError, KeyError, TypeError):
        raise MgmtDriverError(f'the API server at {ip} answered /version '
                              f'with {out[:200]!r}') from None


def node_version(session: SshSession, name: str, ip: str | None
                 ) -> NodeVersion | None:
    """One node's facts (``ip``: a master's, to ask its API server);
    None if no node is called ``name``."""
    found = nodes(session).get(name)
    if found is None or ip is None:
        return found
    return NodeVersion(found.name, found.kubelet, found.ready,
                       found.unschedulable, api_server_version(session, ip))

"""Each node's health as the heal guards judge it: the API server's
Ready condition, and whether its VM accepts a connection on the SSH
port (a VM that stopped answering refuses or drops it)."""
from __future__ import annotations

import socket
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from kubernetes_mgmt.cluster.api_server import node_readiness
from kubernetes_mgmt.cluster.cluster_plan import Node
from kubernetes_mgmt.cluster.heal_guard import MASTER, NodeHealth
from kubernetes_mgmt.remote.ssh import Endpoint, SshSession

# A VM that answers at all accepts within this; a dead one's address
# either refuses at once or stays silent.
PROBE_TIMEOUT = 5.0


def answers(endpoint: Endpoint, timeout: float = PROBE_TIMEOUT) -> bool:
    try:
        socket.create_connection((endpoint.address, endpoint.port),
                                 timeout=timeout).close()
    except OSError:
        return False
    return True


def read_health(session: SshSession, masters: Sequence[Node],
                workers: Sequence[Node]) -> dict[str, NodeHealth]:
    """Node name -> its health; ``session``: kubectl on a master that
    stays. A node the API server does not list counts as not Ready."""
    ready = node_readiness(session)
    nodes = [*masters, *workers]
    with ThreadPoolExecutor(max_workers=max(1, min(len(nodes), 16))) as pool:
        answering = list(pool.map(lambda n: answers(n.endpoint), nodes))
    return {node.name: NodeHealth(
        node.name, MASTER if node in masters else 'worker',
        ready=bool(ready.get(node.name)), answering=up)
        for node, up in zip(nodes, answering, strict=True)}

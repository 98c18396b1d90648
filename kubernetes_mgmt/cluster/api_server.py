"""What the API server says about the cluster (nodes Ready, version),
asked through kubectl on a control-plane node."""
from __future__ import annotations

import json
from collections.abc import Iterable

from kubernetes_mgmt.cluster.conditions import is_ready
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.remote.kubectl import kubectl
from kubernetes_mgmt.remote.retry import poll
from kubernetes_mgmt.remote.ssh import SshSession


def node_readiness(session: SshSession) -> dict[str, bool]:
    """Node name -> Ready, as the API server reports it."""
    out = kubectl(session, ['get', 'nodes', '-o', 'json'],
                  step='list nodes').stdout
    return {item['metadata']['name']: is_ready(item)
            for item in json.loads(out).get('items', [])}


def wait_until_ready(session: SshSession, names: Iterable[str], *,
                     deadline: float) -> None:
    """Poll until every node in ``names`` is registered and Ready."""
    wanted = set(names)
    missing: set[str] = set(wanted)

    def all_ready() -> bool:
        nonlocal missing
        status = node_readiness(session)
        missing = {n for n in wanted if not status.get(n)}
        return not missing

    try:
        poll(all_ready, deadline=deadline, what='nodes Ready')
    except TimeoutError:
        raise TimeoutError(
            f'nodes not Ready after {deadline:g} s: '
            f'{", ".join(sorted(missing))}') from None


def own_node_unusable(session: SshSession, name: str, *,
                      unreachable_retry: float) -> str | None:
    """Why master ``name`` cannot run the cluster's operations (its API
    server does not answer, or does not report its own node Ready), or
    None. An API server that does not answer is retried only for
    ``unreachable_retry`` seconds."""
    try:
        result = kubectl(session, ['get', 'node', name, '-o', 'json'],
                         step='check master Ready', check=False,
                         unreachable_retry=unreachable_retry)
    except MgmtDriverError as exc:
        return f'not reachable: {exc}'
    if result.exit_status != 0:
        return (f'kubectl get node failed: '
                f'{(result.stderr or result.stdout).strip()[-300:]}')
    try:
        node = json.loads(result.stdout)
    except ValueError:
        return 'kubectl gave no node status'
    if not isinstance(node, dict) or not isinstance(node.get('status'),
                                                    dict):
        return 'kubectl gave no node status'
    return None if is_ready(node) else 'its node is NotReady'


def server_version(session: SshSession) -> str | None:
    """The API server's version (``v1.37.2``), or None if it does not
    say."""
    out = kubectl(session, ['version', '-o', 'json'],
                  step='API server version').stdout
    try:
        version = json.loads(out).get('serverVersion', {}).get('gitVersion')
    except (ValueError, AttributeError):
        return None
    return version if isinstance(version, str) and version else None

"""What the API server says about the cluster (nodes Ready, version),
asked through kubectl on a control-plane node."""
from __future__ import annotations

import json
from collections.abc import Iterable

from kubernetes_mgmt.remote.kubectl import kubectl
from kubernetes_mgmt.remote.retry import poll
from kubernetes_mgmt.remote.ssh import SshSession


def node_readiness(session: SshSession) -> dict[str, bool]:
    """Node name -> Ready, as the API server reports it."""
    out = kubectl(session, ['get', 'nodes', '-o', 'json'],
                  step='list nodes').stdout
    return {item['metadata']['name']: _ready(item)
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


def _ready(node: dict) -> bool:
    return any(c.get('type') == 'Ready' and c.get('status') == 'True'
               for c in node.get('status', {}).get('conditions', []))


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

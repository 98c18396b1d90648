"""kubectl on a control-plane node, with the admin kubeconfig kubeadm
wrote there (root-only, hence sudo)."""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from kubernetes_mgmt.remote.retry import poll
from kubernetes_mgmt.remote.ssh import Result, SshSession

ADMIN_CONF = '/etc/kubernetes/admin.conf'


def kubectl(session: SshSession, args: Sequence[str], *, step: str,
            input: str | None = None, check: bool = True) -> Result:
    return session.run(['kubectl', '--kubeconfig', ADMIN_CONF, *args],
                       step=step, sudo=True, input=input, check=check)


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

"""kubectl on a control-plane node, with the admin kubeconfig kubeadm
wrote there (root-only, hence sudo).

Below cluster and storage, which both talk to the API server this way.
"""
from __future__ import annotations

from collections.abc import Sequence

from kubernetes_mgmt import redact
from kubernetes_mgmt.errors import CommandFailed
from kubernetes_mgmt.remote.retry import Backoff
from kubernetes_mgmt.remote.ssh import Result, SshSession

LOG = redact.get_logger(__name__)
ADMIN_CONF = '/etc/kubernetes/admin.conf'
UNREACHABLE_RETRY = 20.0
# kubectl's words when a request got no answer from the API server.
_UNREACHABLE = ('Unable to connect to the server',
                'The connection to the server')


def kubectl(session: SshSession, args: Sequence[str], *, step: str,
            input: str | None = None, check: bool = True,
            timeout: float | None = None,
            unreachable_retry: float = UNREACHABLE_RETRY) -> Result:
    """Run kubectl with the admin kubeconfig. While the API cannot be
    reached at all (the request got no answer: an HA cluster's VIP
    moving between masters resets connections), the command is repeated
    with backoff for up to ``unreachable_retry`` seconds."""
    backoff = Backoff(unreachable_retry, first=0.5)
    while True:
        result = session.run(['kubectl', '--kubeconfig', ADMIN_CONF, *args],
                             step=step, sudo=True, input=input, check=False,
                             timeout=timeout)
        if result.exit_status == 0 or not _unreachable(result):
            break
        if not backoff.wait():
            break
        LOG.info('[%s] %s: API not reachable, trying again: %s',
                 session.endpoint.name, step, result.stderr.strip()[:200])
    if check and result.exit_status != 0:
        raise CommandFailed(session.endpoint.name, step, result.exit_status,
                            result.stdout, result.stderr)
    return result


def _unreachable(result: Result) -> bool:
    text = result.stderr
    return any(marker in text for marker in _UNREACHABLE)

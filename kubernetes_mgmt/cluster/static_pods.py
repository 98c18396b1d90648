"""Restarting a master's control-plane static pods, as kubeadm's
certificate management guide says to after a renewal: the kubelet is
their only manager (kubectl cannot restart them), and it stops a static
pod whose manifest leaves its manifest directory and starts it again
when the manifest comes back.

Nothing is waited for by the clock: the manifests are set aside, the
containers that ran are polled (crictl, on the master itself) until none
runs, the manifests are put back, new containers are polled for, then
the API server is polled until it serves through this master again.
Manifests set aside are always put back, also when a wait fails; one
left aside by a run that lost its connection is put back by ``release``
at the next operation's read of the certificates.
"""
from __future__ import annotations

import json
from collections.abc import Collection

from kubernetes_mgmt import redact
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.remote.kubectl import kubectl
from kubernetes_mgmt.remote.retry import poll
from kubernetes_mgmt.remote.ssh import SshSession

LOG = redact.get_logger(__name__)
MANIFESTS = '/etc/kubernetes/manifests'
# Beside kubeadm's own backups; never inside MANIFESTS (the kubelet
# would run what it finds there).
HELD = '/etc/kubernetes/tmp/kubernetes-mgmt-held-manifests'
COMPONENTS = ('etcd', 'kube-apiserver', 'kube-controller-manager',
              'kube-scheduler')
CRI_ENDPOINT = 'unix:///var/run/containerd/containerd.sock'
API_PORT = 6443

# Moves the components' manifests ($3...) from $1 to $2; prints every
# component whose manifest is now set aside (an earlier run's too).
_HOLD = r'''set -euo pipefail
manifests=$1 held=$2
shift 2
mkdir -p -m 0700 "$held"
for component in "$@"; do
    if [ -e "$manifests/$component.yaml" ]; then
        mv -f "$manifests/$component.yaml" "$held/$component.yaml"
    fi
    if [ -e "$held/$component.yaml" ]; then
        echo "$component"
    fi
done
'''

# Puts the manifests set aside in $2 back into $1 (a manifest written
# there since wins over the one set aside); prints the components.
_RELEASE = r'''set -euo pipefail
manifests=$1 held=$2
shift 2
for component in "$@"; do
    if [ -e "$held/$component.yaml" ]; then
        if [ -e "$manifests/$component.yaml" ]; then
            rm -f "$held/$component.yaml"
        else
            mv "$held/$component.yaml" "$manifests/$component.yaml"
        fi
        echo "$component"
    fi
done
'''


def running(session: SshSession) -> dict[str, str]:
    """Container id -> component, for the control-plane containers that
    run on the master."""
    out = session.run(
        ['crictl', '--runtime-endpoint', CRI_ENDPOINT, 'ps', '--state',
         'running', '--name', f'^({"|".join(COMPONENTS)})$', '-o', 'json'],
        step='list control-plane containers', sudo=True)
    return parse_containers(out.stdout, session.endpoint.name)


def parse_containers(text: str, host: str = '?') -> dict[str, str]:
    """``crictl ps -o json`` -> container id -> name (control plane
    only)."""
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise MgmtDriverError(f'[{host}] crictl ps: output is not JSON: '
                              f'{exc}') from None
    found = {}
    for container in data.get('containers') or []:
        name = (container.get('metadata') or {}).get('name')
        if name in COMPONENTS and container.get('id'):
            found[str(container['id'])] = name
    return found


def hold(session: SshSession) -> list[str]:
    out = session.run_script(_HOLD, [MANIFESTS, HELD, *COMPONENTS],
                             step='set control-plane manifests aside',
                             sudo=True)
    return out.stdout.split()


def release(session: SshSession) -> list[str]:
    """Put back what is set aside; the components put back (usually
    none)."""
    out = session.run_script(_RELEASE, [MANIFESTS, HELD, *COMPONENTS],
                             step='put control-plane manifests back',
                             sudo=True)
    back = out.stdout.split()
    return back


def restart(session: SshSession, ip: str, *, deadline: float) -> None:
    """Restart the control-plane pods of the master ``session`` reaches
    (``ip``: where its API server listens); each wait has ``deadline``
    seconds."""
    host = session.endpoint.name
    before = running(session)
    held = hold(session)
    LOG.info('[%s] restarting %s', host, ', '.join(held) or 'nothing')
    try:
        _wait(lambda: not set(before) & set(running(session)), deadline,
              host, 'the control-plane containers stopped')
    finally:
        release(session)
    _wait(lambda: _restarted(running(session), before, held), deadline,
          host, f'new containers of {", ".join(held)} running')
    wait_serving(session, ip, deadline=deadline)


def _restarted(now: dict[str, str], before: Collection[str],
               held: Collection[str]) -> bool:
    fresh = {name for cid, name in now.items() if cid not in before}
    return set(held) <= fresh


def wait_serving(session: SshSession, ip: str, *, deadline: float) -> None:
    """Poll until the API server on ``ip`` answers /readyz (with the
    admin kubeconfig's credentials, which the renewal replaced)."""
    host = f'[{ip}]' if ':' in ip else ip
    server = f'https://{host}:{API_PORT}'

    def ready() -> bool:
        result = kubectl(session, ['--server', server, 'get', '--raw',
                                   '/readyz'], step='API server ready',
                         check=False, unreachable_retry=0)
        return result.exit_status == 0

    _wait(ready, deadline, session.endpoint.name,
          f'the API server serving on {server}')


def _wait(check, deadline: float, host: str, what: str) -> None:
    try:
        poll(check, deadline=deadline, what=what)
    except TimeoutError:
        raise MgmtDriverError(f'[{host}] restart of the control-plane '
                              f'pods: {what} not reached within '
                              f'{deadline:g} s') from None

"""Where the HA cluster's virtual IP is.

keepalived gives the VIP to the master with the highest priority whose
HAProxy answers; a rebuilt master of the highest priority takes it back
once its HAProxy is up (a moment in which connections through the VIP
are reset). Waiting for that before an operation ends keeps the move out
of the next operation.
"""
from __future__ import annotations

import re

from kubernetes_mgmt import redact
from kubernetes_mgmt.remote.retry import poll
from kubernetes_mgmt.remote.ssh import SshSession

LOG = redact.get_logger(__name__)
KEEPALIVED_CONF = '/etc/keepalived/keepalived.conf'
_AUTH_PASS = re.compile(r'^\s*auth_pass\s+(\S+)\s*$', re.MULTILINE)


def configured_vrrp_password(session: SshSession) -> str | None:
    """The VRRP password in the master's keepalived configuration (an
    earlier run's: re-running then changes no configuration), or None
    when it has none. Registered for masking."""
    present = session.run(['test', '-f', KEEPALIVED_CONF],
                          step='read keepalived', sudo=True,
                          check=False).exit_status == 0
    if not present:
        return None
    text = session.read_file(KEEPALIVED_CONF, step='read keepalived',
                             sudo=True).decode('utf-8', 'replace')
    match = _AUTH_PASS.search(text)
    if match is None:
        return None
    redact.register(match.group(1))
    return match.group(1)


def addresses(session: SshSession) -> set[str]:
    """The IPv4 addresses of the VM (``ip -o -4 addr show``, parsed)."""
    out = session.run(['ip', '-o', '-4', 'addr', 'show'],
                      step='list addresses').stdout
    found = set()
    for line in out.splitlines():
        words = line.split()
        if 'inet' in words[:-1]:
            found.add(words[words.index('inet') + 1].split('/')[0])
    return found


def wait_for_vip(session: SshSession, vip: str, *, deadline: float) -> bool:
    """Poll until the VM holds ``vip``; False (logged) if it does not
    within ``deadline`` seconds - another master then serves it."""
    try:
        poll(lambda: vip in addresses(session), deadline=deadline,
             what='VIP taken over')
    except TimeoutError:
        LOG.warning('[%s] did not take the VIP %s within %g s; another '
                    'master keeps serving it', session.endpoint.name, vip,
                    deadline)
        return False
    LOG.info('[%s] holds the VIP %s', session.endpoint.name, vip)
    return True

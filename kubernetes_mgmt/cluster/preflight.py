"""First contact with a VM: log in, check sudo, learn the OS."""
from __future__ import annotations

import shlex
from dataclasses import dataclass

from kubernetes_mgmt import redact
from kubernetes_mgmt.remote.ssh import SshSession

LOG = redact.get_logger(__name__)
SUPPORTED_UBUNTU = ('22.04', '24.04', '26.04')


@dataclass(frozen=True)
class HostFacts:
    os_id: str
    os_version: str
    arch: str

    @property
    def supported(self) -> bool:
        return self.os_id == 'ubuntu' and self.os_version in SUPPORTED_UBUNTU


def preflight(session: SshSession) -> HostFacts:
    step = 'preflight'
    session.run(['true'], step=f'{step}: sudo', sudo=True)
    release = session.run(['cat', '/etc/os-release'], step=step).stdout
    arch = session.run(['uname', '-m'], step=step).stdout.strip()
    fields = _parse_os_release(release)
    facts = HostFacts(fields.get('ID', ''), fields.get('VERSION_ID', ''),
                      arch)
    if not facts.supported:
        LOG.warning('[%s] %s %s is not a supported Ubuntu release (%s)',
                    session.endpoint.name, facts.os_id or '?',
                    facts.os_version or '?', ', '.join(SUPPORTED_UBUNTU))
    return facts


def _parse_os_release(text: str) -> dict[str, str]:
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition('=')
        if sep and key.strip():
            parts = shlex.split(value) if value.strip() else ['']
            fields[key.strip()] = parts[0] if parts else ''
    return fields

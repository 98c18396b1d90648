"""Running ``install_k8s_cluster.sh`` roles on a node.

The script is uploaded once per operation; its configuration goes to its
stdin as KEY=VALUE lines, so tokens and passwords never touch the VM's
disk or a command line.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.remote.ssh import SshSession

REMOTE_SCRIPT = '/var/lib/kubernetes-mgmt/install_k8s_cluster.sh'

ConfigValue = str | int | None


class InstallScript:
    def __init__(self, local_path: Path):
        self.text = local_path.read_text(encoding='utf-8')

    def upload(self, session: SshSession) -> None:
        session.upload(self.text, REMOTE_SCRIPT, step='upload install script',
                       sudo=True, mode=0o755)

    def run(self, session: SshSession, role: str,
            config: Mapping[str, ConfigValue]) -> dict[str, str]:
        """Run ``role``; return the KEY=VALUE lines it printed."""
        result = session.run(
            ['bash', REMOTE_SCRIPT, role, '-'], step=role, sudo=True,
            input=render_config(config),
            timeout=CONF.kubernetes_mgmt.install_timeout)
        return parse_output(result.stdout)


def render_config(config: Mapping[str, ConfigValue]) -> str:
    lines = []
    for key, value in config.items():
        if value is None or value == '':
            continue
        text = str(value)
        if '\n' in text or '\r' in text:
            # Validation keeps line breaks out; never let one split a line.
            raise ValueError(f'{key} must be a single line')
        lines.append(f'{key}={text}')
    return '\n'.join(lines) + '\n'


def parse_output(stdout: str) -> dict[str, str]:
    values = {}
    for line in stdout.splitlines():
        key, sep, value = line.partition('=')
        if sep and key.isupper():
            values[key] = value.strip()
    return values

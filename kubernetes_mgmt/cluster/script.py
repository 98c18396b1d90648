"""Running ``install_k8s_cluster.sh`` roles on a node.

The script is uploaded once per operation (it holds no secret); its
configuration goes to its stdin as KEY=VALUE lines, never into the SSH
command line (``bash SCRIPT ROLE -``), so no secret is in the argv of any
process on the VM or in what the driver logs as the command.

What each secret leaves on the VM:

* Bootstrap token and certificate key: the script hands them to kubeadm
  only in configuration files (``--config``) under
  ``/run/kubernetes-mgmt-secrets`` (root's 0700 directory on tmpfs, files
  0600), removed when the role ends, success or failure; after a failed
  join also kubeadm's ``/etc/kubernetes/bootstrap-kubelet.conf``. A run
  killed outright leaves them until the next run of any role on that VM
  or its next boot. The token then lives only in the cluster, as the
  Secret ``kube-system/bootstrap-token-<id>`` (in etcd's data under
  ``/var/lib/etcd`` on the masters) until it expires (24 h after init,
  2 h after a refresh-join); the certificate key is kept nowhere (the
  ``kubeadm-certs`` Secret it encrypts is deleted after 2 h).
* What kubeadm keeps by design: ``/etc/kubernetes/*.conf`` (client
  certificates) and ``/etc/kubernetes/pki`` (the CA keys, on masters): no
  bootstrap token.
* VRRP password: ``/etc/keepalived/keepalived.conf`` (0600) on masters;
  proxy credentials given in proxy URLs: apt's and the containerd and
  kubelet systemd drop-ins. Those daemons read them there.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from kubernetes_mgmt.cluster import contract
from kubernetes_mgmt.cluster.contract import CONTRACT_VERSION, Value
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.remote.ssh import SshSession

REMOTE_SCRIPT = '/var/lib/kubernetes-mgmt/install_k8s_cluster.sh'

_DECLARATION = re.compile(r'^readonly CONTRACT_VERSION=(\S*)', re.MULTILINE)

ConfigValue = Value


class ContractMismatch(MgmtDriverError):
    """The package's install script speaks another contract."""


def declared_contract(text: str) -> int:
    """The contract version ``text`` (the script) declares; ValueError
    saying what is wrong when there is no single numeric declaration."""
    found = _DECLARATION.findall(text)
    if not found:
        raise ValueError('declares no contract version (no line '
                         '"readonly CONTRACT_VERSION=N"): it predates '
                         'contract versions')
    if len(found) > 1:
        raise ValueError(f'declares CONTRACT_VERSION {len(found)} times')
    value = found[0].split('#', 1)[0]
    if not re.fullmatch(r'[1-9][0-9]{0,5}', value):
        raise ValueError(f'declares CONTRACT_VERSION={value[:20]!r}, not a '
                         'positive integer')
    return int(value)


def contract_problem(text: str, where: str) -> str | None:
    """Why the script ``where`` cannot be used with this driver, or
    None when it speaks this driver's contract."""
    try:
        version = declared_contract(text)
    except ValueError as exc:
        return (f'{where} {exc}; this plugin speaks contract version '
                f'{CONTRACT_VERSION}. {_REMEDY}')
    if version != CONTRACT_VERSION:
        return (f'{where} speaks install-script contract version '
                f'{version}, this plugin speaks version {CONTRACT_VERSION}. '
                f'{_REMEDY}')
    differences = contract.table_problems(text)
    if differences:
        return (f'{where} declares contract version {version} but its key '
                'tables differ from this plugin\'s: '
                f'{"; ".join(differences)}. {_REMEDY}')
    return None


_REMEDY = ('Rebuild the VNF package with this plugin version\'s script '
           '(kubernetes-mgmt package build) and upload it, or install the '
           'plugin version that matches the package.')


def check_contract(local_path: Path, where: str) -> None:
    """ContractMismatch unless the script at ``local_path`` speaks this
    driver's contract; read locally, so nothing remote has happened."""
    try:
        text = local_path.read_text(encoding='utf-8')
    except (OSError, UnicodeDecodeError) as exc:
        raise ContractMismatch(f'cannot read the install script {where}: '
                               f'{exc}') from None
    problem = contract_problem(text, f'the install script {where}')
    if problem:
        raise ContractMismatch(problem)


class InstallScript:
    def __init__(self, local_path: Path):
        self.text = local_path.read_text(encoding='utf-8')

    def upload(self, session: SshSession) -> None:
        session.upload(self.text, REMOTE_SCRIPT, step='upload install script',
                       sudo=True, mode=0o755)

    def run(self, session: SshSession, role: str,
            config: Mapping[str, ConfigValue]) -> dict[str, str]:
        """Run ``role``; return the KEY=VALUE lines it printed. A
        configuration that breaks the contract is refused unsent."""
        contract.check(role, config)
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

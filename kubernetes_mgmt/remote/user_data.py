"""The user data (cloud-init) that gives the VMs the driver's login key.

The VNF's BaseHOT passes it to every server (``user_data``, RAW). It
holds public data only: the login users, the driver's public key, a sudo
rule, and the request that cloud-init print the VM's SSH host keys to the
console, where the driver reads them before its first login
(``console_keys``).
"""
from __future__ import annotations

from collections.abc import Iterable

import yaml

# The name of the BaseHOT parameter that carries it to every server, and
# of the additionalParams entry by which Tacker's v1 user data finds it.
PARAMETER = 'kubernetes_mgmt_user_data'
HEADER = '#cloud-config\n'
# Without a password prompt, sudo works for the key-only login; the VM
# password (if the image has one) stays usable: cloud-init locks it
# unless told otherwise.
SUDO_RULE = 'ALL=(ALL) NOPASSWD:ALL'


def cloud_config(usernames: Iterable[str], authorized_key: str) -> str:
    """``#cloud-config`` text: each of ``usernames`` (created if the
    image lacks it) accepts ``authorized_key`` and may sudo without a
    password; the host keys are printed to the console."""
    users: list = ['default']
    for name in dict.fromkeys(usernames):      # once each, in order
        users.append({'name': name, 'ssh_authorized_keys': [authorized_key],
                      'sudo': SUDO_RULE, 'shell': '/bin/bash',
                      'lock_passwd': False})
    document = {'users': users, 'ssh': {'emit_keys_to_console': True}}
    return HEADER + yaml.safe_dump(document, sort_keys=False)

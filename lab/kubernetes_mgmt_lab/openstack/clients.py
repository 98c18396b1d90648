"""The operator's clients (python-openstackclient, python-tackerclient,
python-heatclient for ``openstack stack``, python-barbicanclient for
``openstack secret``) in their own venv, and the clouds.yaml they read
(owner-only)."""
from __future__ import annotations

import os
import subprocess

import yaml

from kubernetes_mgmt_lab.openstack.layout import CLOUD_NAME, REGION, Root
from kubernetes_mgmt_lab.openstack.venvs import Venv

VENV = Venv('clients', {'python-openstackclient': '10.5.0',
                        'python-tackerclient': '2.6.0',
                        # Released with openstackclient 10.5.0 (2026.2).
                        'python-heatclient': '5.3.0',
                        # "openstack secret": 2026.2, as Tacker's venv.
                        'python-barbicanclient': '7.6.0'})


def write_clouds(root: Root, keystone_url: str, admin_password: str) -> str:
    clouds = {'clouds': {CLOUD_NAME: {
        'auth': {'auth_url': keystone_url, 'username': 'admin',
                 'password': admin_password, 'project_name': 'admin',
                 'user_domain_name': 'Default',
                 'project_domain_name': 'Default'},
        'region_name': REGION, 'identity_api_version': 3,
        'interface': 'public'}}}
    fd = os.open(root.clouds_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                 0o600)
    with os.fdopen(fd, 'w', encoding='utf-8') as f:
        yaml.safe_dump(clouds, f, default_flow_style=False)
    return root.clouds_file


def environment(root: Root) -> dict[str, str]:
    """What an operator exports to use the services with ``openstack``."""
    return {'OS_CLIENT_CONFIG_FILE': root.clouds_file,
            'OS_CLOUD': CLOUD_NAME}


def openstack(root: Root, *args: str, timeout: float = 120.0,
              env: dict[str, str] | None = None
              ) -> subprocess.CompletedProcess:
    """Run the ``openstack`` CLI of the clients venv against the root's
    services (not checked: callers look at the status and stderr);
    ``env`` overrides the operator's environment (another clouds file)."""
    env = {'PATH': os.path.dirname(VENV.bin('openstack')) + ':/usr/bin:/bin',
           'HOME': root.of('clients-home'), 'LANG': 'C.UTF-8',
           **environment(root), **(env or {})}
    return subprocess.run([VENV.bin('openstack'), *args], env=env,
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, check=False)

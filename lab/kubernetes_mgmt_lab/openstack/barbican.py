"""Barbican from PyPI (its API under uwsgi), on SQLite, secrets encrypted
by the simple crypto plugin with a key-encryption key of the root.

Tacker 16 stores a Kubernetes VIM only with Barbican: it encrypts the
VIM's bearer token with a fernet key and keeps that key here."""
from __future__ import annotations

import os

from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.openstack import conffile, processes, uwsgi
from kubernetes_mgmt_lab.openstack.layout import HOST, Root
from kubernetes_mgmt_lab.openstack.venvs import Venv
from kubernetes_mgmt_lab.sysrun import run

NAME = 'barbican'
# 23.0.0: OpenStack 2026.2, the series of Keystone 30 and Tacker 16.
VENV = Venv(NAME, {'barbican': '23.0.0'}, ('PyMySQL', 'uwsgi'))
CONF_FILE = 'barbican.conf'
# Tacker, the CLI and the conductor may call at the same time.
API_PROCESSES = 2


def url(port: int) -> str:
    return f'http://{HOST}:{port}'


def conf_path(root: Root) -> str:
    return root.of(NAME, CONF_FILE)


def configure(root: Root, port: int, keystone_url: str, password: str,
              kek: str) -> None:
    base = root.service_dir(NAME)
    database = f'sqlite:///{os.path.join(base, "barbican.db")}'
    conffile.write(conf_path(root), {
        'DEFAULT': {'host_href': url(port), 'sql_connection': database},
        'database': {'connection': database},
        'secretstore': {'enabled_secretstore_plugins': 'store_crypto'},
        'crypto': {'enabled_crypto_plugins': 'simple_crypto'},
        'simple_crypto_plugin': {'kek': kek},
        'oslo_concurrency': {'lock_path': os.path.join(base, 'lock')},
        'keystone_authtoken': conffile.authtoken(keystone_url, NAME,
                                                 password),
    })
    os.makedirs(os.path.join(base, 'lock'), exist_ok=True)


def _environment(root: Root) -> dict[str, str]:
    """Barbican reads no --config-file in its API: oslo.config finds
    ``barbican.conf`` in ``~/`` (before /etc/barbican/), so HOME is the
    service's directory."""
    return {'HOME': root.service_dir(NAME), 'PATH': '/usr/bin:/bin',
            'LANG': 'C.UTF-8'}


def setup(root: Root) -> None:
    run([VENV.bin('barbican-manage'), '--config-file', conf_path(root),
         'db', 'upgrade'], env=_environment(root), timeout=300)


def start(root: Root, port: int) -> int:
    """The API's paste pipeline (Keystone auth) from the venv under
    uwsgi: Barbican's own WSGI module reads it from /etc/barbican."""
    paste = os.path.join(VENV.path, 'etc', 'barbican',
                         'barbican-api-paste.ini')
    if any(c.isspace() for c in paste):
        raise LabError(f'{paste!r} holds a blank; uwsgi cannot load it')
    log = root.log(NAME)
    # Lazy apps: each worker opens its own database engine after the
    # fork.
    pid = processes.spawn(
        uwsgi.http_service(VENV, HOST, port, API_PROCESSES,
                           '--paste', f'config:{paste}', lazy_apps=True),
        log, env=_environment(root))
    processes.wait_ready('Barbican', pid,
                         lambda: processes.serves(url(port)), log)
    return pid


"""Keystone from PyPI under uwsgi, on SQLite (the engine's concurrency
that needs MariaDB is Heat's, not Keystone's)."""
from __future__ import annotations

import os

from kubernetes_mgmt_lab.openstack import conffile, processes, uwsgi
from kubernetes_mgmt_lab.openstack.layout import HOST, REGION, Root
from kubernetes_mgmt_lab.openstack.venvs import Venv
from kubernetes_mgmt_lab.sysrun import run

NAME = 'keystone'
VENV = Venv(NAME, {'keystone': '30.0.0'}, ('PyMySQL', 'uwsgi'))
# A user of the admin project with the member role only (what a VIM
# registered without admin rights sees).
MEMBER_USER = 'lab-member'


def url(port: int) -> str:
    return f'http://{HOST}:{port}/v3'


def conf_path(root: Root) -> str:
    return root.of(NAME, 'keystone.conf')


def configure(root: Root) -> None:
    base = root.service_dir(NAME)
    conffile.write(conf_path(root), {
        'DEFAULT': {},
        'database': {'connection':
                     f'sqlite:///{os.path.join(base, "keystone.db")}'},
        # bcrypt at its minimum cost, as Keystone's own tests run it: at
        # the default 12 rounds each token issued (every CLI call, every
        # Tacker and Heat session) cost Keystone about 0.2 s of CPU, on
        # two cores shared with everything else.
        'identity': {'password_hash_rounds': '4'},
        'token': {'provider': 'fernet'},
        # Keystone's own cache (role assignments, validated tokens) in
        # each process's memory, as it runs with memcached on a site:
        # without it every token issued and validated (each CLI call,
        # each service's session) read them from the database again,
        # Keystone's largest use of CPU in the lab's tests. Not the
        # catalog: each of the two processes would keep its own, and one
        # that read it before "up" added Tacker's endpoint served tokens
        # without it.
        'cache': {'enabled': 'true', 'backend': 'oslo_cache.dict'},
        'catalog': {'caching': 'false'},
        'fernet_tokens': {'key_repository': os.path.join(base, 'fernet')},
        'credential': {'key_repository': os.path.join(base, 'credential')},
    })


def _manage(root: Root, *args: str, env: dict[str, str] | None = None
            ) -> None:
    run([VENV.bin('keystone-manage'), '--config-file', conf_path(root),
         *args], env=env, timeout=300)


def setup(root: Root, port: int, admin_password: str) -> None:
    """Schema, keys and the admin user, project and identity endpoints;
    each command is idempotent."""
    _manage(root, 'db_sync')
    for kind in ('fernet_setup', 'credential_setup'):
        _manage(root, kind, '--keystone-user', 'root',
                '--keystone-group', 'root')
    # The password through the environment, not the command line.
    env = dict(os.environ, OS_BOOTSTRAP_PASSWORD=admin_password)
    _manage(root, 'bootstrap', '--bootstrap-admin-url', url(port),
            '--bootstrap-public-url', url(port),
            '--bootstrap-internal-url', url(port),
            '--bootstrap-region-id', REGION, env=env)


def start(root: Root, port: int) -> int:
    # Two processes: one reset connections under concurrent clients.
    pid = processes.spawn(
        uwsgi.http_service(VENV, HOST, port, 2,
                           '--module', 'keystone.wsgi.api:application',
                           '--env',
                           f'OS_KEYSTONE_CONFIG_FILES={conf_path(root)}'),
        root.log(NAME))
    processes.wait_ready('Keystone', pid,
                         lambda: processes.answers(url(port)),
                         root.log(NAME))
    return pid

"""Glance from PyPI (glance-api), on SQLite, images in files."""
from __future__ import annotations

import os

from kubernetes_mgmt_lab.openstack import conffile, processes
from kubernetes_mgmt_lab.openstack.layout import HOST, Root
from kubernetes_mgmt_lab.openstack.venvs import Venv
from kubernetes_mgmt_lab.sysrun import run

NAME = 'glance'
VENV = Venv(NAME, {'glance': '31.0.0'}, ('PyMySQL',))


def url(port: int) -> str:
    return f'http://{HOST}:{port}'


def conf_path(root: Root) -> str:
    return root.of(NAME, 'glance-api.conf')


def configure(root: Root, port: int, keystone_url: str,
              password: str) -> None:
    base = root.service_dir(NAME)
    conffile.write(conf_path(root), {
        'DEFAULT': {'bind_host': HOST, 'bind_port': str(port),
                    'workers': '1', 'enabled_backends': 'file:file'},
        'database': {'connection':
                     f'sqlite:///{os.path.join(base, "glance.db")}'},
        'glance_store': {'default_backend': 'file'},
        'file': {'filesystem_store_datadir': os.path.join(base, 'images')},
        'os_glance_staging_store': {
            'filesystem_store_datadir': os.path.join(base, 'staging')},
        'os_glance_tasks_store': {
            'filesystem_store_datadir': os.path.join(base, 'tasks')},
        'paste_deploy': {
            'flavor': 'keystone',
            'config_file': os.path.join(VENV.path, 'etc', 'glance',
                                        'glance-api-paste.ini')},
        'oslo_concurrency': {'lock_path': os.path.join(base, 'lock')},
        'keystone_authtoken': conffile.authtoken(keystone_url, NAME,
                                                 password),
    })


def setup(root: Root) -> None:
    run([VENV.bin('glance-manage'), '--config-file', conf_path(root),
         'db_sync'], timeout=300)


def start(root: Root, port: int) -> int:
    pid = processes.spawn([VENV.bin('glance-api'), '--config-file',
                           conf_path(root)], root.log(NAME))
    processes.wait_ready('Glance', pid,
                         lambda: processes.answers(url(port)),
                         root.log(NAME))
    return pid

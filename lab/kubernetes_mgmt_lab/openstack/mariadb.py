"""MariaDB from Debian: an instance of the services root (own data
directory, socket and port), so that several roots and the machine's own
MariaDB never meet. SQL goes on stdin, never on a command line."""
from __future__ import annotations

import os
import shutil

from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.openstack import processes
from kubernetes_mgmt_lab.openstack.layout import HOST, Root
from kubernetes_mgmt_lab.sysrun import run

NAME = 'mariadb'
USER = 'mysql'


def _dir(root: Root) -> str:
    return root.service_dir(NAME)


def socket_path(root: Root) -> str:
    return root.of(NAME, 'mysqld.sock')


def _datadir(root: Root) -> str:
    return root.of(NAME, 'data')


def _chown_mysql(path: str) -> None:
    shutil.chown(path, USER, USER)


def start(root: Root, port: int) -> int:
    """Initialise the data directory once, start mariadbd, wait until it
    answers SQL; its PID."""
    os.makedirs(_dir(root), exist_ok=True)
    _chown_mysql(_dir(root))
    if not os.path.isdir(os.path.join(_datadir(root), 'mysql')):
        run(['mariadb-install-db', '--no-defaults', f'--user={USER}',
             f'--datadir={_datadir(root)}', '--skip-test-db',
             '--auth-root-authentication-method=socket'], timeout=300)
    pid = processes.spawn(
        ['mariadbd', '--no-defaults', f'--user={USER}',
         f'--datadir={_datadir(root)}', f'--socket={socket_path(root)}',
         f'--bind-address={HOST}', f'--port={port}',
         f'--pid-file={root.of(NAME, "mysqld.pid")}',
         '--skip-name-resolve', '--innodb-buffer-pool-size=64M'],
        root.log(NAME))
    processes.wait_ready('MariaDB', pid, lambda: _answers(root),
                         root.log(NAME))
    return pid


def _answers(root: Root) -> bool:
    return execute(root, 'SELECT 1;', check=False)


def execute(root: Root, sql: str, check: bool = True) -> bool:
    """Run ``sql`` as MariaDB's root through the instance's socket."""
    proc = run(['mariadb', '--no-defaults', f'--socket={socket_path(root)}',
                '--user=root', '--batch'], input=sql, check=False)
    if check and proc.returncode != 0:
        raise LabError(f'MariaDB at {socket_path(root)} refused SQL: '
                       f'{proc.stderr.strip()[-500:]}')
    return proc.returncode == 0


def quote(value: str) -> str:
    """A SQL string literal (our generated values are alphanumeric, but
    quote anyway)."""
    return "'" + value.replace('\\', '\\\\').replace("'", "''") + "'"


def ensure_database(root: Root, name: str, user: str,
                    password: str) -> None:
    """The database ``name`` and ``user`` owning it; idempotent (the
    password is set again, so a re-run converges)."""
    if not name.isidentifier() or not user.isidentifier():
        raise LabError(f'bad database or user name: {name!r}, {user!r}')
    u = f'{quote(user)}@{quote("localhost")}'
    u_any = f'{quote(user)}@{quote("%")}'
    execute(root, '\n'.join((
        f'CREATE DATABASE IF NOT EXISTS `{name}` CHARACTER SET utf8mb4;',
        f'CREATE USER IF NOT EXISTS {u} IDENTIFIED BY {quote(password)};',
        f'ALTER USER {u} IDENTIFIED BY {quote(password)};',
        f'CREATE USER IF NOT EXISTS {u_any} IDENTIFIED BY '
        f'{quote(password)};',
        f'ALTER USER {u_any} IDENTIFIED BY {quote(password)};',
        f'GRANT ALL PRIVILEGES ON `{name}`.* TO {u};',
        f'GRANT ALL PRIVILEGES ON `{name}`.* TO {u_any};',
        'FLUSH PRIVILEGES;', '')))


def url(user: str, password: str, port: int, database: str) -> str:
    return (f'mysql+pymysql://{user}:{password}@{HOST}:{port}/{database}'
            '?charset=utf8mb4')

"""Heat from PyPI: heat-engine and the orchestration API under uwsgi, on
MariaDB (SQLite locks under the engine's concurrency) and RabbitMQ, with
the stack-user domain that ``OS::Heat::ScalingPolicy`` needs."""
from __future__ import annotations

import os
from collections.abc import Callable

from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.openstack import conffile, processes, uwsgi
from kubernetes_mgmt_lab.openstack.layout import HOST, REGION, Root
from kubernetes_mgmt_lab.openstack.venvs import Venv
from kubernetes_mgmt_lab.sysrun import run

NAME = 'heat'
VENV = Venv(NAME, {'openstack-heat': '27.0.1'}, ('PyMySQL', 'uwsgi'))
# The domain of the users Heat creates for its resources (a
# ScalingPolicy's signal user), and its admin.
STACK_DOMAIN = 'heat'
DOMAIN_ADMIN = 'heat_domain_admin'
STACK_OWNER_ROLE = 'heat_stack_owner'
STACK_USER_ROLE = 'heat_stack_user'
# heat-engine's RPC topic: a consumer on it means the engine serves.
ENGINE_TOPIC = 'engine'
# Two uwsgi workers: Tacker, the CLI and the engine itself call the API
# at the same time (the wsgiref server of heat-wsgi-api serves one).
API_PROCESSES = 2


def url(port: int) -> str:
    return f'http://{HOST}:{port}'


def endpoint(port: int) -> str:
    """The catalog's orchestration endpoint (project-scoped, as Heat's
    clients expect)."""
    return f'{url(port)}/v1/%(tenant_id)s'


def conf_path(root: Root) -> str:
    return root.of(NAME, 'heat.conf')


def configure(root: Root, port: int, keystone_url: str, password: str,
              domain_admin_password: str, database_url: str,
              transport_url: str) -> None:
    base = root.service_dir(NAME)
    api = url(port)
    conffile.write(conf_path(root), {
        'DEFAULT': {
            'transport_url': transport_url,
            'region_name_for_services': REGION,
            'num_engine_workers': '2',       # one per core
            'heat_metadata_server_url': api,
            'heat_waitcondition_server_url': f'{api}/v1/waitcondition',
            'stack_user_domain_name': STACK_DOMAIN,
            'stack_domain_admin': DOMAIN_ADMIN,
            'stack_domain_admin_password': domain_admin_password,
            'heat_stack_user_role': STACK_USER_ROLE,
            # A lab resource that fails (no valid host) fails the same way
            # again: one retry, not Heat's five, still goes through
            # Heat's delete-and-create path.
            'action_retry_limit': '1'},
        'database': {'connection': database_url},
        'paste_deploy': {'api_paste_config': os.path.join(
            VENV.path, 'etc', 'heat', 'api-paste.ini')},
        'oslo_concurrency': {'lock_path': os.path.join(base, 'lock')},
        'keystone_authtoken': conffile.authtoken(keystone_url, NAME,
                                                 password),
        # Heat's own user, to whom stack owners delegate by trust.
        'trustee': {'auth_type': 'password', 'auth_url': keystone_url,
                    'username': NAME, 'password': password,
                    'user_domain_name': 'Default'},
        'clients_keystone': {'auth_uri': keystone_url},
        'ec2authtoken': {'auth_uri': keystone_url},
    })
    os.makedirs(os.path.join(base, 'lock'), exist_ok=True)


def setup(root: Root) -> None:
    run([VENV.bin('heat-manage'), '--config-file', conf_path(root),
         'db_sync'], timeout=600)


def start_api(root: Root, port: int) -> int:
    """Heat's WSGI application (the one ``heat-wsgi-api`` serves) under
    uwsgi, which handles concurrent requests."""
    conf = conf_path(root)
    if any(c.isspace() for c in conf):
        # uwsgi splits --pyargv on blanks.
        raise LabError(f'the services root {root.path!r} holds a blank; '
                       'Heat\'s API cannot be given its configuration')
    log = root.log('heat-api')
    # Lazy apps: each worker builds its own application, so no RPC
    # connection is shared across the fork.
    pid = processes.spawn(
        uwsgi.http_service(VENV, HOST, port, API_PROCESSES,
                           '--module', 'heat.wsgi.api:application',
                           '--pyargv', f'--config-file {conf}',
                           lazy_apps=True), log)
    processes.wait_ready('heat-api', pid,
                         lambda: processes.serves(url(port)), log)
    return pid


def start_engine(root: Root, consuming: Callable[[], bool]) -> int:
    """Start heat-engine; ready once ``consuming`` (its RPC topic has a
    consumer) holds."""
    log = root.log('heat-engine')
    pid = processes.spawn([VENV.bin('heat-engine'), '--config-file',
                           conf_path(root)], log)
    processes.wait_ready('heat-engine', pid, consuming, log)
    return pid

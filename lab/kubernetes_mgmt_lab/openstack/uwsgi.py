"""How the lab runs the services that ship as WSGI applications
(Keystone, Heat's API, Barbican): uwsgi's HTTP router in front of worker
processes, as devstack runs them without Apache."""
from __future__ import annotations

from kubernetes_mgmt_lab.openstack.venvs import Venv


def http_service(venv: Venv, host: str, port: int, processes: int,
                 *app: str, lazy_apps: bool = False) -> list[str]:
    """The uwsgi command line serving ``app`` (``--module ...`` or
    ``--paste ...`` and their options) on ``host:port``."""
    # "Connection: close", not keep-alive: a request sent on a kept-alive
    # connection could go unanswered until the router's 60 s timeout
    # (seen as a 59 s token validation inside tacker-server), and a new
    # loopback connection per request costs nothing here.
    # --die-on-term: uwsgi reloads on SIGTERM else.
    return [venv.bin('uwsgi'), '--http', f'{host}:{port}',
            '--add-header', 'Connection: close',
            '--master', '--die-on-term',
            *(['--lazy-apps'] if lazy_apps else []),
            '--processes', str(processes), '--home', venv.path, *app]

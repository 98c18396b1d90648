"""``kubernetes-mgmt lab tacker up|down|status``: OpenStack's control
plane (MariaDB, RabbitMQ, Keystone, Glance, Heat, Tacker with this
plugin) on this machine (needs root)."""
from __future__ import annotations

import argparse
import os
import sys

from kubernetes_mgmt_lab.openstack.layout import DEFAULT_ROOT

PLUGIN_DISTRIBUTION = 'tacker-kubernetes-mgmt'


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        'tacker', help='run Tacker 16, Keystone, Glance, Heat, MariaDB '
                       'and RabbitMQ on this machine, with the plugin')
    sub = parser.add_subparsers(dest='tacker_command', required=True)
    up = sub.add_parser('up', help='install what is missing and start the '
                                   'services')
    _root(up)
    up.add_argument('--plugin', default='.', metavar='DIR',
                    help='checkout of the plugin to install into Tacker '
                         '(default: the current directory)')
    up.set_defaults(func=_up)
    down = sub.add_parser('down', help='stop every service it started')
    _root(down)
    down.set_defaults(func=_down)
    status = sub.add_parser('status', help='show each service')
    _root(status)
    status.set_defaults(func=_status)


def _root(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--root', default=DEFAULT_ROOT,
                        help='directory of the services\' files, logs and '
                             'state (default: %(default)s)')


def _fail(exc: Exception) -> int:
    print(f'kubernetes-mgmt lab tacker: {exc}', file=sys.stderr)
    return 1


def plugin_checkout(path: str) -> str:
    """``path`` if it is a checkout of the plugin, else a LabError."""
    from kubernetes_mgmt_lab.errors import LabError

    setup_cfg = os.path.join(path, 'setup.cfg')
    try:
        with open(setup_cfg, encoding='utf-8') as f:
            text = f.read()
    except OSError as exc:
        raise LabError(f'{os.path.abspath(path)} is not a checkout of the '
                       f'plugin (no setup.cfg); give --plugin') from exc
    if f'name = {PLUGIN_DISTRIBUTION}\n' not in text:
        raise LabError(f'{setup_cfg} is not {PLUGIN_DISTRIBUTION}\'s; give '
                       '--plugin')
    return os.path.abspath(path)


def _up(args) -> int:
    from kubernetes_mgmt_lab.errors import LabError
    from kubernetes_mgmt_lab.openstack import clients, site
    from kubernetes_mgmt_lab.openstack.layout import Root

    try:
        state = site.up(args.root, plugin_checkout(args.plugin))
    except LabError as exc:
        return _fail(exc)
    _print_table(site.status(args.root))
    t = state.timings
    print(f'installed in {t["install_total"]:.1f} s, started in '
          f'{t["start_total"]:.1f} s')
    print(f'logs: {Root(state.root).of("log")}')
    print('for the openstack CLI (credentials are in that file, readable '
          'by root only):')
    for name, value in clients.environment(Root(state.root)).items():
        print(f'  export {name}={value}')
    print(f'  {clients.VENV.bin("openstack")} token issue')
    return 0


def _down(args) -> int:
    from kubernetes_mgmt_lab.errors import LabError
    from kubernetes_mgmt_lab.openstack import site

    try:
        stopped = site.down(args.root)
    except LabError as exc:
        return _fail(exc)
    print('stopped: ' + (', '.join(stopped) if stopped else 'nothing'))
    return 0


def _status(args) -> int:
    from kubernetes_mgmt_lab.errors import LabError
    from kubernetes_mgmt_lab.openstack import site

    try:
        rows = site.status(args.root)
    except LabError as exc:
        return _fail(exc)
    _print_table(rows)
    return 0 if all(r.up for r in rows) else 3


def _print_table(rows) -> None:
    table = [('SERVICE', 'PID', 'URL', 'STATE')] + [
        (r.name, str(r.pid or '-'), r.url, 'up' if r.up else 'down')
        for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    for row in table:
        print('  '.join(c.ljust(w) for c, w in zip(row, widths,
                                                    strict=True)).rstrip())

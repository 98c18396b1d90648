"""``kubernetes-mgmt demo``: the driver end to end in a throw-away lab.

Brings up a lab, runs instantiate_end through the driver's Tacker entry
point for a simple (1 master + 2 workers) and an HA (3 + 2) cluster,
prints the nodes, and tears each lab down again.
"""
from __future__ import annotations

import argparse
import logging
import sys

from kubernetes_mgmt.cluster.kubectl import kubectl
from kubernetes_mgmt.remote.hostkeys import HostKeyStore
from kubernetes_mgmt.remote.ssh import Endpoint, Login, Sessions

DEMO_ROOT = '/var/tmp/kubernetes-mgmt-demo'  # noqa: S108
FLAVOURS = {'simple': (1, 2), 'ha': (3, 2)}


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        'demo', help='instantiate a simple and an HA cluster in a lab')
    parser.add_argument('--flavour', choices=[*FLAVOURS, 'both'],
                        default='both')
    parser.add_argument('--root', default=DEMO_ROOT,
                        help='lab directory (default: %(default)s)')
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format='%(asctime)s %(message)s', datefmt='%H:%M:%S')
    # paramiko narrates every channel; the driver's own lines say enough.
    logging.getLogger('paramiko').setLevel(logging.WARNING)
    flavours = list(FLAVOURS) if args.flavour == 'both' else [args.flavour]
    for flavour in flavours:
        status = _one(flavour, args.root)
        if status:
            return status
    return 0


def _one(flavour: str, root: str) -> int:
    from kubernetes_mgmt.errors import MgmtDriverError
    from kubernetes_mgmt.lab import driving
    from kubernetes_mgmt.lab.errors import LabError
    from kubernetes_mgmt.lab.manager import Lab

    masters, workers = FLAVOURS[flavour]
    print(f'\n=== {flavour}: {masters} master(s) + {workers} worker(s) ===')
    try:
        lab = Lab.up(masters=masters, workers=workers, root=root,
                     name='kdemo')
    except LabError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 1
    try:
        with driving.driver_options(lab):
            request, instance = driving.new_instance(lab)
            driving.instantiate_end(request, instance)
            print(_nodes(lab))
            vim = [c for c in instance.vim_connection_info
                   if c.vim_type == 'kubernetes']
            print(f'registered VIM {vim[0].vim_id} at '
                  f'{vim[0].access_info["auth_url"]}')
    except MgmtDriverError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 1
    finally:
        lab.down()
    return 0


def _nodes(lab) -> str:
    state = lab.state
    master = next(h for h in state.hosts if h.role == 'master')
    endpoint = Endpoint(master.ip, Login(state.username, state.password),
                        label=master.name)
    with Sessions(HostKeyStore()) as sessions:
        return kubectl(sessions.get(endpoint), ['get', 'nodes', '-o', 'wide'],
                       step='list nodes').stdout

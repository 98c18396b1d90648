"""``kubernetes-mgmt demo``: the driver end to end in a throw-away lab.

Brings up a lab, runs instantiate_end through the driver's Tacker entry
point for a simple (1 master + 2 workers) and an HA (3 + 2) cluster,
prints the nodes, and tears each lab down again. The HA cluster then goes
through the rest of its lifecycle, the hooks called as tacker-conductor
calls them around the lab's Heat stack updates: scale out by 2, scale in
by 1, heal a master and a worker, heal the whole VNF (a new stack),
terminate; the nodes are printed after each step.
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
            driving.instantiate_end(request, instance, lab)
            print(_nodes(lab))
            print(_vims(instance))
            if flavour == 'ha':
                _lifecycle(lab, instance)
    except MgmtDriverError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 1
    finally:
        lab.down()
    return 0


def _lifecycle(lab, instance) -> None:
    from kubernetes_mgmt import instance_state
    from kubernetes_mgmt.lab import driving

    def step(title: str) -> None:
        print(f'\n--- {title} ---')

    step('scale out by 2 workers')
    new = driving.scale_out(lab, instance, 2)
    print(f'new VMs: {", ".join(h.name for h in new)}')
    print(_nodes(lab))

    step('scale in by 1 worker')
    gone = driving.scale_in(lab, instance, 1)
    print(f'removed group member(s): {", ".join(gone)}')
    print(_nodes(lab))

    hosts = lab.state.hosts
    master = next(h for h in hosts if h.role == 'master')
    worker = next(h for h in hosts if h.role == 'worker')
    for host in (master, worker):
        step(f'heal the {host.role} VM {host.name} (server '
             f'{host.server_id[:8]})')
        driving.heal(lab, instance, [driving.vnfc_of(instance, host)])
        print(f'{host.name} rebuilt as server '
              f'{lab.state.host(host.name).server_id[:8]}')
        print(_nodes(lab))

    step('heal the whole VNF (a new stack, every VM new)')
    driving.heal_whole(lab, instance)
    print(f'new stack {lab.state.stack_id}')
    print(_nodes(lab))
    print(_vims(instance))

    step('terminate')
    driving.terminate(instance)
    registered = driving.registered_vims(lab)
    stored = instance_state.METADATA_KEY in instance.vnf_metadata
    print(f'VIMs registered: {len(registered) or "none"}; driver state '
          f'in the instance: {"still there" if stored else "gone"}; '
          f'VIM connections: '
          f'{", ".join(c.vim_type for c in instance.vim_connection_info)}')
    print('(Tacker deletes the stack between terminate_start and '
          'terminate_end; "lab down" removes the VMs here.)')


def _vims(instance) -> str:
    vim = [c for c in instance.vim_connection_info
           if c.vim_type == 'kubernetes']
    return '\n'.join(f'registered VIM {v.vim_id} at '
                     f'{v.access_info["auth_url"]}' for v in vim)


def _nodes(lab) -> str:
    state = lab.state
    master = next(h for h in state.hosts if h.role == 'master')
    endpoint = Endpoint(master.ip, Login(state.username, state.password),
                        label=master.name)
    with Sessions(HostKeyStore()) as sessions:
        return kubectl(sessions.get(endpoint), ['get', 'nodes', '-o', 'wide'],
                       step='list nodes').stdout

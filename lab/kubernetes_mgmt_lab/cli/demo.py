"""``kubernetes-mgmt demo``: the driver end to end in a throw-away lab.

Starts the lab's OpenStack services (as "lab tacker up"), makes a VNF
stack of the sample templates in their Heat for a simple (1 master + 2
workers) and an HA (3 + 2) cluster, runs instantiate_end through the
driver's Tacker entry point, prints the nodes, and deletes each stack
again. The HA cluster then goes through the rest of its lifecycle, the
hooks called as tacker-conductor calls them around Heat's stack updates:
scale out by 2, scale in by 1, heal a master and a worker, heal the whole
VNF (a new stack), terminate; the nodes are printed after each step.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys

from kubernetes_mgmt.remote.kubectl import kubectl
from kubernetes_mgmt.remote.ssh import Endpoint, Login, Sessions

DEMO_ROOT = '/var/tmp/kubernetes-mgmt-demo'  # noqa: S108
FLAVOURS = {'simple': (1, 2), 'ha': (3, 2)}


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        'demo', help='the driver end to end on the lab\'s services '
                     '(needs root)',
        description='Start the lab\'s OpenStack services, make a VNF stack '
                    'in their Heat, let the driver build a cluster on its '
                    'VMs through its Tacker hooks, print the nodes and '
                    'delete the stack. The HA cluster then goes through '
                    'scale out, scale in, heal of a master, a worker and '
                    'the whole VNF, and terminate. Needs root; both take '
                    'about 3 minutes on two cores.')
    parser.add_argument('--flavour', choices=[*FLAVOURS, 'both'],
                        default='both',
                        help='simple: 1 master + 2 workers, instantiate '
                             'only; ha: 3 masters behind a VIP + 2 '
                             'workers, its whole lifecycle; both: simple, '
                             'then ha (default: %(default)s)')
    parser.add_argument('--root', default=DEMO_ROOT,
                        help='directory of the services (default: '
                             '%(default)s)')
    parser.add_argument('--tacker', action='store_true',
                        help='instead: start Tacker, Keystone, Glance, '
                             'Heat and Barbican (lab tacker up, in --root) '
                             'and run the openstack CLI session of README '
                             'for the HA flavour, printing each command '
                             'and its answer; the services stop after it')
    parser.add_argument('--plugin', default='.', metavar='DIR',
                        help='checkout of the plugin to install into '
                             'Tacker (default: the current directory)')
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format='%(asctime)s %(message)s', datefmt='%H:%M:%S')
    # paramiko narrates every channel; the driver's own lines say enough.
    logging.getLogger('paramiko').setLevel(logging.WARNING)
    from kubernetes_mgmt_lab.cli.lab_tacker import plugin_checkout
    from kubernetes_mgmt_lab.errors import LabError
    try:
        checkout = plugin_checkout(args.plugin)
    except LabError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 1
    if args.tacker:
        from kubernetes_mgmt_lab.cli.demo_tacker import run_tacker
        return run_tacker(args.root, checkout)
    flavours = list(FLAVOURS) if args.flavour == 'both' else [args.flavour]
    return run_hooks(args.root, checkout, flavours)


def run_hooks(root: str, checkout: str, flavours: list[str]) -> int:
    """The services up, each flavour on a stack of its own, the services
    down again; returns the exit status."""
    from kubernetes_mgmt_lab.errors import LabError
    from kubernetes_mgmt_lab.openstack import site

    print('=== the OpenStack services (Keystone, Heat, the lab cloud ...) '
          '===')
    try:
        site.up(root, checkout)
    except LabError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 1
    try:
        for flavour in flavours:
            status = run_flavour(flavour, root)
            if status:
                return status
        return 0
    finally:
        print('=== stopping the services ===')
        site.down(root)


def run_flavour(flavour: str, services_root: str) -> int:
    """One flavour on a stack of its own in the Heat of
    ``services_root``, always deleted again; returns the exit status."""
    from kubernetes_mgmt.errors import MgmtDriverError
    from kubernetes_mgmt_lab import driving
    from kubernetes_mgmt_lab.errors import LabError
    from kubernetes_mgmt_lab.openstack import vnf_stack
    from kubernetes_mgmt_lab.openstack.vnf_templates import Layout
    from kubernetes_mgmt_lab.testing import free_subnet

    masters, workers = FLAVOURS[flavour]
    print(f'\n=== {flavour}: {masters} master(s) + {workers} worker(s) ===')
    try:
        lab = vnf_stack.up(services_root, Layout(masters, workers),
                           f'kdemo-{flavour}', free_subnet())
    except LabError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 1
    stack = lab.state.stack_name
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
        vnf_stack.down(lab)
        print(f'=== {flavour}: stack {stack} and its network deleted (its '
              'VMs, namespaces and bridge are gone) ===')
    return 0


def _lifecycle(lab, instance) -> None:
    from kubernetes_mgmt.state import instance_state
    from kubernetes_mgmt_lab import driving

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
              f'{lab.host_at(host.ip).server_id[:8]}')
        print(_nodes(lab))

    step('heal the whole VNF (a new stack, every VM new)')
    driving.heal_whole(lab, instance)
    print(f'new stack {lab.state.stack_id}')
    print(_nodes(lab))
    print(_vims(instance))

    step('terminate')
    driving.terminate(instance)
    registered = driving.registered_vims(lab)
    stored = instance_state.holds_state(instance.vnf_metadata)
    print(f'VIMs registered: {len(registered) or "none"}; driver state '
          f'in the instance: {"still there" if stored else "forgotten"}; '
          f'VIM connections: '
          f'{", ".join(c.vim_type for c in instance.vim_connection_info)}')
    print('(Tacker deletes the stack between terminate_start and '
          'terminate_end; here the stack is deleted next.)')


def _vims(instance) -> str:
    vim = [c for c in instance.vim_connection_info
           if c.vim_type == 'kubernetes']
    return '\n'.join(f'registered VIM {v.vim_id} at '
                     f'{v.access_info["auth_url"]}' for v in vim)


def _nodes(lab) -> str:
    """The Kubernetes nodes next to the lab VMs they run on (matched by
    address): VM, its server, node name, status, roles."""
    state = lab.state
    master = next(h for h in state.hosts if h.role == 'master')
    endpoint = Endpoint(master.ip, Login(state.username, state.password),
                        label=master.name)
    with Sessions(lab.known_hosts()) as sessions:
        listing = kubectl(sessions.get(endpoint),
                          ['get', 'nodes', '-o', 'json'],
                          step='list nodes').stdout
    return node_table(state.hosts, json.loads(listing)['items'])


def node_table(hosts, nodes: list[dict]) -> str:
    """Rows of VM, server, IP, node, status, roles; a node on no known VM
    and a VM that is no node are listed too."""
    by_ip = {_internal_ip(n): n for n in nodes}
    rows = [('VM', 'SERVER', 'IP', 'NODE', 'STATUS', 'ROLES')]
    for host in hosts:
        node = by_ip.pop(host.ip, None)
        rows.append((host.name, host.server_id[:8], host.ip,
                     *(_node_cells(node) if node else ('-', '(no node)',
                                                        '-'))))
    for ip, node in by_ip.items():
        rows.append(('-', '-', ip, *_node_cells(node)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return '\n'.join('  '.join(c.ljust(w) for c, w in zip(r, widths,
                                                          strict=True))
                     .rstrip() for r in rows)


def _internal_ip(node: dict) -> str:
    return next((a['address'] for a in node.get('status', {}).get(
        'addresses', []) if a.get('type') == 'InternalIP'), '')


def _node_cells(node: dict) -> tuple[str, str, str]:
    ready = next((c['status'] for c in node.get('status', {}).get(
        'conditions', []) if c.get('type') == 'Ready'), 'Unknown')
    prefix = 'node-role.kubernetes.io/'
    roles = sorted(k[len(prefix):] for k in node['metadata'].get(
        'labels', {}) if k.startswith(prefix))
    return (node['metadata']['name'],
            'Ready' if ready == 'True' else 'NotReady',
            ','.join(roles) or '<none>')

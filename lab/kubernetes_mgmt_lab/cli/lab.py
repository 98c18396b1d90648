"""``kubernetes-mgmt lab up|down|status|exec|plan|tacker``: the lab that
stands in for OpenStack and VMs on this machine (needs root)."""
from __future__ import annotations

import argparse
import os
import sys
import time

from kubernetes_mgmt.operations.plans import OPERATIONS
from kubernetes_mgmt_lab.openstack.layout import DEFAULT_ROOT as SERVICES_ROOT
from kubernetes_mgmt_lab.state import DEFAULT_ROOT


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        'lab', help='bring the lab (VMs as namespaces; with --services a '
                    'VNF stack in the real Heat) up or down')
    sub = parser.add_subparsers(dest='lab_command', required=True)

    up = sub.add_parser('up', help='create the lab and boot its hosts')
    _root_option(up)
    up.add_argument('--masters', type=int, default=1, metavar='N',
                    help='master VMs; more than 1 get HAProxy and keepalived '
                         'behind a VIP (default: %(default)s)')
    up.add_argument('--workers', type=int, default=2, metavar='N',
                    help='worker VMs (default: %(default)s)')
    up.add_argument('--storage', action='store_true',
                    help='add a storage server with a volume')
    up.add_argument('--anti-affinity', action='store_true',
                    help='with --services: the podaffinity flavour, whose '
                         'workers are an anti-affinity server group, each '
                         'on its own compute host of the lab cloud')
    up.add_argument('--name', default='klab',
                    help='lab name, prefix of its namespaces and links '
                         '(default: %(default)s)')
    up.add_argument('--subnet', default='10.10.0.0/24',
                    help='private subnet of the lab (default: '
                         '%(default)s)')
    up.add_argument('--password',
                    help='password of the hosts\' user (default: random, '
                         'kept in the state file)')
    up.add_argument('--install-delay', type=float, default=0.0,
                    metavar='SECONDS',
                    help='how long each emulated package installation '
                         'takes on a VM (default: %(default)g: at once)')
    up.add_argument('--services', metavar='ROOT',
                    help='make the VMs a VNF stack (sample BaseHOT) in the '
                         'real Heat of the services at ROOT ("lab tacker '
                         'up"), on a network of their own; the lab\'s root '
                         'is then below ROOT (printed). Without it: VMs '
                         'only, no stack')
    up.set_defaults(func=_up)

    down = sub.add_parser('down', help='remove everything the lab made')
    _root_option(down)
    down.add_argument('--name',
                      help='lab name, when the state file is gone')
    down.set_defaults(func=_down)

    status = sub.add_parser('status', help='show the hosts')
    _root_option(status)
    status.set_defaults(func=_status)

    run = sub.add_parser(
        'exec', help='run a command as root in a host',
        usage='%(prog)s [--root LAB_ROOT | --services ROOT] HOST -- '
              'COMMAND [ARG ...]',
        description='Run COMMAND as root inside lab VM HOST and print '
                    'its output; the exit status is the command\'s. On a '
                    'master that has joined, KUBECONFIG names '
                    '/etc/kubernetes/admin.conf, so "kubectl get nodes" '
                    'works. Without --root or --services, HOST is looked '
                    f'for in the lab at {DEFAULT_ROOT} and in the labs of '
                    f'the services at {SERVICES_ROOT} (those that exist).',
        epilog='example: kubernetes-mgmt lab exec master-0 -- kubectl get '
               'nodes')
    where = run.add_mutually_exclusive_group()
    where.add_argument('--root', metavar='LAB_ROOT',
                       help='only the lab at LAB_ROOT (as "lab up" printed '
                            'it)')
    where.add_argument('--services', metavar='ROOT',
                       help='the labs of the services at ROOT ("lab tacker '
                            'up --root ROOT"), where the VMs of the VNFs '
                            'Tacker instantiated run')
    run.add_argument('host', metavar='HOST',
                     help='a host name as "lab status" lists it (master-0, '
                          'vm-3 ...), a Kubernetes node name, a Nova server '
                          'id, or master-N / worker-N: the N-th '
                          'control-plane / worker node of a cluster Tacker '
                          'built (VMs vm-0, vm-1 ...), by node name')
    run.add_argument('argv', nargs=argparse.REMAINDER, metavar='COMMAND',
                     help='the command and its arguments, after "--"')
    run.set_defaults(func=_exec)

    plan = sub.add_parser(
        'plan', help="print an operation's steps on the lab (no VM is "
                     'touched)',
        description='Print the graph of steps OPERATION would run on the '
                    "lab's stack (kubernetes-mgmt plan with the lab's "
                    'driver configuration, stack and an instantiate '
                    'request for its VMs). Contacts no VM.')
    _root_option(plan)
    plan.add_argument('operation', choices=OPERATIONS,
                      help='heal: of the hosts named by --node; '
                           'heal-whole: of the whole VNF')
    plan.add_argument('--node', action='append', default=[],
                      metavar='HOST',
                      help='a lab host the operation concerns (as "lab '
                           'status" lists it); repeatable. Default: the '
                           'last worker, and for heal in HA also the last '
                           'master')
    plan.set_defaults(func=_plan)

    from kubernetes_mgmt_lab.cli import lab_tacker
    lab_tacker.register(sub)


def _plan(args) -> int:
    from kubernetes_mgmt.cli.plan_command import print_plan
    from kubernetes_mgmt.cluster.naming import member_node_name
    from kubernetes_mgmt.conf import CONF
    from kubernetes_mgmt.topology.hosts import Role
    from kubernetes_mgmt_lab import driving
    from kubernetes_mgmt_lab.errors import LabError
    from kubernetes_mgmt_lab.manager import Lab

    try:
        lab = Lab.load(args.root)
        hosts = {h.name: h for h in lab.state.hosts}
        if not lab.state.stack_id:
            raise LabError(f'the lab at {lab.root} has no Heat stack to '
                           'plan on; bring one up with "lab up '
                           '--services ROOT"')
        unknown = [n for n in args.node if n not in hosts]
        if unknown:
            raise LabError(f'no host {", ".join(unknown)} in the lab; its '
                           f'hosts are {", ".join(hosts)}')
    except LabError as exc:
        return _fail(exc)
    CONF(['--config-file', lab.driver_conf_path], project='kubernetes_mgmt')
    nodes = [member_node_name(Role(hosts[n].role), hosts[n].member_name)
             for n in args.node]
    return print_plan(args.operation, driving.request_body(lab),
                      lab.state.stack_id, nodes)


def _root_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--root', default=DEFAULT_ROOT,
                        help='lab directory (default: %(default)s)')


def _fail(exc: Exception) -> int:
    print(f'kubernetes-mgmt lab: {exc}', file=sys.stderr)
    return 1


def _up(args) -> int:
    from kubernetes_mgmt_lab.errors import LabError
    from kubernetes_mgmt_lab.manager import Lab

    if args.anti_affinity and not args.services:
        return _fail(LabError('--anti-affinity needs --services: server '
                              'groups are the lab cloud\'s, below Heat'))
    started = time.monotonic()
    try:
        lab = _stack_lab(args) if args.services else Lab.up(
            masters=args.masters, workers=args.workers,
            storage=args.storage, root=args.root, name=args.name,
            subnet=args.subnet, password=args.password,
            install_delay=args.install_delay)
    except LabError as exc:
        return _fail(exc)
    state = lab.state
    print(_host_table(state.hosts, None))
    print(f'lab {state.name} up in {time.monotonic() - started:.1f} s')
    print(f'lab root: {lab.root}')
    print(f'site mirror: {state.mirror_url}')
    print(f'driver config: {state.config_file}')
    if state.stack_id:
        print(f'Heat stack: {state.stack_id} (services {state.site_root})')
    print(f'state (user, password): {lab.state_file}')
    return 0


def _stack_lab(args):
    from kubernetes_mgmt_lab.errors import LabError
    from kubernetes_mgmt_lab.openstack import vnf_stack
    from kubernetes_mgmt_lab.openstack.vnf_templates import Layout

    if args.password or args.install_delay:
        raise LabError('--password and --install-delay are settings of a '
                       'lab without --services (the image of the '
                       "services' networks has them)")
    layout = Layout(args.masters, args.workers, args.storage,
                              args.anti_affinity)
    return vnf_stack.up(args.services, layout, args.name, args.subnet)


def _down(args) -> int:
    from kubernetes_mgmt_lab.errors import LabError
    from kubernetes_mgmt_lab.manager import Lab, teardown
    from kubernetes_mgmt_lab.openstack import vnf_stack
    from kubernetes_mgmt_lab.state import state_path

    try:
        if os.path.exists(state_path(args.root)) and \
                Lab.load(args.root).state.site_root:
            # Its stack and network go; the cloud removes the lab.
            vnf_stack.down(Lab.load(args.root))
            print(f'removed: the stack and network of {args.root}')
            return 0
        removed = teardown(args.root, args.name)
    except LabError as exc:
        return _fail(exc)
    print('removed: ' + (', '.join(removed) if removed else 'nothing'))
    return 0


def _status(args) -> int:
    from kubernetes_mgmt_lab import hosts, mirrorproc
    from kubernetes_mgmt_lab.errors import LabError
    from kubernetes_mgmt_lab.manager import Lab

    try:
        state = Lab.load(args.root).state
    except LabError as exc:
        return _fail(exc)
    up = {h.name: hosts.sshd_up(h) for h in state.hosts}
    print(_host_table(state.hosts, up))
    site = 'up' if mirrorproc.is_mirror(state.mirror_pid) else 'down'
    print(f'site mirror: {state.mirror_url} ({site})')
    print(f'driver config: {state.config_file}')
    if state.stack_id:
        print(f'Heat stack: {state.stack_id} (services {state.site_root})')
    return 0


def _exec(args) -> int:
    from kubernetes_mgmt_lab.cli import vm_names
    from kubernetes_mgmt_lab.errors import LabError
    from kubernetes_mgmt_lab.manager import Lab

    argv = args.argv[1:] if args.argv[:1] == ['--'] else args.argv
    if not argv:
        return _fail(ValueError('no command given'))
    try:
        vm = vm_names.find(args.host,
                           vm_names.lab_roots(args.root, args.services))
        proc = Lab.load(vm.lab_root).run_in_host(vm.host, argv)
    except LabError as exc:
        return _fail(exc)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    return proc.returncode


def _host_table(hosts, sshd: dict[str, bool] | None) -> str:
    rows = [('NAME', 'ROLE', 'IP') + (('SSHD',) if sshd is not None else ())]
    for h in hosts:
        row = (h.name, h.role, h.ip)
        if sshd is not None:
            row += ('up' if sshd[h.name] else 'down',)
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return '\n'.join('  '.join(c.ljust(w)
                               for c, w in zip(r, widths, strict=True))
                     .rstrip() for r in rows)

"""``kubernetes-mgmt plan OPERATION``: print the steps an operation
would run, touching no VM.

The cluster comes from the Heat stack (through the driver's configured
Heat client: ``--config-file``) and the instantiate request; the graphs
printed are the ones the hooks build (``operations.plans``). Exit
status: 0 printed, 1 the request or the nodes named are invalid, 2 the
configuration, request file or stack cannot be read.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from kubernetes_mgmt.cluster.cluster_plan import ClusterPlan
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.engine.graph import render
from kubernetes_mgmt.errors import MgmtDriverError, ValidationError
from kubernetes_mgmt.operations import plans
from kubernetes_mgmt.params.schema import api_of
from kubernetes_mgmt.params.validate import parse_instantiate_request
from kubernetes_mgmt.shim.package_source import package_dir
from kubernetes_mgmt.topology.heat_client import heat_client_for

EXIT_OK, EXIT_INVALID, EXIT_UNREADABLE = 0, 1, 2


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        'plan', help='print the steps an operation would run (no VM is '
                     'touched)',
        description='Print the graph of steps an operation would run on '
                    'the cluster of a Heat stack: each step with the host '
                    'it concerns, what it needs, and when a check of '
                    'facts skips it. Reads the stack through the Heat '
                    'client the configuration selects; contacts no VM. '
                    'Exit status 0: printed, 1: invalid request or '
                    'nodes, 2: unreadable configuration, request or '
                    'stack.')
    parser.add_argument('operation', choices=plans.OPERATIONS,
                        help='the operation (heal: of the nodes named by '
                             '--node; heal-whole: of the whole VNF)')
    parser.add_argument('--config-file', required=True, metavar='FILE',
                        help="the driver's configuration (for a lab: the "
                             'file "lab up" printed)')
    parser.add_argument('--stack-id', required=True, metavar='ID',
                        help="the VNF's Heat stack")
    parser.add_argument('--request', required=True, metavar='FILE',
                        help='the instantiate request (JSON body)')
    parser.add_argument('--node', action='append', default=[],
                        metavar='NAME',
                        help='a node the operation concerns (scale-out: '
                             'as if it were new; scale-in, heal); '
                             'repeatable. Default: the last worker, and '
                             'for heal in HA also the last master')
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        CONF(['--config-file', args.config_file], project='kubernetes_mgmt')
        body = json.loads(Path(args.request).read_text(encoding='utf-8'))
    except (OSError, ValueError) as exc:
        print(f'ERROR: {exc}')
        return EXIT_UNREADABLE
    return print_plan(args.operation, body, args.stack_id, args.node)


def print_plan(operation: str, body: dict, stack_id: str,
               nodes: list[str]) -> int:
    """Print the graphs of ``operation`` on the cluster of ``stack_id``
    built by the instantiate request ``body`` (the configuration is
    loaded); returns the exit status."""
    try:
        plan = _cluster(body, stack_id)
        graphs = plans.graphs(operation, plan, nodes)
    except ValidationError as exc:
        print(f'ERROR: {exc}')
        return EXIT_INVALID
    except MgmtDriverError as exc:
        print(f'ERROR: {exc}')
        return EXIT_UNREADABLE
    print('\n\n'.join(render(g) for g in graphs))
    return EXIT_OK


def _cluster(body: dict, stack_id: str) -> ClusterPlan:
    # The configured seams, with no VNF instance: a lab's or a site's
    # own Heat client and package directory.
    params = parse_instantiate_request(body, api_of(body)[0])
    return plans.cluster_plan(params, stack_id, heat_client_for(None),
                              package_dir(None, None))

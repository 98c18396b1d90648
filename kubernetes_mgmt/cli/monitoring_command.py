"""``kubernetes-mgmt monitoring rules|alertmanager``: print the
Prometheus rule file and the Alertmanager configuration that make
Tacker heal a cluster's nodes on alerts (``monitoring.rules``).

The files under ``samples/monitoring/`` are this output with the
defaults. Exit status: 0 printed, 1 an invalid duration or URL.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any
from urllib.parse import urlsplit

from kubernetes_mgmt.monitoring import rules

EXIT_OK, EXIT_INVALID = 0, 1


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        'monitoring', help='print the Prometheus rules and Alertmanager '
                           'route for automatic heal',
        description='Print what connects a cluster\'s health to Tacker\'s '
                    'automatic heal: the Prometheus alerting rules (a VM '
                    'not answering, a node not Ready) whose alerts carry '
                    'the labels Tacker\'s Prometheus plugin needs, or '
                    'Alertmanager\'s configuration that sends them to '
                    'Tacker.')
    kinds = parser.add_subparsers(dest='kind', required=True)
    rule = kinds.add_parser('rules', help='the Prometheus rule file')
    rule.add_argument('--vm-silent-for', default=rules.Timing.vm_silent_for,
                      metavar='DURATION',
                      help='how long a VM\'s node exporter is not scraped '
                           'before the alert fires (default %(default)s)')
    rule.add_argument('--not-ready-for', default=rules.Timing.not_ready_for,
                      metavar='DURATION',
                      help='how long a node is not Ready before the alert '
                           'fires (default %(default)s)')
    rule.set_defaults(func=_rules)
    route = kinds.add_parser('alertmanager',
                             help="Alertmanager's configuration")
    route.add_argument('--tacker-url', required=True, metavar='URL',
                       help="Tacker's API, such as http://tacker:9890")
    route.set_defaults(func=_alertmanager)


def _rules(args: argparse.Namespace) -> int:
    timing = rules.Timing(args.vm_silent_for, args.not_ready_for)
    bad = timing.problems()
    if bad:
        print('\n'.join(bad), file=sys.stderr)
        return EXIT_INVALID
    sys.stdout.write(rules.dump(rules.rule_groups(timing)))
    return EXIT_OK


def _alertmanager(args: argparse.Namespace) -> int:
    url = urlsplit(args.tacker_url)
    if url.scheme not in ('http', 'https') or not url.hostname or \
            url.query or url.fragment:
        print(f'--tacker-url {args.tacker_url!r}: give Tacker\'s API as '
              'http(s)://host:port', file=sys.stderr)
        return EXIT_INVALID
    sys.stdout.write(rules.dump(rules.alertmanager_config(args.tacker_url)))
    return EXIT_OK

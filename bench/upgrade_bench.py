"""Benchmark: an in-place upgrade of 3 masters + 8 workers, 1.36 to 1.37.

Runs in the lab (root needed), on a VNF stack in the real Heat of the
lab's services. Each run instantiates the cluster at 1.36 without delay,
then sets a fixed emulated time per package installation (default 20 s;
a node's upgrade installs twice: kubeadm, then kubelet and kubectl) and
upgrades it to 1.37 as the v2 change_current_package_start hook does,
with ``max_unavailable`` workers at once (one run per value). Prints, per
run: the upgrade's wall time, the sum of the nodes' own upgrade times
(what a one-node-at-a-time upgrade would take), the critical path of the
steps (masters one at a time, then ceil(8 / max_unavailable) batches)
and the driver's overhead beyond that path.

    sudo python bench/upgrade_bench.py [--install-delay 20]
        [--max-unavailable 1 4] [--workers 8] [--services ROOT]
"""
from __future__ import annotations

import argparse
import functools
import time
from pathlib import Path

from kubernetes_mgmt.operations.upgrade import upgrade
from kubernetes_mgmt.params.upgrade_request import UpgradeOptions
from kubernetes_mgmt.shim import requests
from kubernetes_mgmt.shim.instance_store import TackerInstanceStore
from kubernetes_mgmt_lab import driving
from kubernetes_mgmt_lab.bench_output import run_each, show_progress
from kubernetes_mgmt_lab.emulated import set_install_delay
from kubernetes_mgmt_lab.testing import services, throwaway_lab

REPO = Path(__file__).resolve().parents[1]
OLD, NEW = '1.36', '1.37'
MASTERS = 3
WHAT = 'worker(s) at once: upgrade'


def measure(site: str, workers: int, max_unavailable: int,
            install_delay: float) -> dict:
    with throwaway_lab(MASTERS, workers, site=site) as lab:
        with driving.driver_options(lab, kubernetes_version=OLD,
                                    max_parallel_hosts=max_unavailable + 2):
            request, instance = driving.new_instance(lab)
            driving.instantiate_end(request, instance, lab)
            set_install_delay(lab.state.cluster_dir, install_delay)
            started = time.monotonic()
            progress = upgrade(
                requests.day2_request(instance,
                                      vnf=driving.vnf_dict(instance)),
                TackerInstanceStore(instance), NEW,
                UpgradeOptions(max_unavailable=max_unavailable))
            wall = time.monotonic() - started
    nodes = {step: seconds for step, seconds in
             progress.step_seconds().items() if step.startswith('upgrade ')}
    return {'max_unavailable': max_unavailable, 'wall': wall,
            'nodes': len(nodes), 'node_sum': sum(nodes.values()),
            'slowest': max(nodes.values(), default=0.0),
            'critical': progress.remote_critical_seconds,
            'overhead': wall - progress.remote_critical_seconds}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0] + ' Makes a throw-away '
        'stack per run (root needed); progress goes to stderr, the table '
        'to stdout.')
    parser.add_argument('--install-delay', type=float, default=20.0,
                        metavar='SECONDS',
                        help='emulated time of each package installation '
                             '(default: %(default)g)')
    parser.add_argument('--services', metavar='ROOT',
                        help='use the lab services already running at ROOT '
                             '("kubernetes-mgmt lab tacker up"); default: '
                             'start them for the benchmark and stop them '
                             'after it')
    parser.add_argument('--max-unavailable', type=int, nargs='+',
                        default=[1, 4], metavar='N',
                        help='workers upgraded at once, one run each '
                             '(default: 1 4)')
    parser.add_argument('--workers', type=int, default=8,
                        help='workers beside the 3 masters (default: 8)')
    parser.add_argument('--quiet', action='store_true',
                        help="only the run lines, not the driver's phases")
    args = parser.parse_args()
    show_progress(args.quiet)
    with services(args.services, str(REPO)) as site:
        rows = run_each(args.max_unavailable, args.install_delay, WHAT,
                        functools.partial(measure, site, args.workers))
    print(f'{MASTERS} masters + {args.workers} workers, {OLD} to {NEW}; '
          f'install delay per package installation: '
          f'{args.install_delay:g} s')
    print(f'{"max_unav":>8} {"wall s":>7} {"nodes":>5} {"sum s":>7} '
          f'{"wall/sum":>8} {"critical s":>10} {"overhead s":>10} '
          f'{"slowest s":>9}')
    for r in rows:
        print(f'{r["max_unavailable"]:>8} {r["wall"]:>7.1f} '
              f'{r["nodes"]:>5} {r["node_sum"]:>7.1f} '
              f'{r["wall"] / r["node_sum"]:>8.2f} {r["critical"]:>10.1f} '
              f'{r["overhead"]:>10.2f} {r["slowest"]:>9.1f}')


if __name__ == '__main__':
    main()

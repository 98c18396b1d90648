"""Benchmark: scale-out wall time, 8 new workers against 1.

Runs in the lab (root needed), on VNF stacks in the real Heat of the lab's
services. Each run instantiates 1 master + 1 worker
without delay, then sets a fixed emulated install time per node (default
60 s, like a real package installation) and scales out by N workers the
way Tacker does: the stack update adds the VMs (not timed: that is Heat's
and Nova's work), then scale_end prepares and joins them (timed). Prints,
per N: scale_end wall time, the ratio to N = 1 (target <= 1.3), the
critical path of remote work and the driver's own overhead.

    sudo python bench/scale_bench.py [--install-delay 60] [--workers 1 8]
        [--services ROOT]
"""
from __future__ import annotations

import argparse
import functools
import time
from pathlib import Path

from kubernetes_mgmt.operations.scale import scale_out
from kubernetes_mgmt.shim import requests
from kubernetes_mgmt.shim.instance_store import TackerInstanceStore
from kubernetes_mgmt_lab import driving
from kubernetes_mgmt_lab.bench_output import run_each, show_progress
from kubernetes_mgmt_lab.emulated import set_install_delay
from kubernetes_mgmt_lab.testing import services, throwaway_lab

REPO = Path(__file__).resolve().parents[1]
WHAT = 'new worker(s): scale out'


def measure(site: str, new_workers: int, install_delay: float) -> dict:
    with throwaway_lab(1, 1, site=site) as lab:
        with driving.driver_options(lab,
                                    max_parallel_hosts=new_workers + 1):
            request, instance = driving.new_instance(lab)
            driving.instantiate_end(request, instance, lab)
            set_install_delay(lab.state.cluster_dir, install_delay)
            booted = time.monotonic()
            new = driving.add_workers(lab, instance, new_workers)
            boot = time.monotonic() - booted
            started = time.monotonic()
            # As the v1 scale_end hook would: the shim's request and
            # store, then the operation (whose timing the hook drops).
            progress = scale_out(
                requests.day2_request(instance,
                                      vnf=driving.vnf_dict(instance)),
                TackerInstanceStore(instance),
                requests.scale_request(driving.scale_request(
                    'SCALE_OUT', new_workers)),
                [h.member_stack_id for h in new])
            wall = time.monotonic() - started
    return {'workers': new_workers, 'wall': wall, 'boot': boot,
            'remote': progress.remote_critical_seconds,
            'overhead': wall - progress.remote_critical_seconds}



def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0] + ' Makes a throw-away '
        'stack per run (root needed); progress goes to stderr, the table '
        'to stdout.')
    parser.add_argument('--install-delay', type=float, default=60.0,
                        metavar='SECONDS',
                        help='emulated package installation time per new '
                             'node (default: %(default)g)')
    parser.add_argument('--services', metavar='ROOT',
                        help='use the lab services already running at ROOT '
                             '("kubernetes-mgmt lab tacker up"); default: '
                             'start them for the benchmark and stop them '
                             'after it')
    parser.add_argument('--workers', type=int, nargs='+', default=[1, 8],
                        metavar='N',
                        help='workers to add to a 1 + 1 cluster, one run '
                             'each; the first is the ratio\'s base '
                             '(default: 1 8)')
    parser.add_argument('--quiet', action='store_true',
                        help="only the run lines, not the driver's phases")
    args = parser.parse_args()
    show_progress(args.quiet)
    with services(args.services, str(REPO)) as site:
        rows = run_each(args.workers, args.install_delay, WHAT,
                        functools.partial(measure, site))
    base = rows[0]['wall']
    print(f'install delay per node: {args.install_delay:g} s')
    print(f'{"N":>3} {"scale_end s":>11} {"ratio":>6} {"remote s":>9} '
          f'{"overhead s":>10} {"VM boot s":>9}')
    for r in rows:
        print(f'{r["workers"]:>3} {r["wall"]:>11.1f} '
              f'{r["wall"] / base:>6.2f} {r["remote"]:>9.1f} '
              f'{r["overhead"]:>10.2f} {r["boot"]:>9.1f}')


if __name__ == '__main__':
    main()

"""Benchmark: instantiate wall time against the number of workers.

Runs in the lab (root needed), on VNF stacks in the real Heat of the lab's
services, with a fixed emulated install time per node
(default 60 s, about what package installs and image pulls take on a real
VM; with much shorter delays the 2-core lab machine, which runs every
emulated VM's commands, becomes the bottleneck),
for 1 master + W workers, W in (1, 4, 16). Prints, per W: wall time,
wall(W)/wall(1), SSH connections per host, the critical path of remote
work, the driver's own overhead (wall time minus that critical path), and
the CPU seconds the machine spent on the instantiate, in all and per node
(every node's prepare and join: its commands, the API servers, sshd and
the driver).

    sudo python bench/instantiate_bench.py [--install-delay 60]
        [--services ROOT] [--repeat N]

With ``--repeat N`` the worker counts are run N times in turn (W=1, W=16,
W=1, W=16...: a slow spell of the machine hits both) and each row is the
run with the median wall time, with the fastest and slowest beside it;
the ratio of each round is printed too.
"""
from __future__ import annotations

import argparse
import functools
from pathlib import Path

from kubernetes_mgmt_lab import driving
from kubernetes_mgmt_lab.bench_output import (
    busy_cpu_seconds,
    run_each,
    show_progress,
)
from kubernetes_mgmt_lab.emulated import set_install_delay
from kubernetes_mgmt_lab.emulated.store import read_cpu_log
from kubernetes_mgmt_lab.testing import services, throwaway_lab

REPO = Path(__file__).resolve().parents[1]
WHAT = 'worker(s) + 1 master: instantiate'


def measure(site: str, workers: int, install_delay: float) -> dict:
    with throwaway_lab(1, workers, site=site) as lab:
        set_install_delay(lab.state.cluster_dir, install_delay)
        cpu = busy_cpu_seconds()
        progress, wall = driving.timed_instantiate(lab, workers + 1)
        cpu = busy_cpu_seconds() - cpu
        accepts = [lab.ssh_accepts(h.name) for h in lab.state.hosts]
        by_command = cpu_by_command(lab.state.cluster_dir)
    return {'workers': workers, 'wall': wall,
            'remote': progress.remote_critical_seconds,
            'overhead': wall - progress.remote_critical_seconds,
            'ssh_min': min(accepts), 'ssh_max': max(accepts),
            'cpu': cpu, 'cpu_node': cpu / (workers + 1),
            'by_command': by_command}


def cpu_by_command(cluster_dir: str) -> dict[str, tuple[float, int]]:
    """CPU seconds and runs of each emulated command on the VMs."""
    totals: dict[str, tuple[float, int]] = {}
    for entry in read_cpu_log(cluster_dir):
        seconds, runs = totals.get(entry['command'], (0.0, 0))
        totals[entry['command']] = (seconds + entry['cpu'], runs + 1)
    return totals



def median_run(runs: list[dict]) -> dict:
    """The run with the median wall time (the lower one of an even
    count), with the fastest and slowest wall times of all."""
    ordered = sorted(runs, key=lambda r: r['wall'])
    return {**ordered[(len(ordered) - 1) // 2],
            'fastest': ordered[0]['wall'], 'slowest': ordered[-1]['wall']}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0] + ' Makes a throw-away '
        'stack per run (root needed); progress goes to stderr, the table '
        'to stdout.')
    parser.add_argument('--install-delay', type=float, default=60.0,
                        metavar='SECONDS',
                        help='emulated package installation time per node '
                             '(default: %(default)g)')
    parser.add_argument('--workers', type=int, nargs='+',
                        default=[1, 4, 16], metavar='W',
                        help='worker counts to instantiate with 1 master, '
                             'one run each per round; the first is the '
                             'ratio\'s base (default: 1 4 16)')
    parser.add_argument('--services', metavar='ROOT',
                        help='use the lab services already running at ROOT '
                             '("kubernetes-mgmt lab tacker up"); default: '
                             'start them for the benchmark and stop them '
                             'after it')
    parser.add_argument('--repeat', type=int, default=1, metavar='N',
                        help='rounds of all the worker counts; each row '
                             'is then the median run (default: '
                             '%(default)s)')
    parser.add_argument('--quiet', action='store_true',
                        help="only the run lines, not the driver's phases")
    args = parser.parse_args()
    show_progress(args.quiet)
    if args.repeat < 1:
        parser.error('--repeat must be at least 1')
    with services(args.services, str(REPO)) as site:
        rounds = [run_each(args.workers, args.install_delay,
                           WHAT if args.repeat == 1
                           else f'{WHAT}, round {i} of {args.repeat}',
                           functools.partial(measure, site))
                  for i in range(1, args.repeat + 1)]
    rows = [median_run([r[i] for r in rounds])
            for i in range(len(args.workers))]
    base = rows[0]['wall']
    print(f'install delay per node: {args.install_delay:g} s'
          + (f'; median of {args.repeat} runs' if args.repeat > 1 else ''))
    print(f'{"W":>3} {"wall s":>8} {"ratio":>6} {"remote s":>9} '
          f'{"overhead s":>10} {"ssh/host":>9} {"cpu s":>7} '
          f'{"cpu s/node":>10} {"wall min-max":>13}')
    for r in rows:
        print(f'{r["workers"]:>3} {r["wall"]:>8.1f} {r["wall"] / base:>6.2f} '
              f'{r["remote"]:>9.1f} {r["overhead"]:>10.2f} '
              f'{r["ssh_min"]:>4}-{r["ssh_max"]:<4} {r["cpu"]:>7.1f} '
              f'{r["cpu_node"]:>10.2f} '
              f'{r["fastest"]:>6.1f}-{r["slowest"]:<6.1f}')
    if args.repeat > 1:
        for r in rounds:
            ratios = ' '.join(f'{x["wall"] / r[0]["wall"]:.2f}' for x in r)
            print(f'round ratios (W = {" ".join(map(str, args.workers))}): '
                  f'{ratios}')
    last = rows[-1]
    print(f'the VMs\' commands at W={last["workers"]}, CPU s (runs):')
    ranked = sorted(last['by_command'].items(), key=lambda kv: -kv[1][0])
    for command, (seconds, runs) in ranked[:10]:
        print(f'  {command:<12} {seconds:7.2f} ({runs})')


if __name__ == '__main__':
    main()

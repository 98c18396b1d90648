"""Benchmark: the step schedule with nodes that take different times.

Runs in the lab (root needed), on a VNF stack in the real Heat of the
lab's services: 1 master + W workers (default 16), each
node's emulated package install taking its own time, drawn uniformly
from [--min, --max] seconds (default 30-90, about what package installs
and image pulls take on real VMs) with a fixed seed. Instantiates once
and prints, from the step timings the engine recorded:

- the wall time of the instantiate and of its step graph,
- the graph's critical path (the longest chain of needs, by measured
  step times: no schedule of these steps can be shorter),
- the wall time a phase-barrier schedule (every node's prepare, then
  every node's next step, ...) would have had with the same step times,
- wall / critical path and barrier / wall.

    sudo python bench/schedule_bench.py [--workers 16] [--min 30 --max 90]
        [--services ROOT]
"""
from __future__ import annotations

import argparse
import random
from pathlib import Path

from kubernetes_mgmt_lab import driving
from kubernetes_mgmt_lab.bench_output import show_progress, step
from kubernetes_mgmt_lab.emulated import set_install_delays
from kubernetes_mgmt_lab.testing import services, throwaway_lab

REPO = Path(__file__).resolve().parents[1]


def measure(site: str, workers: int, low: float, high: float,
            seed: int) -> dict:
    draw = random.Random(seed)
    with throwaway_lab(1, workers, site=site) as lab:
        delays = {h.name: draw.uniform(low, high) for h in lab.state.hosts}
        set_install_delays(lab.state.cluster_dir, delays)
        step(f'install times: {min(delays.values()):.1f}-'
             f'{max(delays.values()):.1f} s over {len(delays)} nodes')
        progress, wall = driving.timed_instantiate(lab, workers + 4)
    graph, graph_wall = progress.graphs[-1]
    critical, path = progress.critical_path(graph)
    return {'wall': wall, 'graph_wall': graph_wall, 'critical': critical,
            'path': path, 'barrier': progress.phase_barrier_seconds(graph),
            'steps': len(graph.steps), 'slowest': max(delays.values())}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0] + ' Makes a throw-away '
        'stack (root needed); progress goes to stderr, the figures to '
        'stdout.')
    parser.add_argument('--workers', type=int, default=16, metavar='W',
                        help='workers beside the one master (default: '
                             '%(default)s)')
    parser.add_argument('--min', type=float, default=30.0, dest='low',
                        metavar='SECONDS',
                        help='shortest install time (default: %(default)g)')
    parser.add_argument('--max', type=float, default=90.0, dest='high',
                        metavar='SECONDS',
                        help='longest install time (default: %(default)g)')
    parser.add_argument('--seed', type=int, default=13,
                        help='seed of the install times (default: '
                             '%(default)s)')
    parser.add_argument('--services', metavar='ROOT',
                        help='use the lab services already running at ROOT '
                             '("kubernetes-mgmt lab tacker up"); default: '
                             'start them for the benchmark and stop them '
                             'after it')
    parser.add_argument('--quiet', action='store_true',
                        help="only the run lines, not the driver's steps")
    args = parser.parse_args()
    show_progress(args.quiet)
    step(f'instantiate 1 master + {args.workers} workers, install times '
         f'{args.low:g}-{args.high:g} s')
    with services(args.services, str(REPO)) as site:
        r = measure(site, args.workers, args.low, args.high, args.seed)
    print(f'nodes: 1 master + {args.workers} workers; install times '
          f'{args.low:g}-{args.high:g} s (slowest {r["slowest"]:.1f} s); '
          f'{r["steps"]} steps')
    print(f'instantiate wall      {r["wall"]:8.1f} s')
    print(f'step graph wall       {r["graph_wall"]:8.1f} s')
    print(f'critical path         {r["critical"]:8.1f} s  '
          f'({" -> ".join(r["path"])})')
    print(f'phase-barrier wall    {r["barrier"]:8.1f} s')
    print(f'graph wall / critical {r["graph_wall"] / r["critical"]:8.3f}')
    print(f'barrier / graph wall  {r["barrier"] / r["graph_wall"]:8.3f}')


if __name__ == '__main__':
    main()

"""What the benchmarks show while they run: progress on stderr, so that
their table alone goes to stdout."""
from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable


def step(text: str) -> None:
    """A progress line on stderr (the table goes to stdout)."""
    print(f'{time.strftime("%H:%M:%S")} {text}', file=sys.stderr,
          flush=True)


def show_progress(quiet: bool) -> None:
    """The driver's phase and step lines ("read topology done in 0.3 s",
    "[worker-1@10.0.0.5] join-worker: done in 4.1 s (12/40)") on stderr,
    unless ``quiet``; warnings always."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format='%(asctime)s %(message)s', datefmt='%H:%M:%S')
    if not quiet:
        for name in ('progress', 'runner'):
            logging.getLogger(f'kubernetes_mgmt.engine.{name}'
                              ).setLevel(logging.INFO)


def run_each(counts: list[int], install_delay: float, what: str,
             measure: Callable[[int, float], dict]) -> list[dict]:
    """One measured run per worker count, each announced and timed on
    stderr; the rows (each with its ``wall`` seconds) in order."""
    rows = []
    for number, count in enumerate(counts, 1):
        step(f'run {number} of {len(counts)}: {count} {what} '
             f'(each install {install_delay:g} s)')
        rows.append(measure(count, install_delay))
        step(f'run {number} of {len(counts)}: {rows[-1]["wall"]:.1f} s')
    return rows


def busy_cpu_seconds() -> float:
    """CPU time the whole machine has spent busy (not idle or waiting for
    I/O) since boot: the difference over a run is what the run cost,
    every process of the lab included (its VMs' commands, the API
    servers, sshd, the driver)."""
    with open('/proc/stat', encoding='ascii') as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    idle, iowait = fields[3], fields[4]
    return (sum(fields[:8]) - idle - iowait) / os.sysconf('SC_CLK_TCK')

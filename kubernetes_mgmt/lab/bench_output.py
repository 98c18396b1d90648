"""What the benchmarks show while they run: progress on stderr, so that
their table alone goes to stdout."""
from __future__ import annotations

import logging
import sys
import time


def step(text: str) -> None:
    """A progress line on stderr (the table goes to stdout)."""
    print(f'{time.strftime("%H:%M:%S")} {text}', file=sys.stderr,
          flush=True)


def show_progress(quiet: bool) -> None:
    """The driver's phase lines ("prepare nodes done in 61.2 s") on
    stderr, unless ``quiet``; warnings always."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format='%(asctime)s %(message)s', datefmt='%H:%M:%S')
    if not quiet:
        logging.getLogger('kubernetes_mgmt.orchestration.progress'
                          ).setLevel(logging.INFO)

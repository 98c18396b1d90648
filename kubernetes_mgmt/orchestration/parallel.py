"""Run one step on many hosts at once and report every failure.

Uses stdlib threads, which work both in a plain threaded process and in an
eventlet-monkey-patched one (where they become green threads). Each step
runs in the caller's context, so it masks the secrets of the caller's
operation (``redact.submit``).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from kubernetes_mgmt import redact
from kubernetes_mgmt.errors import MgmtDriverError, RemoteError

LOG = redact.get_logger(__name__)
T = TypeVar('T')
R = TypeVar('R')


class PhaseFailed(MgmtDriverError):
    """A phase failed on one or more hosts; each failure is listed."""

    def __init__(self, phase: str, failures: list[tuple[str, BaseException]]):
        self.phase = phase
        self.failures = failures
        # RemoteError messages already start with "[host] step:".
        lines = '\n'.join(f'  {err}' if isinstance(err, RemoteError)
                          else f'  [{host}] {err}'
                          for host, err in failures)
        super().__init__(
            f'{phase} failed on {len(failures)} host(s):\n{lines}')


def for_each(items: Sequence[T], step: Callable[[T], R], *, phase: str,
             label: Callable[[T], str], parallel: int) -> list[R]:
    """Run ``step`` on every item, at most ``parallel`` at a time.

    Every item is attempted even when some fail; then PhaseFailed lists
    all failures. Results come back in the order of ``items``.
    """
    if not items:
        return []
    started = time.monotonic()
    workers = max(1, min(parallel, len(items)))

    def timed(item: T) -> R:
        begin = time.monotonic()
        result = step(item)
        LOG.info('[%s] %s: done in %.1f s', label(item), phase,
                 time.monotonic() - begin)
        return result

    with ThreadPoolExecutor(max_workers=workers,
                            thread_name_prefix='kmgmt') as pool:
        futures = [redact.submit(pool, timed, item) for item in items]
    results: list[R] = []
    failures: list[tuple[str, BaseException]] = []
    for item, future in zip(items, futures, strict=True):
        error = future.exception()
        if error is None:
            results.append(future.result())
        else:
            failures.append((label(item), error))
    LOG.info('%s: %d host(s) in %.1f s, %d failed', phase, len(items),
             time.monotonic() - started, len(failures))
    if failures:
        raise PhaseFailed(phase, failures)
    return results

"""Polling with exponential backoff and a deadline (never a fixed sleep)."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar('T')


class Backoff:
    """``wait()`` sleeps the next backoff step; False once time is up."""

    def __init__(self, deadline: float, first: float = 0.2,
                 factor: float = 2.0, ceiling: float = 5.0):
        self._end = time.monotonic() + deadline
        self._delay = first
        self._factor = factor
        self._ceiling = ceiling

    @property
    def remaining(self) -> float:
        return max(0.0, self._end - time.monotonic())

    def wait(self) -> bool:
        remaining = self.remaining
        if remaining <= 0:
            return False
        time.sleep(min(self._delay, remaining))
        self._delay = min(self._delay * self._factor, self._ceiling)
        return True


def wait_until(check: Callable[[], object], *, deadline: float,
               first: float = 0.02, ceiling: float = 0.5) -> bool:
    """Call ``check`` with backoff until it is truthy (True) or
    ``deadline`` seconds pass (False, after one last try)."""
    backoff = Backoff(deadline, first=first, ceiling=ceiling)
    while not check():
        if not backoff.wait():
            return bool(check())
    return True


def poll(check: Callable[[], T | None], *, deadline: float,
         what: str, ceiling: float = 5.0) -> T:
    """Call ``check`` until it returns a truthy value or time runs out
    (at most ``ceiling`` seconds between two calls)."""
    backoff = Backoff(deadline, ceiling=ceiling)
    while True:
        value = check()
        if value:
            return value
        if not backoff.wait():
            raise TimeoutError(f'{what}: not reached within {deadline:g} s')

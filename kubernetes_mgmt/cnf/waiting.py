"""Poll until done, with backoff and a deadline (``remote.retry``)."""
from __future__ import annotations

from collections.abc import Callable

from kubernetes_mgmt.cnf.errors import CnfTimeout
from kubernetes_mgmt.cnf.settings import Timings
from kubernetes_mgmt.remote.retry import Backoff


def wait_for(pending: Callable[[], str | None], *, deadline: float,
             what: str, timings: Timings) -> None:
    """Call ``pending`` until it returns None (done). Its last answer
    says what was still missing when the deadline passed."""
    backoff = Backoff(deadline, first=timings.poll_first,
                      ceiling=timings.poll_ceiling)
    while True:
        reason = pending()
        if reason is None:
            return
        if not backoff.wait():
            raise CnfTimeout(f'{what}: not done within {deadline:g} s; '
                             f'still waiting for {reason}')

"""How long the driver waits, and how often it looks."""
from __future__ import annotations

from dataclasses import dataclass

from kubernetes_mgmt.conf import CONF


@dataclass(frozen=True)
class Timings:
    """Deadlines (seconds) of each wait and the backoff between polls.

    The driver takes them from ``[kubernetes_cnf]`` (``from_conf``);
    tests pass short ones.
    """

    ready: float = 600.0        # objects of an instantiation become ready
    scale: float = 600.0        # pods of a scaled workload settle
    heal: float = 600.0         # a replacement pod becomes ready
    delete: float = 300.0       # deleted objects disappear
    poll_first: float = 0.5
    poll_ceiling: float = 5.0
    request: float = 60.0       # one HTTP request to the API server

    @classmethod
    def from_conf(cls) -> Timings:
        """The ``[kubernetes_cnf]`` options."""
        conf = CONF.kubernetes_cnf
        return cls(ready=conf.ready_timeout, scale=conf.scale_timeout,
                   heal=conf.heal_timeout, delete=conf.delete_timeout,
                   request=conf.request_timeout)

"""Progress and timing of an operation, phase by phase.

Besides wall time, each phase records the longest time any one host spent
in remote commands during it; summed over phases this is the critical path
of remote work, and wall time minus it is the driver's own overhead.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from kubernetes_mgmt import redact
from kubernetes_mgmt.remote.ssh import Sessions

LOG = redact.get_logger(__name__)


@dataclass
class PhaseTiming:
    name: str
    seconds: float
    remote_seconds: float


@dataclass
class Progress:
    operation: str
    instance_id: str
    sessions: Sessions | None = None
    phases: list[PhaseTiming] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    @contextlib.contextmanager
    def phase(self, name: str, detail: str = '') -> Iterator[None]:
        LOG.info('%s %s: %s%s', self.operation, self.instance_id, name,
                 f' ({detail})' if detail else '')
        before = self._remote()
        start = time.monotonic()
        try:
            yield
        finally:
            seconds = time.monotonic() - start
            after = self._remote()
            remote = max((after[h] - before.get(h, 0.0) for h in after),
                         default=0.0)
            self.phases.append(PhaseTiming(name, seconds, remote))
            LOG.info('%s %s: %s done in %.1f s', self.operation,
                     self.instance_id, name, seconds)

    @property
    def wall_seconds(self) -> float:
        return time.monotonic() - self.started

    @property
    def remote_critical_seconds(self) -> float:
        return sum(p.remote_seconds for p in self.phases)

    def summary(self) -> str:
        """One line: the wall time and what it went to. Time outside every
        phase (connecting, reading the stack, saving state) is listed
        too, so the parts add up to the total."""
        wall = self.wall_seconds
        parts = [f'{p.name} {p.seconds:.1f} s' for p in self.phases]
        # Phases do not nest, so their sum never exceeds the wall time.
        outside = wall - sum(p.seconds for p in self.phases)
        if outside >= 0.05:
            parts.append(f'outside phases {outside:.1f} s')
        return (f'{self.operation} {self.instance_id} finished in '
                f'{wall:.1f} s ({", ".join(parts)})')

    def _remote(self) -> dict[str, float]:
        return self.sessions.command_seconds() if self.sessions else {}

"""Progress and timing of an operation: its phases (work outside a step
graph, such as reading the topology) and every step the engine ran.

Each phase records its wall time and the longest time any one host spent
in remote commands during it. A graph's run is one phase too, whose
remote time is the graph's critical path by measured step times
(``engine.timing``). Summed over phases this is the time the work
itself needed; wall time minus it is the driver's own overhead.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubernetes_mgmt import redact
from kubernetes_mgmt.engine import timing

if TYPE_CHECKING:
    from kubernetes_mgmt.engine.graph import Graph

LOG = redact.get_logger(__name__)


@dataclass
class PhaseTiming:
    name: str
    seconds: float
    remote_seconds: float


@dataclass
class StepRun:
    """One step as the engine ran it; ``result`` and ``error`` are
    handed to the engine and not kept."""

    id: str
    name: str
    host: str
    outcome: str                    # done, skipped or failed
    started: float = 0.0            # time.monotonic()
    ended: float = 0.0
    result: Any = field(default=None, repr=False, compare=False)
    error: BaseException | None = field(default=None, repr=False,
                                        compare=False)

    @property
    def seconds(self) -> float:
        return max(0.0, self.ended - self.started)


@dataclass
class Progress:
    operation: str
    instance_id: str
    # Seconds each host has spent in remote commands so far (the
    # operation's SSH sessions, once open); the engine knows no SSH.
    remote_clock: Callable[[], dict[str, float]] | None = None
    phases: list[PhaseTiming] = field(default_factory=list)
    steps: list[StepRun] = field(default_factory=list)
    # Each graph run, with its wall seconds.
    graphs: list[tuple[Graph, float]] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    def record(self, run: StepRun) -> None:
        self.steps.append(StepRun(run.id, run.name, run.host, run.outcome,
                                  run.started, run.ended))

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

    def graph_ran(self, graph: Graph, seconds: float) -> None:
        """A graph's run counts as one phase, named with the steps of its
        critical path, whose remote time is that path's length."""
        self.graphs.append((graph, seconds))
        critical, path = self.critical_path(graph)
        by_id = graph.by_id()
        skipped = {s.id for s in self.steps if s.outcome == 'skipped'}
        names = [by_id[i].name for i in path
                 if i in by_id and i not in skipped]
        through = ' -> '.join(_collapse(names)) or 'none'
        self.phases.append(PhaseTiming(
            f'steps (critical path: {through})', seconds, critical))

    def step_seconds(self) -> dict[str, float]:
        return {s.id: s.seconds for s in self.steps}

    def critical_path(self, graph: Graph) -> tuple[float, list[str]]:
        return timing.critical_path(graph, self.step_seconds())

    def phase_barrier_seconds(self, graph: Graph) -> float:
        return timing.phase_barrier_wall(graph, self.step_seconds())

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
        return self.remote_clock() if self.remote_clock else {}


def _collapse(names: list[str]) -> list[str]:
    """Repeated neighbours once, with a count: join-master x2."""
    out: list[str] = []
    counts: list[int] = []
    for name in names:
        if out and out[-1] == name:
            counts[-1] += 1
        else:
            out.append(name)
            counts.append(1)
    return [n if c == 1 else f'{n} x{c}' for n, c in zip(out, counts,
                                                          strict=True)]

"""Figures of a finished graph run: the critical path, and the wall time
a schedule with barriers between phases would have had.

Both are computed from the measured time of each step. The critical path
is the longest chain of needs; no schedule of the same steps can finish
sooner, so wall time over critical path shows what the scheduling cost.
The phase-barrier figure is what running the same steps phase by phase
(every host's "prepare", then every host's next step, ...) would have
taken: each phase as long as its slowest step, serial groups summed.
"""
from __future__ import annotations

from collections.abc import Mapping

from kubernetes_mgmt.engine.graph import Graph


def critical_path(graph: Graph, seconds: Mapping[str, float]
                  ) -> tuple[float, list[str]]:
    """(length, step ids along it); steps without a time count 0."""
    finish: dict[str, float] = {}
    before: dict[str, str | None] = {}
    for step in graph.steps:          # needs are declared before users
        prior = max(step.needs, key=lambda n: finish[n], default=None)
        finish[step.id] = (finish[prior] if prior else 0.0) \
            + seconds.get(step.id, 0.0)
        before[step.id] = prior
    if not finish:
        return 0.0, []
    last: str | None = max(finish, key=finish.__getitem__)
    total, path = finish[last], []
    while last is not None:
        path.append(last)
        last = before[last]
    return total, path[::-1]


def phase_barrier_wall(graph: Graph, seconds: Mapping[str, float]) -> float:
    """Sum over phases (steps of one name, in the order their first step
    becomes possible) of the slowest step, or of all steps of a serial
    group."""
    phases: dict[str, list[float]] = {}
    serial: dict[str, bool] = {}
    for row in graph.levels():
        for step in row:
            phases.setdefault(step.name, []).append(
                seconds.get(step.id, 0.0))
            serial[step.name] = serial.get(step.name, False) or \
                bool(step.serial)
    return sum(sum(times) if serial[name] else max(times)
               for name, times in phases.items())

"""An operation's work declared as data: a graph of steps.

Each step names what it does and the host it concerns, the steps it
needs, an optional check of gathered facts that says whether it must run
at all, and its action. Building a graph touches nothing: checks and
actions are only called by the engine (``engine.runner``), so the same
graph is what ``kubernetes-mgmt plan`` prints. Data moves along the
edges: a step's check and action receive the results of the steps it
needs (``Given``), and what its action returns goes on to the steps that
need it.
"""
from __future__ import annotations

import graphlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# The host of a step that concerns the cluster as a whole (it runs on
# the master chosen to run kubectl, or talks to Tacker).
CLUSTER = 'cluster'


@dataclass(frozen=True)
class Given:
    """What a step's check and action receive: the results of the steps
    it needs (a skipped step's is None) and, for the action, the facts
    its check gathered."""

    results: Mapping[str, Any] = field(default_factory=dict)
    facts: Any = None

    def of(self, step: Step) -> Any:
        """The result of ``step``, which must be one of the needs."""
        if step.id not in self.results:
            raise GraphError(f'step {step.id!r} is not a need of this '
                             'step: its result was not handed over')
        return self.results[step.id]


Check = Callable[[Given], Any]
Action = Callable[[Given], Any]


@dataclass(frozen=True)
class Step:
    """One unit of work on one host.

    ``check`` gathers facts and returns something falsy when the work is
    already done (the step is then skipped, with None as its result),
    else the facts, which the action receives as ``given.facts``; without
    a check the action always runs (it is idempotent by itself).
    ``serial`` names a group whose steps never run at the same time
    (control-plane joins: each grows etcd).
    """

    name: str
    host: str
    action: Action = field(compare=False, repr=False)
    needs: tuple[str, ...] = ()
    check: Check | None = field(default=None, compare=False, repr=False)
    serial: str | None = None
    why: str = ''   # when the check skips it, for the printed plan

    @property
    def id(self) -> str:
        return step_id(self.name, self.host)


def step_id(name: str, host: str) -> str:
    return f'{name} {host}'


class GraphError(ValueError):
    """A graph that cannot run: unknown needs, a cycle, a duplicate."""


@dataclass
class Graph:
    operation: str
    steps: list[Step] = field(default_factory=list)

    def add(self, name: str, host: str, action: Action, *,
            needs: Iterable[Step | None] = (),
            check: Check | None = None,
            serial: str | None = None, why: str = '') -> Step:
        """Append a step; ``needs`` are steps added before (None is
        ignored, so optional steps read naturally)."""
        step = Step(name, host, action,
                    tuple(dict.fromkeys(n.id for n in needs if n)),
                    check, serial, why)
        if step.id in self.ids():
            raise GraphError(f'{self.operation}: step {step.id!r} '
                             'declared twice')
        self.steps.append(step)
        return step

    def ids(self) -> set[str]:
        return {s.id for s in self.steps}

    def by_id(self) -> dict[str, Step]:
        return {s.id: s for s in self.steps}

    def sorter(self) -> graphlib.TopologicalSorter:
        """A prepared topological sorter; raises GraphError on a need
        that names no step, or on a cycle."""
        known = self.ids()
        for step in self.steps:
            missing = [n for n in step.needs if n not in known]
            if missing:
                raise GraphError(f'{self.operation}: step {step.id!r} '
                                 f'needs unknown {", ".join(missing)}')
        sorter = graphlib.TopologicalSorter(
            {s.id: s.needs for s in self.steps})
        try:
            sorter.prepare()
        except graphlib.CycleError as e:
            raise GraphError(f'{self.operation}: steps form a cycle: '
                             f'{" -> ".join(e.args[1])}') from e
        return sorter

    def levels(self) -> list[list[Step]]:
        """Steps by depth (longest chain of needs before them), in
        declaration order within a level: the order plans are printed."""
        self.sorter()   # validates
        by_id, depth = self.by_id(), {}
        for step in self.steps:     # needs are always declared first
            depth[step.id] = 1 + max((depth[n] for n in step.needs),
                                     default=-1)
        rows: list[list[Step]] = [[] for _ in range(max(depth.values(),
                                                        default=-1) + 1)]
        for step_id_, d in depth.items():
            rows[d].append(by_id[step_id_])
        return rows


def render(graph: Graph) -> str:
    """The graph as text: one line per step, grouped by depth, with what
    it needs and when it is skipped."""
    lines = [f'{graph.operation}: {len(graph.steps)} step(s)']
    for depth, row in enumerate(graph.levels(), start=1):
        lines.append(f'  stage {depth}')
        for step in row:
            lines.append(f'    {step.id}{_annotations(step)}')
            for need in step.needs:
                lines.append(f'        needs {need}')
    return '\n'.join(lines)


def _annotations(step: Step) -> str:
    notes: Sequence[str] = [
        *([f'one at a time ({step.serial})'] if step.serial else []),
        *([f'skipped when {step.why}'] if step.why else []),
    ]
    return f'  [{"; ".join(notes)}]' if notes else ''

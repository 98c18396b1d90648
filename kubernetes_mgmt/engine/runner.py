"""Runs a graph of steps (``engine.graph``).

A step starts as soon as every step it needs is done, at most
``parallel`` at a time, never two of one serial group together. Its
check runs first, on the worker thread, and may skip it as done. A
failed step stops only the steps that need it; every other branch goes
on, and then all failures are reported together. Each step's start and
end are recorded on the operation's ``Progress``.

Stdlib threads, as in the rest of the driver: green threads under
eventlet's monkey patching, real ones in a plain process. Steps run in
the caller's masking scope (``redact.submit``).
"""
from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import (
    FIRST_COMPLETED,
    Future,
    ThreadPoolExecutor,
    wait,
)
from typing import Any, TypeVar

from kubernetes_mgmt import redact
from kubernetes_mgmt.engine.graph import Given, Graph, Step
from kubernetes_mgmt.engine.progress import Progress, StepRun
from kubernetes_mgmt.errors import MgmtDriverError, RemoteError

LOG = redact.get_logger(__name__)
T = TypeVar('T')
R = TypeVar('R')


class GraphFailed(MgmtDriverError):
    """Several steps failed; each is listed, then what did not run."""

    def __init__(self, operation: str,
                 failures: list[tuple[Step, BaseException]],
                 not_run: list[Step]):
        self.failures = failures
        self.not_run = not_run
        lines = [f'  {_describe(step, error)}' for step, error in failures]
        if not_run:
            lines.append('  not run: '
                         + ', '.join(s.id for s in not_run))
        super().__init__(f'{operation}: {len(failures)} step(s) failed:\n'
                         + '\n'.join(lines))


def _describe(step: Step, error: BaseException) -> str:
    # RemoteError messages already start with "[host] step:".
    if isinstance(error, RemoteError):
        return str(error)
    return f'[{step.host}] {step.name}: {error}'


Settled = Callable[[Step, bool], None]


def run(graph: Graph, progress: Progress, *, parallel: int,
        on_settled: Settled | None = None) -> dict[str, Any]:
    """Run every step; returns each run step's result by step id.

    ``on_settled(step, succeeded)`` is called after each step ends, one
    at a time (on the engine's own thread): where an operation keeps what
    it learnt so far.

    One failure is raised as it is (its type tells the caller what
    happened: a refusal, a validation problem); several as GraphFailed.
    """
    runner = _Runner(graph, progress, max(1, parallel), on_settled)
    started = time.monotonic()
    try:
        with ThreadPoolExecutor(max_workers=max(1, parallel),
                                thread_name_prefix='kmgmt') as pool:
            runner.drive(pool)
    finally:
        progress.graph_ran(graph, time.monotonic() - started)
    return runner.finish()


class _Runner:
    def __init__(self, graph: Graph, progress: Progress, parallel: int,
                 on_settled: Settled | None = None):
        self.graph = graph
        self.on_settled = on_settled
        self.progress = progress
        self.parallel = parallel
        self.sorter = graph.sorter()
        self.steps = graph.by_id()
        self.queue: deque[Step] = deque()
        self.running: dict[Future, Step] = {}
        self.busy_groups: set[str] = set()
        self.results: dict[str, Any] = {}
        self.failures: list[tuple[Step, BaseException]] = []
        self.finished: set[str] = set()

    def drive(self, pool: ThreadPoolExecutor) -> None:
        LOG.info('%s %s: %d step(s)', self.progress.operation,
                 self.progress.instance_id, len(self.steps))
        while True:
            self.queue.extend(self.steps[i] for i in self.sorter.get_ready())
            self._start_what_may(pool)
            if not self.running:
                return
            done, _ = wait(list(self.running), return_when=FIRST_COMPLETED)
            for future in done:
                self._settle(future)

    def _start_what_may(self, pool: ThreadPoolExecutor) -> None:
        waiting: deque[Step] = deque()
        while self.queue and len(self.running) < self.parallel:
            step = self.queue.popleft()
            if step.serial and step.serial in self.busy_groups:
                waiting.append(step)
                continue
            if step.serial:
                self.busy_groups.add(step.serial)
            given = Given({n: self.results[n] for n in step.needs})
            self.running[redact.submit(pool, self._execute, step,
                                       given)] = step
        self.queue.extendleft(reversed(waiting))

    def _execute(self, step: Step, given: Given) -> StepRun:
        run = StepRun(step.id, step.name, step.host, 'done',
                      time.monotonic())
        try:
            facts = step.check(given) if step.check else None
            if step.check and not facts:
                run.outcome = 'skipped'
            else:
                run.result = step.action(
                    Given(given.results, facts) if step.check else given)
        except Exception as error:      # reported with the others
            run.outcome, run.error = 'failed', error
        run.ended = time.monotonic()
        return run

    def _settle(self, future: Future) -> None:
        step = self.running.pop(future)
        if step.serial:
            self.busy_groups.discard(step.serial)
        run: StepRun = future.result()
        self.progress.record(run)
        if self.on_settled is not None:
            self.on_settled(step, run.error is None)
        if run.error is not None:
            self.failures.append((step, run.error))
            LOG.error('%s', _describe(step, run.error))
            return
        self.results[step.id] = run.result
        self.finished.add(step.id)
        self.sorter.done(step.id)
        LOG.info('[%s] %s: %s in %.1f s (%d/%d)', step.host, step.name,
                 'already done, skipped' if run.outcome == 'skipped'
                 else 'done', run.seconds, len(self.finished),
                 len(self.steps))

    def finish(self) -> dict[str, Any]:
        if not self.failures:
            return self.results
        failed = {s.id for s, _ in self.failures}
        not_run = [s for s in self.graph.steps
                   if s.id not in self.finished and s.id not in failed]
        if not_run:
            LOG.warning('%s %s: not run after the failure: %s',
                        self.progress.operation, self.progress.instance_id,
                        ', '.join(s.id for s in not_run))
        if len(self.failures) == 1:
            raise self.failures[0][1]
        raise GraphFailed(f'{self.progress.operation} '
                          f'{self.progress.instance_id}', self.failures,
                          not_run)


def run_each(name: str, items: Sequence[T], action: Callable[[T], R], *,
             label: Callable[[T], str], parallel: int,
             progress: Progress | None = None) -> list[R]:
    """``action`` on every item as independent steps of one graph (step
    ``name`` on host ``label(item)``); results in the order of
    ``items``."""
    graph = Graph(name)
    ids = [graph.add(name, label(item),
                     lambda _, item=item: action(item)).id
           for item in items]
    results = run(graph, progress or Progress(name, ''), parallel=parallel)
    return [results[i] for i in ids]

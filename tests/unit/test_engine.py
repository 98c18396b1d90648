"""The step engine: needs, bounded parallelism, serial groups, checks,
failures, and the figures of a run (engine.runner, .graph,
.timing)."""
import threading

import pytest

from kubernetes_mgmt.engine import runner as engine
from kubernetes_mgmt.engine import timing
from kubernetes_mgmt.engine.graph import Graph, GraphError, render
from kubernetes_mgmt.engine.progress import Progress
from kubernetes_mgmt.engine.runner import GraphFailed, run_each
from kubernetes_mgmt.errors import CommandFailed


def run(graph, parallel=4):
    progress = Progress(graph.operation, 'vnf-1')
    return engine.run(graph, progress, parallel=parallel), progress


def test_runs_concurrently_up_to_the_bound_and_keeps_order():
    active = 0
    peak = 0
    lock = threading.Lock()
    gate = threading.Barrier(3, timeout=5)

    def step(n):
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        gate.wait()  # only passes if 3 run at the same time
        with lock:
            active -= 1
        return n * 10

    assert run_each('p', [1, 2, 3, 4, 5, 6], step, label=str,
                    parallel=3) == [10, 20, 30, 40, 50, 60]
    assert peak == 3


def test_a_step_starts_when_its_own_needs_are_done_not_a_phase():
    """w1's join needs only w1's prepare: it starts while w2's prepare,
    which nothing of w1 needs, is still running."""
    order = []
    slow_may_end = threading.Event()
    graph = Graph('instantiate')
    fast = graph.add('prepare', 'w1', lambda _: order.append('prep w1'))
    slow = graph.add('prepare', 'w2', lambda _: (
        slow_may_end.wait(5), order.append('prep w2')))

    def join_w1(_):
        order.append('join w1')
        slow_may_end.set()

    graph.add('join', 'w1', join_w1, needs=[fast])
    graph.add('join', 'w2', lambda _: order.append('join w2'), needs=[slow])
    run(graph)
    assert order == ['prep w1', 'join w1', 'prep w2', 'join w2']


def test_steps_of_a_serial_group_never_overlap():
    inside, overlaps = [], []
    lock = threading.Lock()

    def join(_):
        with lock:
            if inside:
                overlaps.append(list(inside))
            inside.append(1)
        threading.Event().wait(0.05)
        with lock:
            inside.pop()

    graph = Graph('heal')
    for name in ('m1', 'm2', 'm3'):
        graph.add('join-master', name, join, serial='etcd')
    _, progress = run(graph, parallel=3)
    assert overlaps == []
    assert [s.outcome for s in progress.steps] == ['done'] * 3


def test_a_check_that_finds_the_work_done_skips_the_action():
    calls = []
    graph = Graph('scale-out')
    graph.add('join-worker', 'w1', lambda g: calls.append(g.facts),
              check=lambda _: None)
    graph.add('join-worker', 'w2', lambda g: calls.append(g.facts),
              check=lambda _: 'half-finished')
    _, progress = run(graph)
    assert calls == ['half-finished']
    assert {s.host: s.outcome for s in progress.steps} == {
        'w1': 'skipped', 'w2': 'done'}


def test_each_step_receives_the_results_of_the_steps_it_needs():
    graph = Graph('scale-out')
    chosen = graph.add('choose master', 'cluster', lambda _: 'm1')
    secrets = graph.add('refresh-join', 'cluster',
                        lambda g: f'token from {g.of(chosen)}',
                        needs=[chosen])
    skipped = graph.add('init', 'm0', lambda _: 'never', check=lambda _: 0)
    joined = graph.add('join-worker', 'w1',
                       lambda g: (g.of(secrets), g.facts, g.of(skipped)),
                       check=lambda g: f'new, via {g.of(chosen)}',
                       needs=[secrets, chosen, skipped])
    results, _ = run(graph)
    assert results[joined.id] == ('token from m1', 'new, via m1', None)


def test_a_result_is_only_handed_to_the_steps_that_need_it():
    graph = Graph('scale-out')
    chosen = graph.add('choose master', 'cluster', lambda _: 'm1')
    graph.add('join-worker', 'w1', lambda g: g.of(chosen))
    with pytest.raises(GraphError, match="'choose master cluster' is not "
                                         'a need of this step'):
        run(graph)


def test_one_failure_is_raised_as_it_is_and_stops_only_its_dependents():
    ran = []
    graph = Graph('instantiate')
    bad = graph.add('prepare', 'w1', lambda _: (_ for _ in ()).throw(
        CommandFailed('w1', 'prepare', 1, '', 'apt failed')))
    graph.add('join', 'w1', lambda _: ran.append('join w1'), needs=[bad])
    ok = graph.add('prepare', 'w2', lambda _: ran.append('prep w2'))
    graph.add('join', 'w2', lambda _: ran.append('join w2'), needs=[ok])
    with pytest.raises(CommandFailed, match='apt failed'):
        run(graph)
    assert ran == ['prep w2', 'join w2']


def test_every_failure_is_reported_with_what_did_not_run():
    def fail(message):
        def action(_):
            raise ValueError(message)
        return action

    graph = Graph('join workers')
    a = graph.add('join', 'w1', lambda _: (_ for _ in ()).throw(
        CommandFailed('w1', 'join', 1, '', 'token expired')))
    graph.add('join', 'w3', fail('bad thing'))
    graph.add('label', 'w1', lambda _: None, needs=[a])
    with pytest.raises(GraphFailed) as info:
        run(graph, parallel=2)
    message = str(info.value)
    assert 'join workers vnf-1: 2 step(s) failed' in message
    assert '[w1] join: exited with status 1: token expired' in message
    assert '[w3] join: bad thing' in message
    assert 'not run: label w1' in message


def test_a_graph_that_cannot_run_is_refused_before_any_step():
    called = []
    graph = Graph('broken')
    graph.add('a', 'h', lambda _: called.append('a'))
    with pytest.raises(GraphError, match="declared twice"):
        graph.add('a', 'h', lambda _: called.append('a'))
    graph.steps[0] = graph.steps[0].__class__('a', 'h', lambda _: None,
                                              needs=('b h',))
    graph.add('b', 'h', lambda _: called.append('b'),
              needs=[graph.steps[0]])
    with pytest.raises(GraphError, match='cycle'):
        run(graph)
    assert called == []


def test_the_printed_plan_calls_no_check_and_no_action():
    def touch():
        raise AssertionError('a plan must not gather facts')

    graph = Graph('instantiate')
    prep = graph.add('prepare', 'w1@10.0.0.5', lambda _: touch())
    graph.add('join-worker', 'w1@10.0.0.5', lambda _: touch(),
              check=lambda _: touch(), needs=[prep],
              why='the node has joined')
    text = render(graph)
    assert 'instantiate: 2 step(s)' in text
    assert 'join-worker w1@10.0.0.5  [skipped when the node has joined]' \
        in text
    assert 'needs prepare w1@10.0.0.5' in text


def test_critical_path_and_phase_barrier_figures():
    graph = Graph('instantiate')
    p1 = graph.add('prepare', 'w1', lambda _: None)
    p2 = graph.add('prepare', 'w2', lambda _: None)
    graph.add('join', 'w1', lambda _: None, needs=[p1])
    graph.add('join', 'w2', lambda _: None, needs=[p2])
    seconds = {'prepare w1': 10, 'prepare w2': 60, 'join w1': 50,
               'join w2': 5}
    length, path = timing.critical_path(graph, seconds)
    assert (length, path) == (65, ['prepare w2', 'join w2'])
    # Phase by phase: the slowest prepare, then the slowest join.
    assert timing.phase_barrier_wall(graph, seconds) == 110


def test_the_summary_names_the_critical_path_of_steps_that_ran():
    slow = threading.Event()
    graph = Graph('instantiate')
    quick = graph.add('prepare', 'w1', lambda _: None)
    long = graph.add('prepare', 'w2', lambda _: slow.wait(0.3))
    graph.add('refresh-join', 'm0', lambda _: None, check=lambda _: None,
              needs=[long])
    graph.add('join-worker', 'w1', lambda _: None, needs=[quick])
    graph.add('join-worker', 'w2', lambda _: slow.wait(0.1), needs=[long])
    _, progress = run(graph)
    summary = progress.summary()
    assert 'steps (critical path: prepare -> join-worker) ' in summary
    assert 'refresh-join' not in summary

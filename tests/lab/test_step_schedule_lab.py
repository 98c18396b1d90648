"""The step graph's schedule, seen by the emulated cluster: a node moves
on as soon as what it needs is done.

Nodes take different times to prepare (the emulated apt-get install of
each host takes its own time). One worker's install is held until the
other workers have started their joins (or a deadline passes): a driver
that waited for every node to be prepared would never get there. The
order of events comes from the emulation's own record of every mutating
command (start and end times), not from timing the driver.
"""
import itertools
import threading

import pytest

from kubernetes_mgmt.remote.retry import poll
from kubernetes_mgmt_lab import driving
from kubernetes_mgmt_lab.emulated import ClusterView, set_install_delays
from kubernetes_mgmt_lab.testing import throwaway_lab, unavailable_reason

pytestmark = pytest.mark.lab

# Seconds each node's package install takes: masters 4 s, the early
# workers 1 s and 3 s, the last one until the test lets it finish.
MASTER_PREPARE = 4.0
EARLY_PREPARE = (1.0, 3.0)
HELD = 600.0
# How long the held install waits for the early joins at most.
EARLY_JOIN_DEADLINE = 240.0


def _instantiate_with_uneven_preparation(site, masters: int):
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with throwaway_lab(masters, len(EARLY_PREPARE) + 1, site=site) as lab:
        view = ClusterView(lab.state.cluster_dir)
        workers = [h for h in lab.state.hosts if h.role == 'worker']
        delays = {h.name: MASTER_PREPARE for h in lab.state.hosts
                  if h.role == 'master'}
        delays.update({h.name: s for h, s in zip(workers, EARLY_PREPARE,
                                                 strict=False)})
        delays[workers[-1].name] = HELD
        set_install_delays(lab.state.cluster_dir, delays)
        with driving.driver_options(lab, max_parallel_hosts=8):
            request, instance = driving.new_instance(lab)
            failure = []
            driver = threading.Thread(target=_instantiate, args=(
                request, instance, lab, failure))
            driver.start()
            try:
                poll(lambda: all(view.events(h.name, 'kubeadm join')
                                 for h in workers[:-1]),
                     deadline=EARLY_JOIN_DEADLINE, what='early joins')
            except TimeoutError:
                pass    # the tests below say what happened instead
            finally:    # the held install ends either way
                set_install_delays(lab.state.cluster_dir,
                                   {**delays, workers[-1].name: 0})
                driver.join()
        assert not failure, failure
        yield lab, workers, view


def _instantiate(request, instance, lab, failure: list) -> None:
    try:
        driving.instantiate_end(request, instance, lab)
    except Exception as exc:        # reported by the fixture
        failure.append(exc)


@pytest.fixture(scope='module', params=[1, 3], ids=['simple', 'ha'])
def uneven(request, site):
    yield from _instantiate_with_uneven_preparation(site, request.param)


def _first(view, host, command):
    found = view.events(host, command)
    assert found, f'no {command!r} event on {host}'
    return found[0]


def _prepared(view, host) -> float:
    """When the host's last package install ended."""
    return max(e['end'] for e in view.events(host, 'apt-get install'))


def test_early_workers_join_before_the_slowest_node_is_prepared(uneven):
    lab, workers, view = uneven
    slowest = _prepared(view, workers[-1].name)
    for early in workers[:-1]:
        joined = _first(view, early.name, 'kubeadm join')
        assert _prepared(view, early.name) <= joined['time'] < slowest, (
            f'{early.name} joined at {joined["time"]:.2f}, the slowest '
            f'node finished preparing at {slowest:.2f}')
    # The slow worker still joined, after its own preparation, and every
    # node is Ready.
    assert _first(view, workers[-1].name, 'kubeadm join')['time'] >= slowest
    ready = {n['metadata']['name'] for n in view.nodes()
             if any(c['type'] == 'Ready' and c['status'] == 'True'
                    for c in n['status']['conditions'])}
    assert len(ready) == len(lab.state.hosts)


def test_control_plane_joins_run_one_at_a_time_in_order(uneven):
    lab, workers, view = uneven
    masters = [h.name for h in lab.state.hosts if h.role == 'master']
    joins = [_first(view, m, 'kubeadm join') for m in masters[1:]]
    assert [j['host'] for j in sorted(joins, key=lambda j: j['time'])] \
        == masters[1:]
    for before, after in itertools.pairwise(joins):
        assert before['end'] <= after['time']
    # Workers join once the control plane is complete.
    complete = max((j['end'] for j in joins),
                   default=_first(view, masters[0], 'kubeadm init')['end'])
    for worker in workers:
        assert _first(view, worker.name, 'kubeadm join')['time'] >= complete

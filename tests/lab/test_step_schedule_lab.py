"""The step graph's schedule, seen by the emulated cluster: a node moves
on as soon as what it needs is done.

Nodes take different times to prepare (the emulated apt-get install of
each host sleeps its own time). The order of events comes from the
emulation's own record of every mutating command (start and end times),
not from timing the driver.
"""
import itertools

import pytest

from kubernetes_mgmt.lab import driving
from kubernetes_mgmt.lab.emulated import ClusterView, set_install_delays
from kubernetes_mgmt.lab.testing import throwaway_lab, unavailable_reason

pytestmark = pytest.mark.lab

# Seconds each node's package install takes: masters 4 s, workers from
# 1 s to 12 s (a fifth of "masters 20 s, workers 5-60 s").
MASTER_PREPARE = 4.0
WORKER_PREPARE = (1.0, 3.0, 12.0)


def _instantiate_with_uneven_preparation(masters: int):
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with throwaway_lab(masters, len(WORKER_PREPARE)) as lab:
        delays = {h.name: MASTER_PREPARE for h in lab.state.hosts
                  if h.role == 'master'}
        workers = [h for h in lab.state.hosts if h.role == 'worker']
        delays.update({h.name: s for h, s in zip(workers, WORKER_PREPARE,
                                                 strict=True)})
        set_install_delays(lab.state.cluster_dir, delays)
        with driving.driver_options(lab, max_parallel_hosts=8):
            request, instance = driving.new_instance(lab)
            driving.instantiate_end(request, instance, lab)
        yield lab, workers, ClusterView(lab.state.cluster_dir)


@pytest.fixture(scope='module', params=[1, 3], ids=['simple', 'ha'])
def uneven(request):
    yield from _instantiate_with_uneven_preparation(request.param)


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
    # The slow worker still joined, after its own preparation.
    assert _first(view, workers[-1].name, 'kubeadm join')['time'] >= slowest
    ready = {n['metadata']['name'] for n in view.nodes()
             if any(c['type'] == 'Ready' and c['status'] == 'True'
                    for c in n['status']['conditions'])}
    assert len(ready) == len(lab.state.hosts)


def test_control_plane_joins_run_one_at_a_time_in_order(uneven):
    lab, _, view = uneven
    masters = [h.name for h in lab.state.hosts if h.role == 'master']
    joins = [_first(view, m, 'kubeadm join') for m in masters[1:]]
    assert [j['host'] for j in sorted(joins, key=lambda j: j['time'])] \
        == masters[1:]
    for before, after in itertools.pairwise(joins):
        assert before['end'] <= after['time']

"""The order of an in-place upgrade (cluster/upgrade_order.py): control
plane first, one master at a time, then workers never more than
max_unavailable at once."""
from __future__ import annotations

import pytest

from kubernetes_mgmt.cluster.upgrade_order import APPLY, NODE, upgrade_order

MASTERS = ('m0', 'm1', 'm2')
WORKERS = ('w0', 'w1', 'w2', 'w3', 'w4')


def test_masters_go_first_one_at_a_time_and_apply_only_on_the_first():
    order = upgrade_order(MASTERS, WORKERS, 2)
    assert [(b.nodes, b.command) for b in order[:3]] == [
        (('m0',), APPLY), (('m1',), NODE), (('m2',), NODE)]


@pytest.mark.parametrize('at_once', [1, 2, 3, 5, 8])
def test_workers_never_exceed_max_unavailable_and_each_is_upgraded_once(
        at_once):
    batches = upgrade_order(MASTERS, WORKERS, at_once)[len(MASTERS):]
    assert all(len(b.nodes) <= at_once and b.command == NODE
               for b in batches)
    assert [n for b in batches for n in b.nodes] == list(WORKERS)
    assert len(batches) == -(-len(WORKERS) // at_once)


def test_a_cluster_without_workers_upgrades_its_masters():
    assert [b.nodes for b in upgrade_order(('m0',), (), 1)] == [('m0',)]


def test_nonsense_is_refused():
    with pytest.raises(ValueError, match='needs a master'):
        upgrade_order((), WORKERS, 1)
    with pytest.raises(ValueError, match='at least 1'):
        upgrade_order(MASTERS, WORKERS, 0)

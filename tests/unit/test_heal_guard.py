"""The heal guards: what an automatic heal may and may not rebuild."""
from __future__ import annotations

import pytest

from kubernetes_mgmt.cluster.heal_guard import (
    HealRefused,
    Limits,
    NodeHealth,
    cap_of,
    check,
)

LIMITS = Limits(max_unhealthy='40%', repeat_limit=3, repeat_window=3600.0)
NOW = 100_000.0


def cluster(masters=3, workers=5, sick=(), dead_vms=()):
    health = {}
    for role, count in (('master', masters), ('worker', workers)):
        for i in range(count):
            name = f'{role}-{i}'
            # A dead VM's node is NotReady too (its kubelet is gone).
            health[name] = NodeHealth(
                name, role, ready=name not in {*sick, *dead_vms},
                answering=name not in dead_vms)
    return health


def refusal(targets, health, limits=LIMITS, heals=None) -> str:
    with pytest.raises(HealRefused) as refused:
        check(targets, health, limits, heals or {}, NOW)
    return str(refused.value)


def test_a_dead_worker_is_healed():
    check(['worker-1'], cluster(dead_vms={'worker-1'}), LIMITS, {}, NOW)


def test_a_not_ready_worker_with_its_vm_up_is_healed():
    check(['worker-1'], cluster(sick={'worker-1'}), LIMITS, {}, NOW)


def test_one_dead_master_of_three_is_healed():
    check(['master-1'], cluster(dead_vms={'master-1'}), LIMITS, {}, NOW)


def test_two_masters_in_one_heal_are_refused():
    message = refusal(['master-1', 'master-2'],
                      cluster(dead_vms={'master-1', 'master-2'}))
    assert 'master-1, master-2' in message
    assert 'one at a time' in message


def test_a_master_is_not_healed_while_another_is_down():
    health = cluster(dead_vms={'master-1', 'master-2'})
    message = refusal(['master-1'], health)
    assert 'quorum' in message
    assert 'only 1 of the other 2 members' in message
    assert 'master-2 (not Ready, VM not answering)' in message
    # Not even when the operator forces it.
    with pytest.raises(HealRefused):
        check(['master-1'], health, Limits('40%', 3, 3600.0, force=True),
              {}, NOW)


def test_the_other_master_is_healed_once_one_is_back():
    check(['master-2'], cluster(dead_vms={'master-2'}), LIMITS, {}, NOW)


def test_masters_that_are_no_etcd_members_heal_together():
    # After a restore from a snapshot the survivor is the only member:
    # rebuilding the other two removes no member.
    health = cluster(dead_vms={'master-1', 'master-2'})
    check(['master-1', 'master-2'], health, LIMITS, {}, NOW,
          members=['master-0'])


def test_a_member_without_a_node_counts_as_unhealthy():
    health = cluster(dead_vms={'master-1'})
    message = refusal_with(['master-1'], health,
                           ['master-0', 'master-1', 'master-9'])
    assert 'master-9 (no node)' in message


def refusal_with(targets, health, members) -> str:
    with pytest.raises(HealRefused) as refused:
        check(targets, health, LIMITS, {}, NOW, members=members)
    return str(refused.value)


def test_five_masters_keep_quorum_with_two_down():
    health = cluster(masters=5, dead_vms={'master-1', 'master-2'})
    check(['master-1'], health, LIMITS, {}, NOW)


def test_more_unhealthy_workers_than_the_cap_are_refused_naming_them():
    # 40 % of 5 workers is 2: a third unhealthy worker is one too many.
    health = cluster(dead_vms={'worker-0', 'worker-1', 'worker-3'})
    message = refusal(['worker-0'], health)
    assert '3 of 5 workers are unhealthy' in message
    assert '40%: 2' in message
    for name in ('worker-0', 'worker-1', 'worker-3'):
        assert name in message
    check(['worker-0'], health, Limits('40%', 3, 3600.0, force=True), {},
          NOW)


def test_the_cap_holds_at_its_limit():
    check(['worker-0'], cluster(dead_vms={'worker-0', 'worker-1'}), LIMITS,
          {}, NOW)


def test_a_node_that_recovered_is_not_rebuilt():
    message = refusal(['worker-2'], cluster())
    assert 'worker-2 recovered by itself' in message
    assert 'nothing was rebuilt' in message
    check(['worker-2'], cluster(), Limits('40%', 3, 3600.0, force=True), {},
          NOW)


def test_a_node_healed_too_often_is_left_alone():
    heals = {'worker-1': [NOW - 3000, NOW - 2000, NOW - 100]}
    message = refusal(['worker-1'], cluster(dead_vms={'worker-1'}),
                      heals=heals)
    assert 'worker-1 was healed 3 times in the last 60 minutes' in message


def test_heals_outside_the_window_do_not_count():
    heals = {'worker-1': [NOW - 9000, NOW - 2000, NOW - 100]}
    check(['worker-1'], cluster(dead_vms={'worker-1'}), LIMITS, heals, NOW)


@pytest.mark.parametrize('given, workers, cap', [
    ('40%', 3, 1), ('40%', 5, 2), ('40%', 2, 1), ('40%', 1, 1),
    ('100%', 4, 4), ('0%', 4, 0), ('2', 10, 2), (' 0 ', 3, 0)])
def test_cap_of(given, workers, cap):
    assert cap_of(given, workers) == cap


@pytest.mark.parametrize('given', ['40 %', '-1', 'forty', '4.5%', ''])
def test_cap_of_refuses_what_is_neither_count_nor_percentage(given):
    with pytest.raises(ValueError, match='max_unhealthy'):
        cap_of(given, 3)

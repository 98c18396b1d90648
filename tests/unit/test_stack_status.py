"""A day-2 *_end hook reads the stack only once Heat is done with it, and
refuses a stack Heat failed to update (Tacker 16's heal goes on to
heal_end even then)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from kubernetes_mgmt.errors import TopologyError
from kubernetes_mgmt.topology.stack_status import require_settled


class Stacks:
    """Heat's stacks API as heatclient shows it: the statuses the stack
    goes through, one per read."""

    def __init__(self, *statuses: tuple[str, str]):
        self.statuses = list(statuses)
        self.reads = 0

    def get(self, stack_id: str):
        status, reason = self.statuses[min(self.reads,
                                           len(self.statuses) - 1)]
        self.reads += 1
        return SimpleNamespace(id=stack_id, stack_status=status,
                               stack_status_reason=reason)


def heat(*statuses):
    return SimpleNamespace(stacks=Stacks(*statuses))


def test_waits_while_heat_updates_the_stack():
    client = heat(('UPDATE_IN_PROGRESS', ''), ('UPDATE_IN_PROGRESS', ''),
                  ('UPDATE_COMPLETE', 'Stack UPDATE completed'))
    assert require_settled(client, 's-1', deadline=30) == 'UPDATE_COMPLETE'
    assert client.stacks.reads == 3


def test_a_failed_update_is_refused_with_heats_reason():
    client = heat(('UPDATE_FAILED', 'InterfaceDetachFailed: port p-1'))
    with pytest.raises(TopologyError) as failed:
        require_settled(client, 's-1', deadline=30)
    assert str(failed.value).startswith(
        'stack s-1 is UPDATE_FAILED: InterfaceDetachFailed: port p-1. Heat '
        'did not finish')


def test_a_stack_still_busy_at_the_deadline_is_an_error():
    client = heat(('UPDATE_IN_PROGRESS', ''))
    with pytest.raises(TopologyError, match='still UPDATE_IN_PROGRESS '
                                            r'after 0.2 s \(\[kubernetes'):
        require_settled(client, 's-1', deadline=0.2)

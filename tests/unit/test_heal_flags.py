"""What turns the heal guards on (the instance's isAutohealEnabled) and
what lifts them (the heal request's additionalParams.force), and the
heals the stored state remembers for heal_repeat_limit."""
from __future__ import annotations

import pytest

from kubernetes_mgmt.errors import ValidationError
from kubernetes_mgmt.params.lcm_requests import request_findings
from kubernetes_mgmt.shim import tacker_objects
from kubernetes_mgmt.shim.v2.instance import V2Instance
from kubernetes_mgmt.state.instance_state import DriverState


@pytest.mark.parametrize('props, enabled', [
    ({'isAutohealEnabled': True}, True),
    ({'isAutohealEnabled': False}, False),
    ({'isAutohealEnabled': 'true'}, False),
    ({}, False), (None, False)])
def test_autoheal_is_read_from_the_v2_instance(props, enabled):
    data = {'id': 'i-1'}
    if props is not None:
        data['vnfConfigurableProperties'] = props
    assert tacker_objects.autoheal_enabled(V2Instance(data)) is enabled


def test_a_v1_instance_is_never_healed_automatically():
    class V1Instance:      # Tacker 16's v1 VnfInstance has no such field
        id = 'i-1'
    assert tacker_objects.autoheal_enabled(V1Instance()) is False


def test_force_is_read_from_the_heal_request():
    assert tacker_objects.heal_force(
        {'vnfcInstanceId': ['a'], 'additionalParams': {'force': True}})
    assert not tacker_objects.heal_force({'vnfcInstanceId': ['a']})


def test_a_force_that_is_not_a_boolean_is_refused_naming_the_field():
    body = {'vnfcInstanceId': ['a'], 'additionalParams': {'force': 'yes'}}
    with pytest.raises(ValidationError, match=r'additionalParams\.force'):
        tacker_objects.heal_force(body)
    assert [path for path, _ in request_findings('heal', body)] == [
        ('additionalParams', 'force')]


def test_completed_heals_are_kept_within_the_window():
    state = DriverState()
    state.record_heals(['worker-0'], 1000.0, 3600.0)
    state.record_heals(['worker-0', 'master-1'], 4000.0, 3600.0)
    assert state.heals == {'worker-0': [1000.0, 4000.0],
                           'master-1': [4000.0]}
    state.record_heals(['master-1'], 5000.0, 3600.0)
    assert state.heals == {'worker-0': [4000.0],
                           'master-1': [4000.0, 5000.0]}
    assert DriverState.from_dict({'heals': state.heals}).heals == state.heals

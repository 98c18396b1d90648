"""What the driver stores in a VNF instance's ``vnf_metadata``."""
import json

import pytest

from kubernetes_mgmt import instance_state
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.instance_state import DriverState, NodeRecord


class Instance:
    id = 'inst-1'

    def __init__(self, metadata=None):
        self.vnf_metadata = dict(metadata or {})
        self.saves = 0

    def save(self):
        self.saves += 1


def test_state_is_stored_as_strings_only():
    # Tacker's VnfInstance.vnf_metadata is a DictOfStringsField.
    instance = Instance({'owner': 'someone'})
    state = DriverState(first_master='srv-1', lb_port=16443)
    state.remember_node('srv-1', NodeRecord('m0', 'master', '10.0.0.5'))
    instance_state.save(instance, state)
    assert instance.saves == 1
    assert all(isinstance(v, str) for v in instance.vnf_metadata.values())
    assert instance.vnf_metadata['owner'] == 'someone'
    json.loads(instance.vnf_metadata[instance_state.METADATA_KEY])
    again = instance_state.load(instance)
    assert again == state
    assert again.node('srv-1') == NodeRecord('m0', 'master', '10.0.0.5')


def test_state_stored_as_a_dict_still_loads():
    instance = Instance({instance_state.METADATA_KEY: {'vim_id': 'v1'}})
    assert instance_state.load(instance).vim_id == 'v1'


def test_garbage_in_our_key_is_reported():
    instance = Instance({instance_state.METADATA_KEY: '{not json'})
    with pytest.raises(MgmtDriverError, match='not the JSON'):
        instance_state.load(instance)


def test_forget_removes_only_our_key():
    instance = Instance({'owner': 'someone'})
    instance_state.save(instance, DriverState(vim_id='v1'))
    instance_state.forget(instance)
    assert instance.vnf_metadata == {'owner': 'someone'}
    assert instance.saves == 2

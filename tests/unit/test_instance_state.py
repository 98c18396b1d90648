"""What the driver stores in a VNF instance's ``vnf_metadata``."""
import json

import pytest
from oslo_config import cfg

from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.state import instance_state
from kubernetes_mgmt.state.instance_state import DriverState, NodeRecord


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


def _patched(instance, edit):
    """Edit our stored JSON as a PATCH of vnf_metadata would."""
    stored = json.loads(instance.vnf_metadata[instance_state.METADATA_KEY])
    edit(stored['state'])
    instance.vnf_metadata[instance_state.METADATA_KEY] = json.dumps(stored)


def _stored_state():
    state = DriverState(vim_id='vim-1', vim_name='k8s', first_master='s1')
    state.host_keys['10.0.0.5'] = 'ssh-ed25519 AAAAkey1'
    state.healing['vnfc-1'] = {'server_id': 's2', 'name': 'w0',
                               'role': 'worker', 'ip': '10.0.0.6'}
    return state


@pytest.mark.parametrize('edit, field', [
    (lambda s: s.update(vim_id='vim-of-someone-else'), 'vim_id'),
    (lambda s: s['host_keys'].update({'10.0.0.5': 'ssh-rsa AAAAother'}),
     "host_keys['10.0.0.5']"),
    (lambda s: s['host_keys'].update({'10.0.0.9': 'ssh-rsa AAAAnew'}),
     "host_keys['10.0.0.9']"),
    (lambda s: s['healing'].pop('vnfc-1'), "healing['vnfc-1']"),
    (lambda s: s['healing']['vnfc-1'].update(ip='10.9.9.9'),
     "healing['vnfc-1']"),
    (lambda s: s.update(first_master=None), 'first_master'),
])
def test_an_edited_state_is_refused_naming_the_field(edit, field):
    instance = Instance({'owner': 'someone'})
    instance_state.save(instance, _stored_state())
    _patched(instance, edit)
    before = dict(instance.vnf_metadata)
    with pytest.raises(instance_state.TamperedState) as caught:
        instance_state.load(instance)
    message = str(caught.value)
    assert field in message and 'nothing was changed' in message
    # Only the edited field is named.
    for other in ('vim_id', 'first_master', "host_keys['10.0.0.5']",
                  "healing['vnfc-1']"):
        if other != field:
            assert other not in message
    assert instance.vnf_metadata == before


def test_state_copied_from_another_instance_is_refused():
    one, other = Instance(), Instance()
    other.id = 'inst-2'
    instance_state.save(one, _stored_state())
    other.vnf_metadata = dict(one.vnf_metadata)
    with pytest.raises(instance_state.TamperedState):
        instance_state.load(other)


def test_unsigned_state_of_plugin_0_1_needs_the_operators_trust():
    instance = Instance({instance_state.METADATA_KEY:
                         json.dumps({'vim_id': 'v1'})})
    with pytest.raises(instance_state.TamperedState,
                       match=r'not signed.*trust_unsigned_state'):
        instance_state.load(instance)
    cfg.CONF.set_override('trust_unsigned_state', True, 'kubernetes_mgmt')
    try:
        assert instance_state.load(instance).vim_id == 'v1'
    finally:
        cfg.CONF.clear_override('trust_unsigned_state', 'kubernetes_mgmt')
    # Signed on that first load: trusted from now on without the option.
    assert instance_state.load(instance).vim_id == 'v1'


def test_the_key_is_made_once_private_and_its_loss_is_explained(tmp_path):
    path = tmp_path / 'keys' / 'state.key'
    cfg.CONF.set_override('state_key_file', str(path), 'kubernetes_mgmt')
    try:
        instance = Instance()
        instance_state.save(instance, DriverState(vim_id='v1'))
        assert oct(path.stat().st_mode & 0o777) == '0o600'
        key = path.read_bytes()
        instance_state.save(instance, DriverState(vim_id='v2'))
        assert path.read_bytes() == key
        path.unlink()
        with pytest.raises(MgmtDriverError, match='state_key_file'):
            instance_state.load(instance)
    finally:
        cfg.CONF.clear_override('state_key_file', 'kubernetes_mgmt')


def test_a_state_signed_under_another_key_is_refused(tmp_path):
    instance = Instance()
    instance_state.save(instance, DriverState(vim_id='v1'))
    path = tmp_path / 'other.key'
    path.write_text('ab' * 32)
    cfg.CONF.set_override('state_key_file', str(path), 'kubernetes_mgmt')
    try:
        with pytest.raises(MgmtDriverError,
                           match=r'signed with state key .*state_key_file'):
            instance_state.load(instance)
    finally:
        cfg.CONF.clear_override('state_key_file', 'kubernetes_mgmt')


def test_garbage_in_our_key_is_reported():
    instance = Instance({instance_state.METADATA_KEY: '{not json'})
    with pytest.raises(MgmtDriverError, match='not the JSON'):
        instance_state.load(instance)


def test_forget_keeps_only_an_empty_state_and_others_metadata():
    instance = Instance({'owner': 'someone'})
    instance_state.save(instance, _stored_state())
    assert instance_state.holds_state(instance.vnf_metadata)
    instance_state.forget(instance)
    assert not instance_state.holds_state(instance.vnf_metadata)
    assert instance.vnf_metadata['owner'] == 'someone'
    assert set(instance.vnf_metadata) == {'owner',
                                          instance_state.METADATA_KEY}
    assert json.loads(instance.vnf_metadata[
        instance_state.METADATA_KEY])['state'] == {}
    assert instance_state.load(instance) == DriverState()
    assert instance.saves == 2

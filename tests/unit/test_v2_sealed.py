"""Instantiate parameters sealed into an instance's metadata (AES-GCM under
the site's state key, bound to the instance id)."""
from __future__ import annotations

import base64

import pytest
from oslo_config import cfg

from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.shim.v2 import sealed

PARAMS = {'k8s_cluster_installation_param': {
    'master_node': {'username': 'ubuntu',
                    'password': 'Very-Secret-VM-Password'},
    'proxy': {'http_proxy': 'http://user:proxy-pass@proxy:3128'}}}
WHERE = "metadata['kubernetesMgmtParams'] of VNF instance inst-a"


@pytest.fixture
def state_key(tmp_path):
    path = tmp_path / 'keys' / 'state.key'
    cfg.CONF.set_override('state_key_file', str(path), 'kubernetes_mgmt')
    yield path
    cfg.CONF.clear_override('state_key_file', 'kubernetes_mgmt')


def test_round_trip(state_key):
    text = sealed.seal('inst-a', PARAMS)
    assert isinstance(text, str) and text.startswith(sealed.PREFIX)
    assert sealed.unseal('inst-a', text, WHERE) == PARAMS
    # The key was made on first use, private.
    assert oct(state_key.stat().st_mode & 0o777) == '0o600'


def test_the_sealed_text_shows_no_secret(state_key):
    text = sealed.seal('inst-a', PARAMS)
    raw = base64.b64decode(text[len(sealed.PREFIX):])
    for secret in ('Very-Secret-VM-Password', 'proxy-pass', 'ubuntu',
                   'master_node'):
        assert secret not in text
        assert secret.encode() not in raw


def test_each_seal_differs(state_key):
    # A fresh nonce each time: equal parameters do not show as equal.
    assert sealed.seal('inst-a', PARAMS) != sealed.seal('inst-a', PARAMS)


def test_sealed_for_one_instance_does_not_open_for_another(state_key):
    text = sealed.seal('inst-a', PARAMS)
    where = "metadata['kubernetesMgmtParams'] of VNF instance inst-b"
    with pytest.raises(sealed.SealError) as caught:
        sealed.unseal('inst-b', text, where)
    message = str(caught.value)
    assert where in message
    assert 'inst-b' in message and 'copied from another' in message
    assert isinstance(caught.value, MgmtDriverError)


def _edited(text: str, index: int) -> str:
    raw = bytearray(base64.b64decode(text[len(sealed.PREFIX):]))
    raw[index] ^= 0x01
    return sealed.PREFIX + base64.b64encode(bytes(raw)).decode()


@pytest.mark.parametrize('index', [0, 12, -1])   # nonce, data, tag
def test_an_edited_text_does_not_open(state_key, index):
    text = sealed.seal('inst-a', PARAMS)
    with pytest.raises(sealed.SealError, match='edited'):
        sealed.unseal('inst-a', _edited(text, index), WHERE)


@pytest.mark.parametrize('text', [
    sealed.PREFIX + 'not base64 at all!',
    sealed.PREFIX,
    sealed.PREFIX + base64.b64encode(b'short').decode(),
    sealed.PREFIX + base64.b64encode(b'x' * 40).decode(),
])
def test_a_damaged_text_fails_clearly(state_key, text):
    sealed.seal('inst-a', PARAMS)       # the site key exists
    with pytest.raises(sealed.SealError) as caught:
        sealed.unseal('inst-a', text, WHERE)
    assert WHERE in str(caught.value)


@pytest.mark.parametrize('value', [
    '{"k8s_cluster_installation_param": {}}',
    {'k8s_cluster_installation_param': {}},
    '',
    None,
    'aesgcm2:AAAA',
])
def test_a_value_that_is_not_sealed_parameters(state_key, value):
    with pytest.raises(sealed.SealError) as caught:
        sealed.unseal('inst-a', value, WHERE)
    assert str(caught.value) == \
        f'{WHERE} is not sealed parameters of this driver'


def test_sealed_under_another_key_does_not_open(state_key, tmp_path):
    text = sealed.seal('inst-a', PARAMS)
    other = tmp_path / 'other.key'
    other.write_text('cd' * 32 + '\n')
    cfg.CONF.set_override('state_key_file', str(other), 'kubernetes_mgmt')
    with pytest.raises(sealed.SealError, match='state_key_file'):
        sealed.unseal('inst-a', text, WHERE)
    cfg.CONF.set_override('state_key_file', str(state_key),
                          'kubernetes_mgmt')
    assert sealed.unseal('inst-a', text, WHERE) == PARAMS


def test_the_key_file_is_shared_with_the_signed_state(state_key):
    # One site key (state_key_file): a key already there is used, not
    # replaced.
    state_key.parent.mkdir()
    state_key.write_text('ab' * 32 + '\n')
    text = sealed.seal('inst-a', PARAMS)
    assert state_key.read_text() == 'ab' * 32 + '\n'
    assert sealed.unseal('inst-a', text, WHERE) == PARAMS


def test_a_lost_key_is_reported_and_not_replaced_by_unseal(state_key):
    # Reading sealed parameters must not make a new site key: every
    # conductor needs the same file, and the operator has to restore the
    # lost one (as instance_state.load explains). "Nothing was changed"
    # must hold.
    text = sealed.seal('inst-a', PARAMS)
    state_key.unlink()
    with pytest.raises(MgmtDriverError) as caught:
        sealed.unseal('inst-a', text, WHERE)
    assert not state_key.exists()
    assert 'missing' in str(caught.value)

"""Stored state that is put back older, blanked, or signed with another
conductor's key is refused; the key is never silently replaced.

The instances here behave as Tacker's: a v1 instance persists on
``save()``; the v2 adapter has no ``save`` (Tacker keeps the script's
result after it exits, or not at all).
"""
from __future__ import annotations

import json
import logging
import os
import threading

import pytest
from oslo_config import cfg

from kubernetes_mgmt.shim.v2.instance import V2Instance
from kubernetes_mgmt.state import generations, instance_state, integrity
from kubernetes_mgmt.state.instance_state import (
    METADATA_KEY,
    DriverState,
    TamperedState,
)
from kubernetes_mgmt.state.integrity import StateKeyError

GROUP = 'kubernetes_mgmt'


class Instance:
    """A v1 VNF instance: what ``save()`` is given, Tacker keeps."""

    def __init__(self, instance_id: str = 'inst-1', metadata=None):
        self.id = instance_id
        self.vnf_metadata = dict(metadata or {})
        self.kept = dict(self.vnf_metadata)

    def save(self):
        self.kept = dict(self.vnf_metadata)


@pytest.fixture
def override():
    names = []

    def set_(**values):
        for name, value in values.items():
            cfg.CONF.set_override(name, value, GROUP)
            names.append(name)
    yield set_
    for name in names:
        cfg.CONF.clear_override(name, GROUP)


def _stored(instance) -> dict:
    return json.loads(instance.vnf_metadata[METADATA_KEY])


def _state(n: int) -> DriverState:
    state = DriverState(vim_id=f'vim-{n}', first_master='srv-m0')
    state.host_keys['srv-m0'] = f'ssh-ed25519 AAAAkey{n}'
    return state


def _floor_file(instance_id: str = 'inst-1') -> str:
    return generations.floors().path(instance_id)


# -- generations --------------------------------------------------------------

def test_each_save_is_the_next_generation_and_the_floor_follows():
    instance = Instance()
    for n in (1, 2, 3):
        instance_state.save(instance, _state(n))
        stored = _stored(instance)
        assert stored['format'] == 3 and stored['generation'] == n
        assert stored['key_id'] == integrity.key_id(
            integrity.load_key(create=False))
    with open(_floor_file(), encoding='ascii') as f:
        assert f.read() == '3\n'
    assert oct(os.stat(_floor_file()).st_mode & 0o777) == '0o600'
    assert instance_state.load(instance) == _state(3)


def test_an_older_signed_copy_put_back_is_refused():
    instance = Instance(metadata={'owner': 'someone'})
    instance_state.save(instance, _state(1))
    older = dict(instance.vnf_metadata)
    instance_state.save(instance, _state(2))
    instance.vnf_metadata = dict(older)     # PATCH with the old value
    with pytest.raises(TamperedState) as caught:
        instance_state.load(instance)
    message = str(caught.value)
    assert 'generation 1 found, this conductor has seen generation 2' \
        in message
    assert 'nothing was changed' in message
    assert _floor_file() in message and 'state_generation_dir' in message
    assert instance.vnf_metadata == older


def test_a_newer_host_floor_refuses_a_copy_another_host_accepts(override,
                                                                tmp_path):
    """Floors are per host: the conductor that saw generation 2 refuses
    generation 1; one that never saw this instance accepts it (README:
    share state_generation_dir for site-wide protection)."""
    instance = Instance()
    instance_state.save(instance, _state(1))
    older = dict(instance.vnf_metadata)
    instance_state.save(instance, _state(2))
    instance.vnf_metadata = older
    with pytest.raises(TamperedState):
        instance_state.load(instance)
    override(state_generation_dir=str(tmp_path / 'other-host'))
    assert instance_state.load(instance) == _state(1)


@pytest.mark.parametrize('blank, found', [
    (lambda m: m.pop(METADATA_KEY), 'is missing'),
    (lambda m: m.update({METADATA_KEY: None}), 'is null'),
    (lambda m: m.update({METADATA_KEY: ''}), 'is an empty string'),
    (lambda m: m.update({METADATA_KEY: '{}'}), 'is an empty JSON object'),
])
def test_a_blanked_state_is_refused_once_there_was_one(blank, found):
    instance = Instance(metadata={'owner': 'someone'})
    instance_state.save(instance, _state(1))
    instance_state.save(instance, _state(2))
    blank(instance.vnf_metadata)
    before = dict(instance.vnf_metadata)
    with pytest.raises(TamperedState) as caught:
        instance_state.load(instance)
    message = str(caught.value)
    assert found in message and 'seen generation 2' in message
    assert 'removed or blanked' in message and _floor_file() in message
    assert instance.vnf_metadata == before


def test_no_state_is_an_empty_one_for_an_instance_never_stored():
    assert instance_state.load(Instance('new-instance')) == DriverState()


def test_a_field_removed_with_its_signatures_is_refused():
    instance = Instance()
    instance_state.save(instance, _state(1))
    stored = _stored(instance)
    del stored['state']['host_keys']
    for path in list(stored['signatures']):
        if path.startswith('host_keys'):
            del stored['signatures'][path]
    instance.vnf_metadata[METADATA_KEY] = json.dumps(stored)
    with pytest.raises(TamperedState, match=r'set of fields \(auth_url, '):
        instance_state.load(instance)


def test_fields_of_two_generations_do_not_mix():
    instance = Instance()
    instance_state.save(instance, _state(1))
    first = _stored(instance)
    instance_state.save(instance, _state(2))
    mixed = _stored(instance)
    for path in ('vim_id', 'host_keys', "host_keys['srv-m0']"):
        mixed['signatures'][path] = first['signatures'][path]
    mixed['state']['vim_id'] = first['state']['vim_id']
    mixed['state']['host_keys'] = first['state']['host_keys']
    instance.vnf_metadata[METADATA_KEY] = json.dumps(mixed)
    with pytest.raises(TamperedState) as caught:
        instance_state.load(instance)
    assert 'vim_id' in str(caught.value)
    assert "host_keys['srv-m0']" in str(caught.value)


def test_an_edited_generation_is_refused():
    instance = Instance()
    instance_state.save(instance, _state(1))
    stored = _stored(instance)
    stored['generation'] = 9
    instance.vnf_metadata[METADATA_KEY] = json.dumps(stored)
    with pytest.raises(TamperedState, match='the generation'):
        instance_state.load(instance)


# -- terminate --------------------------------------------------------------

def test_forget_leaves_an_empty_state_that_later_operations_build_on(
        override, tmp_path):
    instance = Instance(metadata={'owner': 'someone'})
    instance_state.save(instance, _state(1))
    instance_state.save(instance, _state(2))
    before_terminate = dict(instance.vnf_metadata)
    # Another conductor host saw generation 2 and nothing after.
    other_host = tmp_path / 'other-host'
    generations.Floors(str(other_host)).raise_to('inst-1', 2)

    instance_state.forget(instance)
    assert instance.kept == instance.vnf_metadata
    assert instance.vnf_metadata['owner'] == 'someone'
    assert _stored(instance)['state'] == {}
    assert _stored(instance)['generation'] == 3
    assert instance_state.load(instance) == DriverState()

    # Instantiated again: on the host that terminated it, and on the
    # other one, whose floor is older than the empty state.
    instance_state.save(instance, _state(4))
    assert _stored(instance)['generation'] == 4
    override(state_generation_dir=str(other_host))
    assert instance_state.load(instance) == _state(4)
    # The state from before the terminate is an older copy there too.
    instance.vnf_metadata = dict(before_terminate)
    with pytest.raises(TamperedState, match='generation 2 found'):
        instance_state.load(instance)


def test_forget_of_an_instance_never_stored_stores_nothing():
    instance = Instance(metadata={'owner': 'someone'})
    instance_state.forget(instance)
    assert instance.vnf_metadata == {'owner': 'someone'}
    assert not os.path.exists(_floor_file())


# -- v2: Tacker keeps the script's result only when the operation succeeds --

def _v2(instance_id: str = 'inst-2', metadata=None) -> dict:
    return {'id': instance_id, 'metadata': dict(metadata or {})}


def _v2_kept(instance_id: str, n_saves: int) -> dict:
    """The instance as Tacker keeps it after operations that saved
    ``n_saves`` times."""
    data = _v2(instance_id)
    for n in range(1, n_saves + 1):
        script = V2Instance(data)
        instance_state.load(script)
        instance_state.save(script, _state(n))
        data = script.to_dict()
    return data


def test_v2_saves_that_tacker_did_not_keep_do_not_raise_the_floor():
    kept = _v2_kept('inst-2', 2)
    # An operation whose script saved generation 3, then failed: Tacker
    # keeps generation 2 and hands the next operation that.
    failed = V2Instance(kept)
    assert instance_state.load(failed) == _state(2)
    instance_state.save(failed, _state(3))
    assert _stored(failed)['generation'] == 3
    with open(_floor_file('inst-2'), encoding='ascii') as f:
        assert f.read() == '2\n'
    assert instance_state.load(V2Instance(kept)) == _state(2)


def test_v2_a_copy_older_than_what_tacker_handed_before_is_refused():
    older = _v2_kept('inst-2', 1)
    kept = _v2_kept('inst-2', 2)
    assert instance_state.load(V2Instance(kept)) == _state(2)
    with pytest.raises(TamperedState, match='generation 1 found'):
        instance_state.load(V2Instance(older))


def test_v2_retry_and_rollback_with_the_state_a_failed_attempt_carried():
    kept = _v2_kept('inst-2', 1)
    attempt = V2Instance(kept)
    instance_state.load(attempt)
    for n in (2, 3):
        instance_state.save(attempt, _state(n))
    carried = attempt.vnf_metadata[METADATA_KEY]
    # The retry adopts generation 3; Tacker still keeps generation 1, and
    # the hooks load both (the persisted view names the nodes Tacker
    # knows).
    retry = V2Instance(kept)
    retry.adopt_state(carried)
    assert instance_state.load(retry) == _state(3)
    assert instance_state.load(retry.persisted_instance()) == _state(1)
    instance_state.save(retry, _state(4))
    # It fails again; the rollback gets the same two.
    rollback = V2Instance(kept)
    rollback.adopt_state(retry.vnf_metadata[METADATA_KEY])
    assert instance_state.load(rollback.persisted_instance()) == _state(1)
    assert instance_state.load(rollback) == _state(4)


# -- format 2 (signed, no generation) ----------------------------------------

def _format2(instance_id: str, state: DriverState) -> str:
    """As the releases before format 3 stored it."""
    import dataclasses
    fields = dataclasses.asdict(state)
    key = integrity.load_key(create=True)
    return json.dumps({'format': 2, 'state': fields,
                       'signatures': integrity.sign(key, instance_id,
                                                    fields)})


def test_format_2_is_accepted_once_and_stored_as_format_3():
    old = _format2('inst-1', _state(1))
    instance = Instance(metadata={METADATA_KEY: old})
    assert instance_state.load(instance) == _state(1)
    assert _stored(instance)['format'] == 3
    assert _stored(instance)['generation'] == 1
    assert instance.kept == instance.vnf_metadata
    assert instance_state.load(instance) == _state(1)
    # The format 2 copy put back is an older one now.
    instance.vnf_metadata[METADATA_KEY] = old
    with pytest.raises(TamperedState, match=r'without a generation '
                                              r'\(format 2\).*generation 1'):
        instance_state.load(instance)


def test_format_2_edited_is_refused_naming_the_field():
    stored = json.loads(_format2('inst-1', _state(1)))
    stored['state']['vim_id'] = 'vim-of-someone-else'
    instance = Instance(metadata={METADATA_KEY: json.dumps(stored)})
    with pytest.raises(TamperedState, match='vim_id'):
        instance_state.load(instance)


def test_unsigned_state_is_refused_where_a_generation_was_seen(override):
    instance = Instance()
    instance_state.save(instance, _state(1))
    instance.vnf_metadata[METADATA_KEY] = json.dumps({'vim_id': 'v9'})
    override(trust_unsigned_state=True)
    with pytest.raises(TamperedState, match='is not signed'):
        instance_state.load(instance)


# -- the key ----------------------------------------------------------------

@pytest.fixture
def key_file(override, tmp_path) -> str:
    path = tmp_path / 'conductor' / 'state.key'
    override(state_key_file=str(path),
             state_generation_dir=str(tmp_path / 'conductor' / 'gen'))
    return str(path)


def test_a_conductor_without_the_key_refuses_and_makes_none(key_file):
    instance = Instance()
    instance_state.save(instance, _state(1))
    os.unlink(key_file)     # a conductor host the key was not copied to
    for call in (lambda: instance_state.load(instance),
                 lambda: instance_state.save(instance, _state(2)),
                 lambda: instance_state.forget(instance)):
        with pytest.raises(StateKeyError) as caught:
            call()
        message = str(caught.value)
        assert key_file in message and 'state_key_file' in message
        assert 'Copy that file' in message
        assert not os.path.exists(key_file)


def test_a_host_that_verified_state_makes_no_new_key(key_file):
    instance_state.save(Instance(), _state(1))
    os.unlink(key_file)
    # The first instantiate of another VNF on this host.
    with pytest.raises(StateKeyError,
                       match='has verified state signed with it before'):
        integrity.load_key(create=True)
    assert not os.path.exists(key_file)


def test_state_signed_with_another_conductors_key_says_so(key_file,
                                                          tmp_path):
    instance = Instance()
    instance_state.save(instance, _state(1))
    theirs = integrity.key_id(integrity.load_key(create=False))
    other = tmp_path / 'other.key'
    other.write_text('ab' * 32 + '\n')
    ours = integrity.key_id(bytes.fromhex('ab' * 32))
    cfg.CONF.set_override('state_key_file', str(other), GROUP)
    before = dict(instance.vnf_metadata)
    with pytest.raises(StateKeyError) as caught:
        instance_state.load(instance)
    message = str(caught.value)
    assert f'signed with state key {theirs}' in message
    assert f'{other} ([kubernetes_mgmt] state_key_file) is {ours}' in message
    assert 'every tacker-conductor host of the site needs the same key' \
        in message
    assert 'changed outside' not in message
    assert instance.vnf_metadata == before


def test_a_new_key_is_private_whole_and_announced(key_file, caplog,
                                                  monkeypatch):
    synced = []
    real_fsync = os.fsync

    def fsync(fd):      # records what was flushed, and flushes it
        synced.append(os.readlink(f'/proc/self/fd/{fd}'))
        real_fsync(fd)

    monkeypatch.setattr(os, 'fsync', fsync)
    caplog.set_level(logging.WARNING)
    key = integrity.load_key(create=True)
    directory = os.path.dirname(key_file)
    assert oct(os.stat(key_file).st_mode & 0o777) == '0o600'
    assert oct(os.stat(directory).st_mode & 0o777) == '0o700'
    with open(key_file, encoding='ascii') as f:
        assert f.read() == key.hex() + '\n'
    assert os.listdir(directory) == ['state.key']   # no temporary left
    # The key's bytes reached the disk before its name did.
    assert synced[0].startswith(os.path.join(directory, '.state.key.'))
    assert synced[-1] == directory
    warning, = [r for r in caplog.records if 'created the key' in
                r.getMessage()]
    assert key_file in warning.getMessage()
    assert integrity.key_id(key) in warning.getMessage()
    assert 'copy this file to each' in warning.getMessage()
    assert key.hex() not in caplog.text


def test_conductors_creating_the_key_at_once_share_one(key_file):
    keys, errors = [], []

    def first_instantiate():
        try:
            keys.append(integrity.load_key(create=True))
        except Exception as exc:     # reported below
            errors.append(exc)

    threads = [threading.Thread(target=first_instantiate) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(set(keys)) == 1


def test_a_garbled_floor_is_reported_not_trusted():
    instance = Instance()
    instance_state.save(instance, _state(1))
    with open(_floor_file(), 'w', encoding='ascii') as f:
        f.write('lots\n')
    with pytest.raises(generations.GenerationError) as caught:
        instance_state.load(instance)
    assert _floor_file() in str(caught.value)
    assert 'state_generation_dir' in str(caught.value)


def test_an_instance_id_cannot_lead_the_floor_out_of_its_directory(
        tmp_path):
    floors = generations.Floors(str(tmp_path / 'gen'))
    for odd in ('../../etc/passwd', '.hidden', 'a/b', ''):
        assert os.path.dirname(floors.path(odd)) == floors.directory
    assert floors.path('6f1c0a1e-0d2b-4b4e-9c1a-1f2e3d4c5b6a').endswith(
        '/6f1c0a1e-0d2b-4b4e-9c1a-1f2e3d4c5b6a')

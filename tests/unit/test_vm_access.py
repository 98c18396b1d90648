"""How the driver reaches a VM: its own login key, the user data that
authorizes it, and the host key a VM must present before anything is
sent (the parts that need a real sshd or Nova are lab tests)."""
from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path
from types import SimpleNamespace

import paramiko
import pytest
import yaml

from kubernetes_mgmt.errors import HostKeyMismatch, ValidationError
from kubernetes_mgmt.remote import console_keys, identity, user_data
from kubernetes_mgmt.remote.hostkeys import (
    HostKeyPending,
    HostKeyStore,
    HostKeyUnverifiable,
    StaticKeys,
    Target,
    key_text,
)
from kubernetes_mgmt.shim import v1_hooks as lifecycle

REPO = Path(__file__).resolve().parents[2]
VM = Target('server-1', '10.0.0.5', 'worker-0@10.0.0.5')


def _key() -> paramiko.PKey:
    """A fresh Ed25519 key (as a VM generates at first boot)."""
    return identity.login_key('vm', site_key=os.urandom(32))


def _line(key: paramiko.PKey, host: str = 'vm-0') -> str:
    return f'{key_text(key)} root@{host}'


def _console(*keys: paramiko.PKey, host: str = 'vm-0') -> str:
    """What cloud-init's keys_to_console prints, amid other boot lines."""
    prints = [f'ec2: 256 {k.fingerprint} root@{host} (ED25519)'
              for k in keys]
    return '\n'.join([
        '[    3.1] cloud-init[512]: Cloud-init v. 24.1 running',
        'ec2: ' + '#' * 40, f'ec2: {console_keys.FINGERPRINTS[0]}', *prints,
        f'ec2: {console_keys.FINGERPRINTS[1]}', 'ec2: ' + '#' * 40,
        console_keys.KEYS[0], *(_line(k, host) for k in keys),
        console_keys.KEYS[1], f'{host} login: '])


# -- the console -------------------------------------------------------------

def test_the_console_names_the_keys_cloud_init_printed():
    first, second = _key(), _key()
    published = console_keys.parse(_console(first, second))
    assert published is not None
    assert first.fingerprint in published
    assert second.fingerprint in published
    assert _key().fingerprint not in published


def test_a_block_still_being_printed_is_not_trusted():
    text = _console(_key())
    cut = text.index(console_keys.FINGERPRINTS[1])
    assert console_keys.parse(text[:cut]) is None
    assert console_keys.parse('[    1.0] booting\nlogin: ') is None


def test_fingerprints_alone_are_enough():
    key = _key()
    text = '\n'.join(line for line in _console(key).splitlines()
                     if 'KEYS' not in line and not line.startswith('ssh-'))
    assert key.fingerprint in console_keys.parse(text)


def test_the_last_boot_counts():
    old, new = _key(), _key()
    published = console_keys.parse(_console(old) + '\n' + _console(new))
    assert new.fingerprint in published
    assert old.fingerprint not in published


# -- the host key store -------------------------------------------------------

def test_a_new_vm_must_show_the_key_it_published():
    key = _key()
    store = HostKeyStore(authority=StaticKeys({VM.host_id: [_line(key)]}))
    store.verify(VM, key)
    assert store.known == {VM.host_id: key_text(key)}


def test_a_new_vm_offering_another_key_is_refused_naming_both():
    published, offered = _key(), _key()
    store = HostKeyStore(authority=StaticKeys(
        {VM.host_id: [_line(published)]}))
    with pytest.raises(HostKeyMismatch) as caught:
        store.verify(VM, offered)
    message = str(caught.value)
    assert VM.name in message and VM.address in message
    assert published.fingerprint in message
    assert offered.fingerprint in message
    assert 'nothing was sent' in message
    assert store.known == {}


def test_a_vm_that_has_not_published_yet_is_asked_again():
    store = HostKeyStore(authority=StaticKeys({}))
    with pytest.raises(HostKeyPending):
        store.verify(VM, _key())
    assert store.known == {}


def test_an_unknown_key_with_nothing_to_vouch_for_it_is_refused():
    with pytest.raises(HostKeyUnverifiable, match='nothing publishes one'):
        HostKeyStore().verify(VM, _key())


def test_only_an_explicit_opt_out_trusts_an_unknown_key():
    key = _key()
    store = HostKeyStore(checking=False)
    store.verify(VM, key)
    assert store.known == {VM.host_id: key_text(key)}


def test_a_stored_key_wins_over_the_console():
    stored, published = _key(), _key()
    store = HostKeyStore(known={VM.host_id: key_text(stored)},
                         authority=StaticKeys(
                             {VM.host_id: [_line(published)]}))
    store.verify(VM, stored)
    with pytest.raises(HostKeyMismatch, match=re.escape(stored.fingerprint)):
        store.verify(VM, published)


def test_a_vm_rebuilt_in_place_is_judged_by_what_it_published():
    old, new = _key(), _key()
    store = HostKeyStore(known={VM.host_id: key_text(old)},
                         authority=StaticKeys({VM.host_id: [_line(new)]}),
                         replacing={VM.host_id})
    store.verify(VM, new)
    assert store.known[VM.host_id] == key_text(new)


def test_another_vm_on_a_known_address_is_not_trusted_by_address():
    # Keys stored by older releases are by address; a new server there
    # with another key must show it on its console.
    old, new = _key(), _key()
    store = HostKeyStore(known={VM.address: key_text(old)},
                         authority=StaticKeys({}))
    with pytest.raises(HostKeyPending):
        store.verify(VM, new)
    store.verify(VM, old)       # the same VM, as an older release knew it
    assert store.known == {VM.host_id: key_text(old)}


# -- the driver's own key -----------------------------------------------------

def test_the_login_key_is_the_clusters_own_and_needs_no_storage():
    site = b'k' * 32
    first = identity.login_key('instance-a', site_key=site)
    again = identity.login_key('instance-a', site_key=site)
    other = identity.login_key('instance-b', site_key=site)
    other_site = identity.login_key('instance-a', site_key=b'j' * 32)
    assert first.get_base64() == again.get_base64()
    assert len({first.get_base64(), other.get_base64(),
                other_site.get_base64()}) == 3


def test_user_data_lets_the_key_in_for_every_login_user():
    line = 'ssh-ed25519 AAAAC3 kubernetes-mgmt@i'
    text = user_data.cloud_config(['ubuntu', 'ops', 'ubuntu'], line)
    assert text.startswith('#cloud-config\n')
    config = yaml.safe_load(text)
    users = [u for u in config['users'] if isinstance(u, dict)]
    assert [u['name'] for u in users] == ['ubuntu', 'ops']
    for user in users:
        assert user['ssh_authorized_keys'] == [line]
        assert user['sudo'] == 'ALL=(ALL) NOPASSWD:ALL'
        assert user['lock_passwd'] is False
    assert config['ssh']['emit_keys_to_console'] is True


# -- instantiate_start gives the VMs the key ----------------------------------

def _request() -> dict:
    body = json.loads((REPO / 'samples/requests/'
                       'simple_kubernetes_param_file.json').read_text())
    return json.loads(json.dumps(body).replace('REPLACE_WITH_', 'x'))


class _Instance:
    id = 'instance-7'
    vnf_metadata: dict = {}


class _RequestObject:
    """Tacker's v1 InstantiateVnfRequest, as far as the hook reads it."""

    def __init__(self, additional_params: dict):
        self.additional_params = additional_params


@pytest.mark.parametrize('as_object', [False, True])
def test_instantiate_start_puts_the_login_key_in_the_user_data(
        state_key, as_object):
    body = _request()
    request = _RequestObject(body['additionalParams']) if as_object \
        else body
    instance = _Instance()
    instance.instantiated_vnf_info = SimpleNamespace(
        additional_params=dict(body['additionalParams']))
    lifecycle.Lifecycle().instantiate_start(None, instance, request,
                                            None, None)
    params = request.additional_params if as_object \
        else request['additionalParams']
    # Tacker v1 keeps a copy made before the hook: it gets the entry too.
    assert instance.instantiated_vnf_info.additional_params[
        user_data.PARAMETER] == params[user_data.PARAMETER]
    config = yaml.safe_load(params[user_data.PARAMETER])
    key = identity.login_key('instance-7')
    expected = identity.public_line(key, 'instance-7')
    names = {u['name']: u['ssh_authorized_keys'] for u in config['users']
             if isinstance(u, dict)}
    assert names == {'ubuntu': [expected]}
    assert state_key.exists()       # the first instantiate of a site


def test_instantiate_start_refuses_a_bad_request_and_changes_nothing(
        state_key):
    body = _request()
    del body['additionalParams']['k8s_cluster_installation_param'][
        'master_node']['ssh_cp_name']
    before = copy.deepcopy(body)
    with pytest.raises(ValidationError, match='ssh_cp_name'):
        lifecycle.Lifecycle().instantiate_start(None, _Instance(), body,
                                                None, None)
    assert body == before


def test_v2_instantiate_start_hands_the_user_data_to_the_package(
        state_key):
    from kubernetes_mgmt.params.schema import (
        USER_DATA_CLASS_KEY,
        USER_DATA_KEY,
    )
    from kubernetes_mgmt.shim.v2 import operations
    from kubernetes_mgmt.shim.v2.instance import V2Instance

    body = _request()
    additional = body['additionalParams']
    additional[USER_DATA_KEY] = './UserData/kubernetes_mgmt_v2_user_data.py'
    additional[USER_DATA_CLASS_KEY] = 'KubernetesClusterUserData'
    for group in ('master_node', 'worker_node'):
        additional['k8s_cluster_installation_param'][group].pop(
            'aspect_id', None)
    instance = V2Instance({'id': 'instance-9', 'metadata': {}})
    operations.run(operations.Call('instantiate_start', body, instance,
                                   None, None))
    config = yaml.safe_load(
        instance.to_dict()['metadata'][user_data.PARAMETER])
    expected = identity.public_line(identity.login_key('instance-9'),
                                    'instance-9')
    assert config['users'][1]['ssh_authorized_keys'] == [expected]


def test_a_request_without_passwords_is_valid(state_key):
    from kubernetes_mgmt.params.validate import parse_cluster_params

    body = _request()
    param = body['additionalParams']['k8s_cluster_installation_param']
    for group in ('master_node', 'worker_node'):
        del param[group]['password']
    params = parse_cluster_params(body['additionalParams'])
    assert params.master.password is None
    assert params.worker.password is None
    assert params.secrets() == []

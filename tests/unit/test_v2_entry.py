"""What the script hands back to tacker-conductor: the instance, and after
a failure the driver's state for the retry; one masked line on stderr."""
from __future__ import annotations

import importlib.util
import io
import pickle
import subprocess
import sys
import textwrap

import pytest

from kubernetes_mgmt.shim.v2 import entry
from kubernetes_mgmt.shim.v2.instance import V2Instance
from kubernetes_mgmt.state import instance_state
from kubernetes_mgmt.state.instance_state import METADATA_KEY, DriverState

SCRIPT = importlib.util.find_spec('kubernetes_mgmt.v2.lcm_script').origin
PASSWORD = 'os-vim-Secret-42'


def _instance() -> dict:
    return {
        'id': 'inst-9', 'vnfdId': 'vnfd-1',
        'vimConnectionInfo': {'openstack': {
            'vimId': 'os-vim', 'vimType': 'ETSINFV.OPENSTACK_KEYSTONE.V_3',
            'interfaceInfo': {'endpoint': 'http://keystone/v3'},
            'accessInfo': {'username': 'nfv', 'password': PASSWORD,
                           'project': 'nfv', 'region': 'RegionOne'}}},
        'instantiatedVnfInfo': {'flavourId': 'simple',
                                'metadata': {'stack_id': 'stack-9'}},
        'metadata': {'owner': 'team-a'},
    }



def _with_state(state: DriverState) -> V2Instance:
    instance = V2Instance(_instance())
    instance_state.save(instance, state)
    return instance


# -- result -------------------------------------------------------------

def test_a_failure_hands_the_state_on(state_key):
    instance = _with_state(DriverState(vim_id='k8s-vim'))
    out = entry.result(instance, 1)
    stored = instance.vnf_metadata[METADATA_KEY]
    assert out['user_script_err_handling_data'] == {METADATA_KEY: stored}
    assert out['vnf_instance'] == instance.to_dict()


def test_a_success_hands_no_error_data(state_key):
    instance = _with_state(DriverState(vim_id='k8s-vim'))
    out = entry.result(instance, 0)
    assert out == {'vnf_instance': instance.to_dict()}
    assert METADATA_KEY in out['vnf_instance']['metadata']


def test_the_state_of_a_failure_reaches_the_retry(state_key):
    # Tacker keeps no instance change of a failed operation, only the
    # error handling data: the retry starts from the original instance.
    state = DriverState(vim_id='k8s-vim', first_master='srv-m0')
    failed = entry.result(_with_state(state), 1)
    inputs = {'operation': 'heal_start', 'vnf_instance': _instance(),
              'user_script_err_handling_data':
                  failed['user_script_err_handling_data']}
    retry = V2Instance(inputs['vnf_instance'])
    retry.adopt_state(entry.carried_state(inputs))
    assert instance_state.load(retry) == state


@pytest.mark.parametrize('inputs', [
    {},
    {'user_script_err_handling_data': None},
    {'user_script_err_handling_data': {}},
    {'user_script_err_handling_data': 'garbage'},
    {'user_script_err_handling_data': ['kubernetes_mgmt']},
    {'user_script_err_handling_data': {'other': 'x'}},
])
def test_carried_state_tolerates_odd_input(inputs):
    assert entry.carried_state(inputs) is None


def test_carried_state():
    assert entry.carried_state({'user_script_err_handling_data': {
        METADATA_KEY: '{"format": 2}', 'other': 'x'}}) == '{"format": 2}'


# -- the script failing, as tacker-conductor sees it ------------------------

def _script_input(carried=None) -> bytes:
    return pickle.dumps({
        'operation': 'heal_start',
        'request': {'vnfcInstanceId': ['workerNode-srv-w0']},
        'vnf_instance': _instance(), 'grant_request': None,
        'grant_response': None, 'tmp_csar_dir': '/nonexistent',
        'user_script_err_handling_data': carried or {}})


def _unpickle_only(stdout: bytes) -> dict:
    stream = io.BytesIO(stdout)
    result = pickle.load(stream)    # noqa: S301
    assert stream.read() == b''
    return result


def test_a_failure_is_one_line_on_stderr_and_the_result_on_stdout(
        tmp_path):
    # Without Tacker its configuration cannot load: the operation fails,
    # and still hands the state it was given on to the retry; the
    # instance goes back as Tacker keeps it (the script saved nothing).
    out = subprocess.run([sys.executable, SCRIPT],
                         input=_script_input({METADATA_KEY: 'STATE-1'}),
                         capture_output=True, timeout=120, check=False,
                         cwd=tmp_path)
    assert out.returncode == 1
    assert out.stderr.decode().splitlines() == [
        "ModuleNotFoundError: No module named 'tacker'"]
    result = _unpickle_only(out.stdout)
    assert result['user_script_err_handling_data'] == {
        METADATA_KEY: 'STATE-1'}
    assert result['vnf_instance'] == _instance()


# The driver's work replaced by a failure after it stored state: Tacker's
# configuration and context (not installed here) by what they yield.
FAILING = textwrap.dedent('''
    import sys, types
    from oslo_config import cfg
    import kubernetes_mgmt.conf
    from kubernetes_mgmt.state import instance_state
    from kubernetes_mgmt.errors import MgmtDriverError
    from kubernetes_mgmt.shim.v2 import entry, operations, tacker_conf

    cfg.CONF.set_override('state_key_file', sys.argv[1], 'kubernetes_mgmt')
    tacker_conf.load = lambda args: types.SimpleNamespace(
        log_file=None, log_dir=None, use_journal=False, use_syslog=False)
    entry.admin_context = lambda instance: 'context'

    def run(call):
        print('a stray print of the work')
        instance_state.save(call.instance, instance_state.DriverState(
            vim_id='k8s-vim', first_master='srv-m0'))
        password = call.instance.vim_connection_info[0].access_info[
            'password']
        if sys.argv[2] == 'driver':
            raise MgmtDriverError(
                f'[10.0.0.5] join: sudo -S with {password} refused')
        raise RuntimeError(f'keystone rejected {password}')

    operations.run = run
    sys.exit(entry.main())
''')


@pytest.mark.parametrize('kind, line', [
    ('driver', '[10.0.0.5] join: sudo -S with *** refused'),
    ('other', 'RuntimeError: keystone rejected ***'),
])
def test_a_failure_masks_secrets_and_carries_what_was_learnt(
        state_key, tmp_path, kind, line):
    out = subprocess.run(
        [sys.executable, '-c', FAILING, str(state_key), kind],
        input=_script_input(), capture_output=True, timeout=120,
        check=False, cwd=tmp_path)
    assert out.returncode == 1
    stderr = out.stderr.decode()
    assert PASSWORD not in stderr
    assert line in stderr.splitlines()
    result = _unpickle_only(out.stdout)
    carried = result['user_script_err_handling_data'][METADATA_KEY]
    assert result['vnf_instance']['metadata'][METADATA_KEY] == carried
    assert result['vnf_instance']['metadata']['owner'] == 'team-a'
    retry = V2Instance(_instance())
    retry.adopt_state(carried)
    assert instance_state.load(retry) == DriverState(
        vim_id='k8s-vim', first_master='srv-m0')

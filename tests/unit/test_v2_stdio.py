"""The script's standard streams as tacker-conductor reads them: stdout
holds the pickled result and nothing else; the script end to end for
operations the driver has no work in."""
from __future__ import annotations

import importlib.util
import io
import pickle
import subprocess
import sys
import textwrap

import pytest

from kubernetes_mgmt.shim.v2 import stdio

RESULT = {'vnf_instance': {'id': 'inst-1', 'metadata': {'a': 'b'}},
          'user_script_err_handling_data': {'kubernetes_mgmt': '{}'}}

CHILD = textwrap.dedent('''
    import logging
    import os
    import pickle
    import subprocess
    import sys
    import warnings

    from kubernetes_mgmt.shim.v2 import stdio

    # A library that bound the original sys.stdout before the block.
    handler = logging.StreamHandler(sys.stdout)
    logging.getLogger('lib').addHandler(handler)
    result = pickle.loads(bytes.fromhex(sys.argv[1]))
    with stdio.result_channel() as channel:
        print('stray print')
        sys.stdout.write('stray write\\n')
        os.write(1, b'stray fd write\\n')
        subprocess.run(['echo', 'stray child output'], check=True)
        subprocess.run([sys.executable, '-c', 'print("stray python")'],
                       check=True)
        logging.getLogger('lib').warning('stray log record')
        sys.__stdout__.write('stray __stdout__\\n')
        warnings.warn('stray warning')
        stdio.write_result(channel, result)
''')


def _run_child(code: str, *args: str, **kwargs):
    return subprocess.run([sys.executable, '-c', code, *args],
                          capture_output=True, timeout=60, check=False,
                          **kwargs)


def test_the_result_has_stdout_to_itself():
    out = _run_child(CHILD, pickle.dumps(RESULT).hex())
    assert out.returncode == 0, out.stderr.decode()
    stream = io.BytesIO(out.stdout)
    assert pickle.load(stream) == RESULT    # noqa: S301
    assert stream.read() == b''             # nothing after the pickle
    stderr = out.stderr.decode()
    for stray in ('stray print', 'stray write', 'stray fd write',
                  'stray child output', 'stray python', 'stray log record',
                  'stray __stdout__', 'stray warning'):
        assert stray in stderr


def test_without_the_channel_the_stray_output_would_break_the_pickle():
    # What the channel prevents: the same writes, no channel.
    code = CHILD.replace('with stdio.result_channel() as channel:',
                         'channel = sys.stdout.buffer\nif True:')
    out = _run_child(code, pickle.dumps(RESULT).hex())
    assert out.returncode == 0, out.stderr.decode()
    with pytest.raises(pickle.UnpicklingError):
        pickle.loads(out.stdout)    # noqa: S301


def test_read_input_takes_the_pickled_dict():
    data = {'operation': 'heal_start', 'request': {}}
    assert stdio.read_input(io.BytesIO(pickle.dumps(data))) == data


@pytest.mark.parametrize('data', [
    ['operation'], {'request': {}}, 'operation', None])
def test_read_input_refuses_what_is_no_script_input(data):
    with pytest.raises(ValueError, match='no LCM script input'):
        stdio.read_input(io.BytesIO(pickle.dumps(data)))


# -- the script as tacker-conductor runs it -----------------------------

SCRIPT = importlib.util.find_spec('kubernetes_mgmt.v2.lcm_script').origin


def _instance() -> dict:
    return {
        'id': 'inst-1', 'vnfdId': 'vnfd-1',
        'instantiationState': 'INSTANTIATED',
        'vimConnectionInfo': {'openstack': {
            'vimId': 'os-vim', 'vimType': 'ETSINFV.OPENSTACK_KEYSTONE.V_3',
            'interfaceInfo': {'endpoint': 'http://keystone/v3'},
            'accessInfo': {'username': 'nfv', 'password': 'os-secret',
                           'project': 'nfv', 'projectDomain': 'Default',
                           'userDomain': 'Default',
                           'region': 'RegionOne'}}},
        'instantiatedVnfInfo': {
            'flavourId': 'simple',
            'vnfcResourceInfo': [{
                'id': 'srv-1', 'vduId': 'masterNode',
                'computeResource': {'resourceId': 'srv-1'},
                'metadata': {'stack_id': 's-masterNode-0/n1',
                             'parent_resource_name': 'masterNode-0',
                             'vdu_idx': 0}}],
            'vnfcInfo': [{'id': 'masterNode-srv-1', 'vduId': 'masterNode',
                          'vnfcResourceInfoId': 'srv-1',
                          'vnfcState': 'STARTED'}],
            'metadata': {'stack_id': 'stack-1'}},
        'metadata': {'VDU_VNFc_mapping': {'masterNode': ['srv-1']},
                     'kubernetes_mgmt': '{"format": 2}'},
    }


def _script_input(operation: str) -> dict:
    return {'operation': operation,
            'request': {'vnfInstanceName': 'renamed',
                        'metadata': {'owner': 'x'}},
            'vnf_instance': _instance(),
            'grant_request': None, 'grant_response': None,
            'tmp_csar_dir': '/nonexistent/csar',
            'user_script_err_handling_data': {}}


def _run_script(stdin: bytes, tmp_path):
    # As the conductor: the script's path, inputs on stdin, elsewhere.
    return subprocess.run([sys.executable, SCRIPT], input=stdin,
                          capture_output=True, timeout=120, check=False,
                          cwd=tmp_path)


@pytest.mark.parametrize('operation', [
    'modify_information_start', 'modify_information_end',
    'change_external_connectivity_end', 'terminate_end'])
def test_an_operation_without_work_hands_the_instance_back(operation,
                                                           tmp_path):
    out = _run_script(pickle.dumps(_script_input(operation)), tmp_path)
    assert out.returncode == 0, out.stderr.decode()
    assert out.stderr == b''
    stream = io.BytesIO(out.stdout)
    result = pickle.load(stream)    # noqa: S301
    assert stream.read() == b''
    assert result == {'vnf_instance': _instance()}


def test_stdin_without_script_input_fails_with_nothing_on_stdout(tmp_path):
    out = _run_script(pickle.dumps({'request': {}}), tmp_path)
    assert out.returncode != 0
    assert out.stdout == b''
    assert b'no LCM script input' in out.stderr

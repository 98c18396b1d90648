"""The v2 package and its LCM script, with Tacker 16.0.0's v2 code.

``csar_utils.load_csar_data`` onboards the package as on ``openstack vnf
package upload`` (the v2 API shares Tacker's package store), and the v2
conductor's own ``Vnfd`` reads it: which script each LCM operation runs,
the BaseHOT of each flavour. Then Tacker's ``VnfLcmDriverV2`` runs the
script as it does for an operation, a child process with the pickled
inputs, and keeps what the script hands back (whole operations run in
the lab: tests/lab/test_tacker_v2_lab.py).
"""
from __future__ import annotations

import json
import secrets
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from kubernetes_mgmt.remote import identity, user_data
from kubernetes_mgmt.vnf_package import layout

SCRIPT = '../Scripts/tacker_kubernetes_mgmt_v2.py'
ROUTED = ('instantiate_start', 'instantiate_end', 'instantiate_rollback_start',
          'scale_start', 'scale_end', 'scale_rollback_start', 'heal_start',
          'heal_end', 'terminate_start')
FLAVOURS = {'simple': {'masterNode': 1, 'workerNode': 2},
            'complex': {'masterNode': 3, 'workerNode': 2}}


@pytest.fixture(scope='module')
def v2_csar(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp('csar-v2') / 'kubernetes_mgmt_v2.zip'
    for argv in (['build', '--v2', '-o', str(out)], ['verify', str(out)]):
        done = subprocess.run(
            [sys.executable, '-m', 'kubernetes_mgmt.cli', 'package', *argv],
            capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.fixture(scope='module')
def v2_onboarded(v2_csar, csar_path, tacker_context):
    from tacker.common import csar_utils

    package_uuid = str(uuid.uuid4())
    vnf_data, flavours, _ = csar_utils.load_csar_data(
        tacker_context.elevated(), package_uuid, str(v2_csar))
    return vnf_data, {f['flavour_id']: f for f in flavours}, \
        csar_path / package_uuid


@pytest.fixture(scope='module')
def v2_vnfd(v2_onboarded):
    from tacker.sol_refactored.common import vnfd_utils

    vnf_data, _, root = v2_onboarded
    vnfd = vnfd_utils.Vnfd(vnf_data['descriptor_id'])
    vnfd.init_from_csar_dir(str(root))
    return vnfd


def test_tacker_onboards_the_v2_package(v2_onboarded):
    vnf_data, flavours, root = v2_onboarded
    assert set(flavours) == set(FLAVOURS)
    assert vnf_data['provider'] == 'tacker-kubernetes-mgmt'
    assert (root / layout.DRIVER_V2_FILE).is_file()
    assert not (root / layout.DRIVER_FILE).exists()


@pytest.mark.parametrize('flavour', sorted(FLAVOURS))
@pytest.mark.parametrize('operation', ROUTED)
def test_every_routed_operation_runs_the_script(v2_vnfd, flavour,
                                                operation):
    assert v2_vnfd.get_interface_script(flavour, operation) == SCRIPT


@pytest.mark.parametrize('flavour', sorted(FLAVOURS))
def test_base_hot_has_a_resource_per_vdu(v2_vnfd, flavour):
    hot = v2_vnfd.get_base_hot(flavour)
    vdus = set(v2_vnfd.get_vdu_nodes(flavour))
    assert vdus == set(FLAVOURS[flavour])
    # Tacker's standard user data replaces each VDU's resource by one
    # per VM: the resource is named after the VDU, typed by its template.
    for vdu in vdus:
        assert hot['template']['resources'][vdu]['type'] in hot['files']
    assert v2_vnfd.get_default_instantiation_level(flavour) == \
        'instantiation_level_1'


# -- the script as Tacker's v2 conductor runs it ------------------------------

def _instance():
    from tacker.sol_refactored import objects

    objects.register_all()
    return objects.VnfInstanceV2(
        id=str(uuid.uuid4()), vnfdId=str(uuid.uuid4()),
        vnfProvider='tacker-kubernetes-mgmt',
        vnfProductName='Kubernetes cluster (v2 API)',
        vnfSoftwareVersion='1.0', vnfdVersion='1.0',
        instantiationState='NOT_INSTANTIATED',
        metadata={'VDU_VNFc_mapping': {}})


VM_PASSWORD = secrets.token_hex(8)      # a password of this run


def _request(master_port: bool = True):
    """The complex sample (with the VMs' password); without
    ``master_port`` the master's SSH port name is missing."""
    from tacker.sol_refactored import objects

    path = layout.request_v2_samples_dir() / \
        'instantiate_complex_request.json'
    body = json.loads(path.read_text(encoding='utf-8'))
    param = body['additionalParams']['k8s_cluster_installation_param']
    for group in ('master_node', 'worker_node'):
        param[group]['password'] = VM_PASSWORD
    if not master_port:
        del param['master_node']['ssh_cp_name']
    return objects.InstantiateVnfRequest.from_dict(body)


@pytest.fixture
def script_conf(tacker_conf, tmp_path, monkeypatch):
    """The tacker.conf the LCM script finds (in ``~/.tacker``, where
    oslo.config looks when the parent's command line names none), with a
    state key of this test: the script creates no key in /etc. This
    process uses the same key."""
    key = tmp_path / 'state.key'
    conf_dir = tmp_path / 'home' / '.tacker'
    conf_dir.mkdir(parents=True)
    (conf_dir / 'tacker.conf').write_text(
        f'[kubernetes_mgmt]\nstate_key_file = {key}\n')
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    tacker_conf.set_override('state_key_file', str(key), 'kubernetes_mgmt')
    yield key
    tacker_conf.clear_override('state_key_file', 'kubernetes_mgmt')


def _run(v2_vnfd, operation: str, req, inst):
    """Tacker's VnfLcmDriverV2 runs the script: (its failure or None,
    the handling data Tacker keeps for a retry)."""
    from tacker.sol_refactored.common import exceptions as sol_ex
    from tacker.sol_refactored.conductor import vnflcm_driver_v2

    driver = vnflcm_driver_v2.VnfLcmDriverV2.__new__(
        vnflcm_driver_v2.VnfLcmDriverV2)    # no NFVO client needed
    handling: dict = {}
    try:
        driver._exec_mgmt_driver_script(operation, 'complex', req, inst,
                                        None, None, v2_vnfd, handling)
    except sol_ex.MgmtDriverExecutionFailed as exc:
        return exc, handling
    return None, handling


def test_a_valid_request_passes_and_the_vms_get_the_drivers_key(
        script_conf, v2_vnfd):
    inst = _instance()
    before = inst.to_dict()
    assert _run(v2_vnfd, 'instantiate_start', _request(), inst) == \
        (None, {})
    after = inst.to_dict()
    # Only the user data for the package's user data class was added:
    # the driver's public key for every login user, no password.
    text = after['metadata'].pop(user_data.PARAMETER)
    assert after == before
    config = yaml.safe_load(text)
    expected = identity.public_line(identity.login_key(inst.id), inst.id)
    assert {u['name']: u['ssh_authorized_keys'] for u in config['users']
            if isinstance(u, dict)} == {'ubuntu': [expected]}
    assert VM_PASSWORD not in text


def test_a_bad_request_fails_with_the_driver_message(script_conf, v2_vnfd):
    inst = _instance()
    failed, handling = _run(v2_vnfd, 'instantiate_start',
                            _request(master_port=False), inst)
    detail = str(failed.detail)
    assert detail.startswith('instantiate_start failed:')
    assert 'master_node.ssh_cp_name' in detail
    # Only the driver's message: no traceback, no library warning.
    assert 'Traceback' not in detail and 'Warning' not in detail
    assert VM_PASSWORD not in detail
    # Tacker unpickles all of the script's stdout or drops it: what the
    # script hands on to a retry arrives only if nothing else was there.
    assert 'kubernetes_mgmt' in handling
    assert VM_PASSWORD not in json.dumps(handling)

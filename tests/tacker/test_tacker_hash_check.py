"""Tacker's Mgmt Driver hash check passes for the built package.

Tacker 16 (tacker/vnflcm/vnflcm_driver.py): ``VnfLcmDriver.__init__``
hashes ``inspect.getfile`` of every configured driver's class with
``_init_mgmt_driver_hash``/``_get_file_hash`` (SHA-256 of the file read as
text); before each hook ``_load_vnf_interface`` reads the VNFD of the
instance's flavour, finds the package on disk from ``vnfd_id`` and calls
``_check_mgmt_driver``, which hashes the package's artifact file the same
way and refuses the operation if the two differ. All of these are called
here, not re-implemented.
"""
import inspect
import uuid

import pytest

from kubernetes_mgmt.params.package_file import package_file
from kubernetes_mgmt.shim import package_source as package

HOOKS = ('instantiate_end', 'scale_start', 'scale_end', 'heal_start',
         'heal_end', 'terminate_start', 'terminate_end')
DRIVER = 'mgmt-drivers-kubernetes'


def _instance(tacker_context, vnfd_id):
    from tacker import objects

    return objects.VnfInstance(context=tacker_context, id=str(uuid.uuid4()),
                               vnfd_id=vnfd_id)


def test_same_hash_for_installed_module_and_package_file(lcm_driver,
                                                         onboarded):
    loaded = lcm_driver._mgmt_manager[DRIVER]
    installed = inspect.getfile(loaded.__class__)
    in_package = onboarded.root / 'Scripts' / 'kubernetes_mgmt.py'
    # Tacker's own hash function, on both files.
    assert lcm_driver._get_file_hash(installed) == \
        lcm_driver._get_file_hash(str(in_package))
    # ... and the value Tacker computed at start-up is that one.
    assert lcm_driver._mgmt_driver_hash[DRIVER] == \
        lcm_driver._get_file_hash(str(in_package))


@pytest.mark.parametrize('flavour_id', ['simple', 'complex'])
def test_every_routed_hook_passes_tackers_check(lcm_driver, vnfd_in_db,
                                                tacker_context, flavour_id):
    from tacker.vnflcm import utils as vnflcm_utils

    instance = _instance(tacker_context, vnfd_in_db.vnfd_id)
    # What Tacker reads before each hook: the flavour's VNFD from the
    # unpacked package, found through the instance's vnfd_id.
    vnfd_dict = vnflcm_utils._get_vnfd_dict(
        tacker_context, instance.vnfd_id, flavour_id)
    for hook in HOOKS:
        assert lcm_driver._load_vnf_interface(
            tacker_context, hook, instance, vnfd_dict) == DRIVER, hook
    # Hooks the VNFD does not route go to vnflcm_noop.
    assert lcm_driver._load_vnf_interface(
        tacker_context, 'modify_information_start', instance,
        vnfd_dict) == 'vnflcm_noop'


def test_check_mgmt_driver_itself_passes(lcm_driver, onboarded):
    artifacts = {DRIVER: {'file': 'Scripts/kubernetes_mgmt.py'}}
    assert lcm_driver._check_mgmt_driver(
        DRIVER, artifacts, str(onboarded.root)) == DRIVER


def test_check_mgmt_driver_refuses_a_changed_file(lcm_driver, onboarded,
                                                  tmp_path):
    """The check is live: one byte more and Tacker refuses."""
    from tacker.common import exceptions

    changed = tmp_path / 'Scripts' / 'kubernetes_mgmt.py'
    changed.parent.mkdir()
    changed.write_bytes((onboarded.root / 'Scripts' /
                         'kubernetes_mgmt.py').read_bytes() + b'\n')
    artifacts = {DRIVER: {'file': 'Scripts/kubernetes_mgmt.py'}}
    with pytest.raises(exceptions.MgmtDriverHashMatchFailure):
        lcm_driver._check_mgmt_driver(DRIVER, artifacts, str(tmp_path))


def test_driver_finds_the_package_tacker_unpacked(vnfd_in_db,
                                                  tacker_context):
    """With vnf_package_source = tacker (the default) the driver reads
    package files from where Tacker unpacked the package, found through
    ``vnfd_id``."""
    from tacker.vnflcm import utils as vnflcm_utils

    instance = _instance(tacker_context, vnfd_in_db.vnfd_id)
    found = package.package_dir(tacker_context, instance)
    assert found == vnfd_in_db.root
    assert str(found) == vnflcm_utils._get_vnf_package_path(
        tacker_context, instance.vnfd_id)
    assert package_file(found, 'Scripts/install_k8s_cluster.sh')

"""The driver as Tacker's conductor loads and calls it."""
import inspect

import stevedore

from kubernetes_mgmt import kubernetes_mgmt as shim

# Parameter names of every hook, as Tacker 16's VnflcmMgmtAbstractDriver
# declares them. Tacker calls hooks with keyword arguments.
_COMMON = ['self', 'context', 'vnf_instance']


def _with_grant(request):
    return [*_COMMON, request, 'grant', 'grant_request', 'kwargs']


EXPECTED_HOOKS = {
    'instantiate_start': _with_grant('instantiate_vnf_request'),
    'instantiate_end': _with_grant('instantiate_vnf_request'),
    'terminate_start': _with_grant('terminate_vnf_request'),
    'terminate_end': _with_grant('terminate_vnf_request'),
    'scale_start': _with_grant('scale_vnf_request'),
    'scale_end': _with_grant('scale_vnf_request'),
    'heal_start': _with_grant('heal_vnf_request'),
    'heal_end': _with_grant('heal_vnf_request'),
    'change_external_connectivity_start':
        _with_grant('change_ext_conn_request'),
    'change_external_connectivity_end':
        _with_grant('change_ext_conn_request'),
    'modify_information_start': [*_COMMON, 'modify_vnf_request', 'kwargs'],
    'modify_information_end': [*_COMMON, 'modify_vnf_request', 'kwargs'],
}


def test_stevedore_loads_driver_by_entry_point_name():
    manager = stevedore.DriverManager(
        'tacker.tacker.mgmt.drivers', 'mgmt-drivers-kubernetes',
        invoke_on_load=True)
    driver = manager.driver
    assert isinstance(driver, shim.KubernetesMgmtDriver)
    # Tacker keys loaded drivers by get_type(); it must equal the name.
    assert driver.get_type() == 'mgmt-drivers-kubernetes'
    assert driver.get_name() == 'mgmt-drivers-kubernetes'


def test_every_hook_has_tackers_parameter_names():
    cls = shim.KubernetesMgmtDriver
    for hook, expected in EXPECTED_HOOKS.items():
        params = list(inspect.signature(getattr(cls, hook)).parameters)
        assert params == expected, hook


def test_hooks_without_work_are_noops_that_accept_tacker_kwargs():
    driver = shim.KubernetesMgmtDriver()

    class Instance:
        id = 'inst-1'
        vnf_metadata = {}

    for hook in ('change_external_connectivity_start',
                 'change_external_connectivity_end'):
        assert getattr(driver, hook)(
            context=None, vnf_instance=Instance(),
            **{EXPECTED_HOOKS[hook][3]: None}, grant=None,
            grant_request=None, vnf={}) is None
    assert driver.modify_information_end(
        context=None, vnf_instance=Instance(), modify_vnf_request=None) \
        is None


def test_shim_module_is_small_and_only_forwards():
    # Tacker hashes this file; it must stay a thin, stable forwarder.
    source = inspect.getsource(shim)
    assert len(source.splitlines()) < 130
    imports = [line for line in source.splitlines()
               if line.startswith(('import ', 'from '))]
    assert imports == ['from kubernetes_mgmt import lifecycle']
    assert inspect.getfile(shim.KubernetesMgmtDriver).endswith('.py')

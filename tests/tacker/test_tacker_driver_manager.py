"""Tacker's own DriverManager loads our driver next to ``vnflcm_noop``.

tacker-conductor builds exactly this manager from
``[tacker] vnflcm_mgmt_driver``; it keys drivers by ``get_type()`` and
looks them up by the configured names.
"""
import inspect

from tacker.common import driver_manager
from tacker.vnfm.mgmt_drivers import vnflcm_abstract_driver

from kubernetes_mgmt.kubernetes_mgmt import KubernetesMgmtDriver

NAMES = ['vnflcm_noop', 'mgmt-drivers-kubernetes']


def test_tackers_driver_manager_loads_both_by_type():
    manager = driver_manager.DriverManager('tacker.tacker.mgmt.drivers',
                                           NAMES)
    for name in NAMES:
        assert name in manager
        assert manager[name].get_type() == name
    assert type(manager['mgmt-drivers-kubernetes']) is KubernetesMgmtDriver


def test_driver_is_a_real_subclass_of_tackers_abc():
    base = vnflcm_abstract_driver.VnflcmMgmtAbstractDriver
    manager = driver_manager.DriverManager('tacker.tacker.mgmt.drivers',
                                           NAMES)
    driver = manager['mgmt-drivers-kubernetes']
    assert isinstance(driver, base)
    assert issubclass(KubernetesMgmtDriver, base)
    # Instantiation would already fail, but say which hook is missing.
    assert not getattr(KubernetesMgmtDriver, '__abstractmethods__', None)
    assert not inspect.isabstract(KubernetesMgmtDriver)
    # Every hook Tacker's ABC declares is implemented here, not inherited.
    for name in base.__abstractmethods__:
        assert name in vars(KubernetesMgmtDriver), name

"""Tacker 16's kubernetes VIM driver keeps the key of a VIM's token in
Barbican only: with ``[k8s_vim] use_barbican = False`` it refuses every
kubernetes VIM. Our registry says so before an operation touches a host,
rather than after a whole cluster installation."""
import pytest
from oslo_config import cfg
from tacker.extensions import nfvo
from tacker.nfvo.drivers.vim import kubernetes_driver

from kubernetes_mgmt.vim.registration import VimError
from kubernetes_mgmt.vim.tacker_registry import TackerVimRegistry


@pytest.fixture
def use_barbican():
    def set_to(value: bool) -> None:
        cfg.CONF.set_override('use_barbican', value, group='k8s_vim')
    yield set_to
    cfg.CONF.clear_override('use_barbican', group='k8s_vim')


def test_tacker_refuses_a_kubernetes_vim_without_barbican(use_barbican):
    # The fact the check relies on, from Tacker's own driver.
    use_barbican(False)
    driver = kubernetes_driver.Kubernetes_Driver()
    with pytest.raises(nfvo.VimEncryptKeyError):
        driver.encode_vim_auth('vim-1', {'bearer_token': 'not-a-token'})


def test_registry_refuses_before_any_host_when_barbican_is_off(
        use_barbican):
    use_barbican(False)
    with pytest.raises(VimError, match=r'\[k8s_vim\] use_barbican'):
        TackerVimRegistry().check_ready()


def test_registry_is_ready_with_barbican(use_barbican):
    use_barbican(True)
    TackerVimRegistry().check_ready()

"""The lab's implementations of the product's seams.

Registered in the lab's setup.cfg under the product's entry-point groups
(``kubernetes_mgmt.heat_clients``: ``lab``, ``kubernetes_mgmt.
vim_registries``: ``file``, ``kubernetes_mgmt.package_sources``:
``directory``); each reads its settings from ``[kubernetes_mgmt_lab]``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes_mgmt import redact
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.vim.registration import VimError
from kubernetes_mgmt_lab.conf import CONF, GROUP, register_opts

LOG = redact.get_logger(__name__)


def _lab_options(conf: Any = None) -> Any:
    conf = CONF if conf is None else conf
    register_opts(conf)    # a no-op once done; tests bring their own conf
    return getattr(conf, GROUP)


def heat_client(vnf_instance: Any, context: Any = None) -> Any:
    """A heatclient for the real Heat of a services root (``heat_client =
    lab``), as ``heat_username`` of ``heat_project`` at ``heat_auth_url``."""
    options = _lab_options()
    if not options.heat_auth_url:
        raise MgmtDriverError(
            f'heat_client = lab needs [{GROUP}] heat_auth_url (and '
            'heat_username, heat_password, heat_project)')
    from kubernetes_mgmt_lab.openstack import access

    redact.register(options.heat_password)
    LOG.debug('using the Heat of Keystone %s', options.heat_auth_url)
    return access.heat_client(access.keystone_auth(
        options.heat_auth_url, options.heat_username,
        options.heat_password, options.heat_project))


def file_vim_registry(conf: Any = None) -> Any:
    """The JSON file registry (``vim_registry = file``)."""
    path = _lab_options(conf).vim_registry_file
    if not path:
        raise VimError(f'vim_registry = file needs vim_registry_file in '
                       f'[{GROUP}]')
    from kubernetes_mgmt_lab.file_registry import FileVimRegistry
    return FileVimRegistry(path)


def package_dir(context: Any, vnf_instance: Any) -> Path:
    """A directory as the VNF package (``vnf_package_source =
    directory``)."""
    path = _lab_options().vnf_package_dir
    if not path:
        raise MgmtDriverError(
            f'vnf_package_source = directory needs [{GROUP}] '
            'vnf_package_dir')
    return Path(path)

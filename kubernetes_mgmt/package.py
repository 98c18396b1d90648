"""Files of the VNF package (install script, manifests).

Inside Tacker the package is unpacked under
``[vnf_package] vnf_package_csar_path``; the lab and tests point
``[kubernetes_mgmt] vnf_package_dir`` at a directory instead. Paths come
from the request and were validated to be relative; they are resolved here
once more so that a symlink cannot lead outside the package.
"""
from __future__ import annotations

from pathlib import Path

from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import MgmtDriverError


def package_dir(context, vnf_instance) -> Path:
    override = CONF.kubernetes_mgmt.vnf_package_dir
    if override:
        return Path(override)
    try:
        from tacker.vnflcm import utils as vnflcm_utils
    except ImportError as exc:
        raise MgmtDriverError(
            'cannot find the VNF package: set [kubernetes_mgmt] '
            'vnf_package_dir or run inside Tacker') from exc
    return Path(vnflcm_utils._get_vnf_package_path(
        context, vnf_instance.vnfd_id))


def package_file(root: Path, relative: str) -> Path:
    """The package file ``relative`` (must exist and stay inside)."""
    base = root.resolve()
    path = (base / relative).resolve()
    if base != path and base not in path.parents:
        raise MgmtDriverError(f'{relative!r} leads outside the VNF package')
    if not path.is_file():
        raise MgmtDriverError(f'the VNF package ({root}) has no file '
                              f'{relative!r}')
    return path

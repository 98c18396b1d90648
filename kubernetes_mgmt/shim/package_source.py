"""Where the VNF package's files are, for one VNF instance.

``[kubernetes_mgmt] vnf_package_source`` names the source (entry-point
group ``kubernetes_mgmt.package_sources``). The product's ``tacker``
source is the package Tacker unpacked under ``[vnf_package]
vnf_package_csar_path``; only the shim asks, and hands the operations the
directory (``params.package_file`` resolves a file inside it).
"""
from __future__ import annotations

from pathlib import Path

from kubernetes_mgmt import seams
from kubernetes_mgmt.errors import MgmtDriverError


def package_dir(context, vnf_instance) -> Path:
    """The VNF package's directory, from the configured source:
    ``source(context, vnf_instance)``."""
    source = seams.chosen(seams.PACKAGE_SOURCES)
    return Path(source(context, vnf_instance))


def tacker_package_dir(context, vnf_instance) -> Path:
    """The package Tacker unpacked for the VNF (entry point ``tacker``)."""
    try:
        from tacker.vnflcm import utils as vnflcm_utils
    except ImportError as exc:
        raise MgmtDriverError(
            'cannot find the VNF package: [kubernetes_mgmt] '
            'vnf_package_source = tacker needs Tacker (run inside '
            'Tacker, or name another source)') from exc
    return Path(vnflcm_utils._get_vnf_package_path(
        context, vnf_instance.vnfd_id))

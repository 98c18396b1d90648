"""A file of the VNF package named by the request (install script,
manifests). The request's paths were validated to be relative; they are
resolved here once more so that a symlink cannot lead outside the package.
"""
from __future__ import annotations

from pathlib import Path

from kubernetes_mgmt.errors import MgmtDriverError


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

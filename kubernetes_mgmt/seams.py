"""Seams: implementations chosen by name through stevedore entry points.

The product ships a ``tacker`` implementation of each seam (inside
tacker-conductor); other distributions, such as the lab, register their
own under the same entry-point group, and an option of
``[kubernetes_mgmt]`` names the one to use.
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata
from typing import Any

from stevedore import driver, exception

from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import MgmtDriverError


@dataclass(frozen=True)
class Seam:
    """An entry-point group and the option of ``[kubernetes_mgmt]`` that
    names one of its entry points."""

    group: str
    option: str


HEAT_CLIENTS = Seam('kubernetes_mgmt.heat_clients', 'heat_client')
VIM_REGISTRIES = Seam('kubernetes_mgmt.vim_registries', 'vim_registry')
PACKAGE_SOURCES = Seam('kubernetes_mgmt.package_sources',
                       'vnf_package_source')


def available(seam: Seam) -> list[str]:
    """Names registered in the seam's group by installed distributions
    (read, not imported)."""
    return sorted({e.name for e in metadata.entry_points(group=seam.group)})


def load(seam: Seam, name: str) -> Any:
    """The object registered as ``name`` for ``seam``; an unknown name
    is refused with the option and the names that exist."""
    def failed(_manager, entry_point, error) -> None:
        raise MgmtDriverError(
            f'[kubernetes_mgmt] {seam.option} = {name!r}: cannot load '
            f'{entry_point.value}: {error}') from error

    try:
        return driver.DriverManager(
            seam.group, name, on_load_failure_callback=failed).driver
    except exception.NoMatches:
        names = ', '.join(available(seam)) or 'none'
        raise MgmtDriverError(
            f'[kubernetes_mgmt] {seam.option} = {name!r}: no such '
            f'implementation in entry-point group {seam.group} '
            f'(available: {names})') from None


def chosen(seam: Seam, conf: Any = None) -> Any:
    """The implementation the seam's option names in ``conf``."""
    group = (CONF if conf is None else conf).kubernetes_mgmt
    return load(seam, getattr(group, seam.option))

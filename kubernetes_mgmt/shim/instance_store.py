"""The ``InstanceStore`` of a Tacker VNF instance: the one object through
which the operations reach what Tacker keeps for the instance (v1: its
versioned object; v2: its dict, seen through ``v2.instance``)."""
from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kubernetes_mgmt.shim import vim_connection
from kubernetes_mgmt.shim.package_source import package_dir
from kubernetes_mgmt.state import instance_state
from kubernetes_mgmt.state.instance_state import DriverState
from kubernetes_mgmt.topology.heat_client import heat_client_for
from kubernetes_mgmt.vim.registration import VimRecord
from kubernetes_mgmt.vim.registry import SiteVims, registry_for


class TackerInstanceStore:
    """Bound to one hook call: the instance and the request context."""

    def __init__(self, vnf_instance: Any, context: Any = None,
                 package_root: Path | None = None):
        """``package_root``: the package the operation runs with, when
        it is not the instance's (a ChangeCurrentVnfPackage's new one)."""
        self._instance = vnf_instance
        self._context = context
        self._heat: Any = None
        self._package_root = package_root

    @functools.cached_property
    def vims(self) -> SiteVims:
        return SiteVims(registry_for(), self._context)

    def load(self) -> DriverState:
        return instance_state.load(self._instance)

    def save(self, state: DriverState) -> None:
        instance_state.save(self._instance, state)

    def forget(self) -> None:
        instance_state.forget(self._instance)
        if callable(getattr(self._instance, 'save', None)):
            self._instance.save()   # vim_connection_info may have changed

    def heat(self) -> Any:
        """One client for the call (its Keystone session is reused)."""
        if self._heat is None:
            self._heat = heat_client_for(self._instance, self._context)
        return self._heat

    def package_root(self) -> Path:
        if self._package_root is not None:
            return self._package_root
        return package_dir(self._context, self._instance)

    def add_vim_connection(self, record: VimRecord, ca_cert: str) -> None:
        vim_connection.add_vim_connection(self._instance, record, ca_cert)

    def remove_vim_connection(self, vim_id: str) -> None:
        vim_connection.remove_vim_connection(self._instance, vim_id)

    def publish(self, values: Mapping[str, str]) -> None:
        # v1 keeps vnf_metadata as a dict of strings; v2 as JSON.
        metadata = dict(getattr(self._instance, 'vnf_metadata', None) or {})
        metadata.update({k: str(v) for k, v in values.items()})
        self._instance.vnf_metadata = metadata

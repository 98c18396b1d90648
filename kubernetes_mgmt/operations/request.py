"""What an operation is given: one typed request and the instance's
store, both made by the shim from Tacker's objects.

The operations never see Tacker's ``vnf_instance`` or ``context``: what
they read of them is in ``OperationRequest``, and what they ask of Tacker
(the driver's stored state, the Heat client of the instance's stack, the
package's files, the VIMs, the instance's VIM connections) goes through
``InstanceStore``.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.params.cluster_params import ClusterParams
from kubernetes_mgmt.state.instance_state import DriverState
from kubernetes_mgmt.vim.registration import VimRecord
from kubernetes_mgmt.vim.registry import SiteVims

SCALE_OUT = 'SCALE_OUT'
SCALE_IN = 'SCALE_IN'


@dataclass(frozen=True)
class Vnfc:
    """A VNFC of the instance, as Tacker last recorded it."""

    id: str
    vdu_id: str
    server_id: str      # the Nova server


@dataclass(frozen=True)
class ScaleRequest:
    kind: str           # SCALE_OUT or SCALE_IN, as given
    aspect_id: str


@dataclass(frozen=True)
class OperationRequest:
    """One hook call. ``params``: the instantiate request's cluster
    parameters, validated (None where the operation needs none)."""

    instance_id: str
    params: ClusterParams | None = None
    stack_id: str | None = None
    # VNFC id -> its server, as Tacker last recorded them.
    vnfcs: Mapping[str, Vnfc] = field(default_factory=dict)
    # Nova server id -> the availability zone a grant gave its VM.
    zones: Mapping[str, str] = field(default_factory=dict)
    # vnfConfigurableProperties.isAutohealEnabled: an alert may heal.
    autoheal: bool = False
    # The request replaced the stored registries (params.rotation): the
    # nodes outside the operation get them too.
    registries_replaced: bool = False

    def vnfc_of_server(self) -> dict[str, str]:
        """Nova server id -> the VNFC id Tacker records for it."""
        return {v.server_id: v.id for v in self.vnfcs.values()
                if v.server_id}

    def stack(self) -> str:
        """The Heat stack Tacker created for the instance."""
        if not self.stack_id:
            raise MgmtDriverError(
                f'VNF instance {self.instance_id} has no Heat stack id '
                '(instantiated_vnf_info.instance_id is empty)')
        return self.stack_id

    def cluster_params(self) -> ClusterParams:
        if self.params is None:
            raise MgmtDriverError(
                f'VNF instance {self.instance_id} has no stored '
                'instantiate parameters (instantiated_vnf_info.'
                'additional_params is empty): it was not instantiated '
                'with this driver')
        return self.params


class InstanceStore(Protocol):
    """What an operation may ask of Tacker about its VNF instance."""

    vims: SiteVims

    def load(self) -> DriverState:
        """The driver's stored state; refuses one edited, blanked or
        rolled back."""

    def save(self, state: DriverState) -> None:
        """Sign and store ``state`` in the instance."""

    def forget(self) -> None:
        """The driver's state leaves the instance, which is saved."""

    def heat(self) -> Any:
        """A Heat client for the instance's stack."""

    def package_root(self) -> Path:
        """The directory of the instance's VNF package."""

    def add_vim_connection(self, record: VimRecord, ca_cert: str) -> None:
        """The cluster's VIM among the instance's VIM connections."""

    def remove_vim_connection(self, vim_id: str) -> None:
        """No VIM connection of the instance names ``vim_id``."""

    def publish(self, values: Mapping[str, str]) -> None:
        """Facts for operators and monitors (the cluster's version, its
        certificates' expiry) in the instance's metadata, beside the
        driver's state: plain strings, read by anyone, trusted by none
        of the driver's decisions."""

"""Stand-ins for the Tacker objects the hooks receive, for the lab.

Only the attributes the driver reads exist; names follow
``tacker.objects`` (VnfInstance, InstantiatedVnfInfo, VnfcResourceInfo,
ResourceHandle, InstantiateVnfRequest, ScaleVnfRequest, HealVnfRequest,
TerminateVnfRequest, Grant, ZoneInfo, GrantInfo) so the same driver
code runs unchanged inside Tacker.
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

# The product's own shape, used by the driver when Tacker is absent.
from kubernetes_mgmt.shim.vim_connection import VimConnectionInfo


@dataclass
class ResourceHandle:
    resource_id: str                     # e.g. the Nova server id
    vim_connection_id: str | None = None
    vim_level_resource_type: str = 'OS::Nova::Server'


@dataclass
class VnfcResourceInfo:
    id: str                              # the VNFC instance id
    vdu_id: str
    compute_resource: ResourceHandle
    # Tacker keeps the nested stack of the group member here.
    metadata: dict = field(default_factory=dict)


@dataclass
class InstantiatedVnfInfo:
    instance_id: str = ''                # the Heat stack id (VNFs)
    flavour_id: str = 'simple'
    additional_params: dict = field(default_factory=dict)
    vnfc_resource_info: list[VnfcResourceInfo] = field(
        default_factory=list)
    metadata: dict = field(default_factory=dict)


@dataclass
class VnfInstance:
    id: str
    instantiated_vnf_info: InstantiatedVnfInfo | None = None
    vim_connection_info: list[VimConnectionInfo] = field(
        default_factory=list)
    vnf_metadata: dict = field(default_factory=dict)
    saves: int = 0
    vnfd_id: str = ''
    tenant_id: str = 'tenant-1'

    def save(self) -> None:
        # Tacker persists the object; here we only count, so tests can
        # check that the driver saved what it changed.
        self.saves += 1


@dataclass
class InstantiateVnfRequest:
    flavour_id: str
    additional_params: dict = field(default_factory=dict)
    vim_connection_info: list = field(default_factory=list)
    instantiation_level_id: str | None = None

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> InstantiateVnfRequest:
        return cls(flavour_id=body.get('flavourId', ''),
                   additional_params=dict(body.get('additionalParams', {})),
                   vim_connection_info=list(
                       body.get('vimConnectionInfo', [])))

    @classmethod
    def from_file(cls, path: str) -> InstantiateVnfRequest:
        with open(path, encoding='utf-8') as f:
            return cls.from_body(json.load(f))


@dataclass
class ScaleVnfRequest:
    type: str                            # SCALE_OUT | SCALE_IN
    aspect_id: str
    number_of_steps: int = 1
    additional_params: dict = field(default_factory=dict)


@dataclass
class HealVnfRequest:
    # Empty: heal the whole VNF (SOL003).
    vnfc_instance_id: list[str] = field(default_factory=list)
    cause: str | None = None
    additional_params: dict = field(default_factory=dict)


@dataclass
class TerminateVnfRequest:
    termination_type: str = 'FORCEFUL'
    graceful_termination_timeout: int = 0
    additional_params: dict = field(default_factory=dict)


@dataclass
class ZoneInfo:
    id: str                              # referred to by GrantInfo.zone_id
    zone_id: str                         # the availability zone's name
    vim_connection_id: str | None = None


@dataclass
class GrantInfo:
    resource_definition_id: str          # a VNFC id for compute resources
    zone_id: str | None = None
    vim_connection_id: str | None = None


@dataclass
class Grant:
    zones: list[ZoneInfo] = field(default_factory=list)
    add_resources: list[GrantInfo] = field(default_factory=list)
    update_resources: list[GrantInfo] = field(default_factory=list)


def vnf_instance_for_stack(stack_id: str,
                           request: InstantiateVnfRequest) -> VnfInstance:
    """A VNF instance as Tacker hands it to instantiate_end."""
    return VnfInstance(
        id=str(uuid.uuid4()),
        instantiated_vnf_info=InstantiatedVnfInfo(
            instance_id=stack_id, flavour_id=request.flavour_id),
        vim_connection_info=[VimConnectionInfo(
            id=str(uuid.uuid4()), vim_id=str(uuid.uuid4()),
            vim_type='openstack')])

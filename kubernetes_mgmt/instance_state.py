"""What the driver remembers about a VNF instance, kept in Tacker.

The driver object is shared by concurrent operations, so nothing lives on
it; later hooks read what earlier hooks stored in the VNF instance's
``vnf_metadata`` under one key. Tacker declares that field a
``DictOfStringsField`` (a dict value raises ValueError on assignment), so
our state is stored there as one JSON string.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from kubernetes_mgmt.errors import MgmtDriverError

METADATA_KEY = 'kubernetes_mgmt'


@dataclass
class NodeRecord:
    name: str
    role: str
    ip: str


@dataclass
class DriverState:
    host_keys: dict[str, str] = field(default_factory=dict)
    # Nova server id -> the Kubernetes node it became.
    nodes: dict[str, dict] = field(default_factory=dict)
    first_master: str | None = None     # server id
    stack_id: str | None = None         # the Heat stack the nodes are in
    control_plane_endpoint: str | None = None
    auth_url: str | None = None
    vim_id: str | None = None
    vim_name: str | None = None
    lb_port: int | None = None
    vrrp_router_id: int | None = None
    storage_server: str | None = None   # server id of the NFS server VM
    # heal_start -> heal_end: VNFC id -> the node being rebuilt
    # (NodeRecord fields plus the old server id).
    healing: dict[str, dict] = field(default_factory=dict)

    def node(self, server_id: str) -> NodeRecord | None:
        data = self.nodes.get(server_id)
        return NodeRecord(**data) if data else None

    def remember_node(self, server_id: str, record: NodeRecord) -> None:
        self.nodes[server_id] = dataclasses.asdict(record)

    def forget_node(self, server_id: str) -> NodeRecord | None:
        data = self.nodes.pop(server_id, None)
        return NodeRecord(**data) if data else None

    def node_records(self) -> dict[str, NodeRecord]:
        """Server id -> node, for every node remembered."""
        return {sid: NodeRecord(**data) for sid, data in self.nodes.items()}

    @classmethod
    def from_dict(cls, data: dict) -> DriverState:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def load(vnf_instance: Any) -> DriverState:
    metadata = getattr(vnf_instance, 'vnf_metadata', None) or {}
    stored = metadata.get(METADATA_KEY) or {}
    if isinstance(stored, str):
        try:
            stored = json.loads(stored)
        except ValueError as exc:
            raise MgmtDriverError(
                f'vnf_metadata[{METADATA_KEY!r}] of VNF instance '
                f'{getattr(vnf_instance, "id", "?")} is not the JSON this '
                f'driver stores: {exc}') from None
    return DriverState.from_dict(dict(stored))


def save(vnf_instance: Any, state: DriverState) -> None:
    metadata = dict(getattr(vnf_instance, 'vnf_metadata', None) or {})
    metadata[METADATA_KEY] = json.dumps(dataclasses.asdict(state),
                                        sort_keys=True)
    vnf_instance.vnf_metadata = metadata
    if callable(getattr(vnf_instance, 'save', None)):
        vnf_instance.save()


def forget(vnf_instance: Any) -> None:
    """Drop everything the driver stored (terminate)."""
    metadata = dict(getattr(vnf_instance, 'vnf_metadata', None) or {})
    if metadata.pop(METADATA_KEY, None) is not None:
        vnf_instance.vnf_metadata = metadata
        if callable(getattr(vnf_instance, 'save', None)):
            vnf_instance.save()

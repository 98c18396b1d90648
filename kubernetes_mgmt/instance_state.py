"""What the driver remembers about a VNF instance, kept in Tacker.

The driver object is shared by concurrent operations, so nothing lives on
it; later hooks read what earlier hooks stored in the VNF instance's
``vnf_metadata`` under one key. Tacker declares that field a
``DictOfStringsField`` (a dict value raises ValueError on assignment), so
our state is stored there as one JSON string.

Tacker also merges the metadata of ``PATCH /vnf_instances/{id}`` into that
field, so the state is signed (``integrity``): a state edited through
Tacker's API is refused, naming the field, before anything changes.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from kubernetes_mgmt import integrity, redact
from kubernetes_mgmt.cluster.record import ClusterRecord
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import MgmtDriverError

LOG = redact.get_logger(__name__)
METADATA_KEY = 'kubernetes_mgmt'
# 2: {"format": 2, "state": {...}, "signatures": {...}}; plugin 0.1 stored
# the state's fields directly, unsigned.
FORMAT = 2


class TamperedState(MgmtDriverError):
    """The stored state does not verify: it was edited outside the
    driver."""


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
    # What the cluster was built with (cluster.record), frozen at
    # instantiate.
    cluster: dict | None = None

    @property
    def record(self) -> ClusterRecord | None:
        return ClusterRecord.from_dict(self.cluster) if self.cluster \
            else None

    @record.setter
    def record(self, value: ClusterRecord | None) -> None:
        self.cluster = value.to_dict() if value is not None else None

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


def load(vnf_instance: Any, key_file: str | None = None) -> DriverState:
    """The stored state, verified (with the key in ``key_file``, default
    ``state_key_file``); an empty state when none is stored. Raises
    TamperedState (naming the fields) when it does not verify."""
    instance_id = _instance_id(vnf_instance)
    stored = _stored(vnf_instance, instance_id)
    if not stored:
        return DriverState()
    if stored.get('format') != FORMAT:
        return _legacy(vnf_instance, instance_id, stored)
    fields = stored.get('state')
    signatures = stored.get('signatures')
    if not isinstance(fields, dict) or not isinstance(signatures, dict):
        raise TamperedState(_where(instance_id) + ' lacks its state or '
                            'signatures' + _REFUSED)
    key = integrity.load_key(create=False, path=key_file)
    bad = integrity.tampered(key, instance_id, fields, signatures)
    if bad:
        raise TamperedState(
            f'{_where(instance_id)} was changed outside this driver '
            f'(e.g. through PATCH /vnf_instances/{instance_id}): '
            f'{", ".join(bad)} do not match the signed state' + _REFUSED)
    return DriverState.from_dict(fields)


_REFUSED = ('. The operation is refused and nothing was changed; restore '
            'the value this driver stored (the instance\'s earlier '
            'metadata), or terminate and instantiate the VNF again.')


def _instance_id(vnf_instance: Any) -> str:
    return str(getattr(vnf_instance, 'id', None) or '?')


def _where(instance_id: str) -> str:
    return f'vnf_metadata[{METADATA_KEY!r}] of VNF instance {instance_id}'


def _stored(vnf_instance: Any, instance_id: str) -> dict:
    metadata = getattr(vnf_instance, 'vnf_metadata', None) or {}
    stored = metadata.get(METADATA_KEY) or {}
    if isinstance(stored, str):
        try:
            stored = json.loads(stored)
        except ValueError as exc:
            raise TamperedState(
                f'{_where(instance_id)} is not the JSON this driver '
                f'stores: {exc}' + _REFUSED) from None
    if not isinstance(stored, dict):
        raise TamperedState(f'{_where(instance_id)} is not the JSON object '
                            'this driver stores' + _REFUSED)
    return stored


def _legacy(vnf_instance: Any, instance_id: str, stored: dict
            ) -> DriverState:
    """State stored unsigned by plugin 0.1: refused unless the operator
    trusts it for the upgrade; then it is signed at once."""
    if not CONF.kubernetes_mgmt.trust_unsigned_state:
        raise TamperedState(
            f'{_where(instance_id)} is not signed (stored by a plugin '
            'version before 0.2, or edited). If it was stored by an older '
            'version of this plugin, set [kubernetes_mgmt] '
            'trust_unsigned_state = true for the first operation on this '
            'instance' + _REFUSED)
    LOG.warning('instance %s: trusting unsigned driver state '
                '(trust_unsigned_state) and signing it', instance_id)
    state = DriverState.from_dict(stored)
    save(vnf_instance, state)
    return state


def save(vnf_instance: Any, state: DriverState) -> None:
    """Store ``state`` signed (the site key is created on first use)."""
    fields = dataclasses.asdict(state)
    key = integrity.load_key(create=True)
    metadata = dict(getattr(vnf_instance, 'vnf_metadata', None) or {})
    metadata[METADATA_KEY] = json.dumps({
        'format': FORMAT, 'state': fields,
        'signatures': integrity.sign(key, _instance_id(vnf_instance),
                                     fields)}, sort_keys=True)
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

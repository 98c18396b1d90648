"""What the driver remembers about a VNF instance, kept in Tacker.

The driver object is shared by concurrent operations, so nothing lives on
it; later hooks read what earlier hooks stored in the VNF instance's
``vnf_metadata`` under one key. Tacker declares that field a
``DictOfStringsField`` (a dict value raises ValueError on assignment), so
our state is stored there as one JSON string.

Tacker also merges the metadata of ``PATCH /vnf_instances/{id}`` into that
field, so the state is signed (``integrity``): a state edited through
Tacker's API is refused, naming the field, before anything changes. Each
save raises the state's generation, and this host remembers the highest
it has seen (``generations``), so that an older signed copy put back, or
the state blanked, is refused as well. Forgetting (terminate) stores an
empty state of the next generation rather than nothing: another
conductor host that saw the instance's older state then accepts its next
life.

When the floor rises: on a load, to the loaded generation if Tacker keeps
that state; on a save, once Tacker has it (v1: ``vnf_instance.save()``
returned). The v2 LCM script's instance has no ``save`` (Tacker keeps the
script's result after it exits, or nothing), so there only loads of what
Tacker handed the script raise the floor (``state_kept_by_tacker``): a
state Tacker never kept must not make the next operation refuse the one
it did keep.
"""
from __future__ import annotations

import dataclasses
import json
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kubernetes_mgmt import redact
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.state import generations, integrity
from kubernetes_mgmt.state.cluster_record import ClusterRecord

LOG = redact.get_logger(__name__)
METADATA_KEY = 'kubernetes_mgmt'
# A copy of certificates_expire_at beside the signed state, for operators
# and monitors: read, never trusted (each operation reads the masters).
EXPIRY_KEY = 'kubernetes_mgmt_certificates_expire_at'
# 3: {"format": 3, "generation": N, "key_id": ..., "state": {...},
#     "signatures": {...}};
# 2: the same without generation and key_id (stored before format 3);
# plugin 0.1 stored the state's fields directly, unsigned.
FORMAT = 3
FORMAT_WITHOUT_GENERATION = 2


class TamperedState(MgmtDriverError):
    """The stored state does not verify: it was edited outside the
    driver."""


class RolledBackState(TamperedState):
    """The stored state verifies but is older than one this host has
    seen, or was blanked."""


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
    # What the cluster was built with (state.cluster_record), frozen at
    # instantiate.
    cluster: dict | None = None
    # The latest etcd snapshot (cluster.etcd_snapshot.Snapshot.record):
    # name, time, sha256, where its copies are.
    etcd_snapshot: dict | None = None
    # When the first control-plane certificate of any master expires
    # (ISO 8601 UTC), as the last operation read it; also shown
    # unsigned under EXPIRY_KEY.
    certificates_expire_at: str | None = None
    # Node name -> when (epoch seconds) its heals completed, within
    # [kubernetes_mgmt] heal_repeat_window (cluster.heal_guard).
    heals: dict[str, list[float]] = field(default_factory=dict)

    @property
    def record(self) -> ClusterRecord | None:
        return ClusterRecord.from_dict(self.cluster) if self.cluster \
            else None

    @record.setter
    def record(self, value: ClusterRecord | None) -> None:
        self.cluster = value.to_dict() if value is not None else None

    def record_heals(self, names: Sequence[str], when: float,
                     window: float) -> None:
        """Note a completed heal of ``names``; forget heals older than
        ``window`` seconds."""
        for name in names:
            self.heals.setdefault(name, []).append(when)
        self.heals = {name: kept for name, times in self.heals.items()
                      if (kept := [t for t in times if when - t <= window])}

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


@dataclass(frozen=True)
class Found:
    """What Tacker holds under our key: ``raw`` as found (None when
    absent), ``document`` parsed (None when blank)."""

    present: bool
    raw: Any
    document: dict | None

    def describe(self) -> str:
        if not self.present:
            return 'missing'
        if self.raw is None:
            return 'null'
        if isinstance(self.raw, str) and not self.raw.strip():
            return 'an empty string'
        return 'an empty JSON object'


def load(vnf_instance: Any, key_file: str | None = None) -> DriverState:
    """The stored state, verified (with the key in ``key_file``, default
    ``state_key_file``); an empty state when none was ever stored.

    Raises TamperedState (naming the fields) when it does not verify,
    RolledBackState when it is older than this host has seen or blanked,
    StateKeyError when this host lacks the key that signed it."""
    instance_id = _instance_id(vnf_instance)
    floors = generations.floors(key_file)
    found = _found(vnf_instance, instance_id)
    if found.document is None:
        _refuse_blank(found, instance_id, floors)
        return DriverState()
    stored = found.document
    if stored.get('format') == FORMAT:
        return _load_signed(vnf_instance, found, floors, key_file)
    _refuse_without_generation(stored, instance_id, floors)
    if stored.get('format') == FORMAT_WITHOUT_GENERATION:
        state = _load_format2(instance_id, stored, key_file)
    else:
        state = _legacy(instance_id, stored)
    _store(vnf_instance, dataclasses.asdict(state), key_file)  # as format 3
    return state


def _load_signed(vnf_instance: Any, found: Found, floors: generations.Floors,
                 key_file: str | None) -> DriverState:
    instance_id = _instance_id(vnf_instance)
    stored = found.document or {}
    generation = stored.get('generation')
    fields, signatures = _signed_parts(instance_id, stored)
    if type(generation) is not int or generation < 1:
        raise TamperedState(f'{_where(instance_id)} has no valid '
                            f'generation ({generation!r})' + _REFUSED)
    key = integrity.load_key(create=False, path=key_file)
    _check_key_id(instance_id, stored.get('key_id'), key, key_file)
    bad = integrity.tampered(key, instance_id, fields, signatures, generation)
    if bad:
        raise TamperedState(_edited(instance_id, bad, generation, fields))
    floor = floors.read(instance_id)
    if floor is not None and generation < floor:
        raise RolledBackState(
            f'{_where(instance_id)} is an older copy of the driver\'s '
            f'state: generation {generation} found, this conductor has '
            f'seen generation {floor}' + _restore(instance_id, floors,
                                                   floor, generation))
    if _kept_by_tacker(vnf_instance, found.raw):
        floors.raise_to(instance_id, generation)
    return DriverState.from_dict(fields)


def _signed_parts(instance_id: str, stored: dict) -> tuple[dict, dict]:
    fields = stored.get('state')
    signatures = stored.get('signatures')
    if not isinstance(fields, dict) or not isinstance(signatures, dict):
        raise TamperedState(_where(instance_id) + ' lacks its state or '
                            'signatures' + _REFUSED)
    return fields, signatures


def _check_key_id(instance_id: str, signed_with: Any, key: bytes,
                  key_file: str | None) -> None:
    ours = integrity.key_id(key)
    if signed_with == ours:
        return
    path = key_file or integrity.key_path()
    raise integrity.StateKeyError(
        f'{_where(instance_id)} was signed with state key {signed_with} '
        f'(as its key_id says), but this conductor\'s key {path} '
        f'([kubernetes_mgmt] state_key_file) is {ours}: every '
        'tacker-conductor host of the site needs the same key file. Copy '
        'the file whose key signed this state from the conductor host '
        'that has it (a key made on this host, as its log says, signed '
        'only what this host stored since). Nothing was changed.')


def _edited(instance_id: str, bad: list[str], generation: int,
            fields: dict) -> str:
    named = [p for p in bad if p != 'generation']
    what = ', '.join(named) + (' do not match the signed state' if named
                               else '')
    if 'generation' in bad:
        what += ('; ' if named else '') + (
            f'the generation ({generation}) or the set of fields '
            f'({", ".join(sorted(fields)) or "none"}) is not the one '
            'signed')
    return (f'{_where(instance_id)} was changed outside this driver '
            f'(e.g. through PATCH /vnf_instances/{instance_id}): {what}'
            + _REFUSED)


def _refuse_blank(found: Found, instance_id: str,
                  floors: generations.Floors) -> None:
    floor = floors.read(instance_id)
    if floor is not None:
        raise RolledBackState(
            f'{_where(instance_id)} is {found.describe()}, but this '
            f'instance had driver state (this conductor has seen '
            f'generation {floor}): it was removed or blanked, and the '
            'driver would forget the host keys, nodes and VIM it learnt'
            + _restore(instance_id, floors, floor, None))


def _refuse_without_generation(stored: dict, instance_id: str,
                               floors: generations.Floors) -> None:
    """State of an older format is accepted only where no generation of
    the instance was ever seen (the first operation after an upgrade)."""
    floor = floors.read(instance_id)
    if floor is None:
        return
    kind = ('signed without a generation (format 2)'
            if stored.get('format') == FORMAT_WITHOUT_GENERATION
            else 'not signed')
    raise RolledBackState(
        f'{_where(instance_id)} is {kind}, but this conductor has seen '
        f'generation {floor} of this instance\'s state: an older copy was '
        'put back' + _restore(instance_id, floors, floor, None))


_REFUSED = ('. The operation is refused and nothing was changed; restore '
            'the value this driver stored (the instance\'s earlier '
            'metadata), or terminate and instantiate the VNF again.')


def _restore(instance_id: str, floors: generations.Floors, floor: int,
             found: int | None) -> str:
    accept = f'generation {found}' if found is not None else 'it'
    return (f'. The operation is refused and nothing was changed; restore '
            f'the latest value this driver stored (generation {floor}) '
            f'under vnf_metadata[{METADATA_KEY!r}]. Only if this state '
            'was put back on purpose (e.g. Tacker\'s database restored '
            f'from a backup): remove {floors.path(instance_id)} on this '
            f'conductor host ([kubernetes_mgmt] state_generation_dir) to '
            f'accept {accept}.')


def _instance_id(vnf_instance: Any) -> str:
    return str(getattr(vnf_instance, 'id', None) or '?')


def _where(instance_id: str) -> str:
    return f'vnf_metadata[{METADATA_KEY!r}] of VNF instance {instance_id}'


def _found(vnf_instance: Any, instance_id: str) -> Found:
    metadata = getattr(vnf_instance, 'vnf_metadata', None) or {}
    present = METADATA_KEY in metadata
    raw = metadata.get(METADATA_KEY)
    stored = raw
    if isinstance(stored, str):
        try:
            stored = json.loads(stored) if stored.strip() else None
        except ValueError as exc:
            raise TamperedState(
                f'{_where(instance_id)} is not the JSON this driver '
                f'stores: {exc}' + _REFUSED) from None
    if stored is not None and not isinstance(stored, dict):
        raise TamperedState(f'{_where(instance_id)} is not the JSON object '
                            'this driver stores' + _REFUSED)
    return Found(present, raw, stored or None)


def _kept_by_tacker(vnf_instance: Any, raw: Any) -> bool:
    """Whether Tacker keeps the state as found: the v2 adapter says what
    Tacker handed the script; a v1 instance holds what Tacker keeps."""
    kept = getattr(vnf_instance, 'state_kept_by_tacker', _UNSET)
    return kept is _UNSET or kept == raw


_UNSET = object()


def _load_format2(instance_id: str, stored: dict, key_file: str | None
                  ) -> DriverState:
    fields, signatures = _signed_parts(instance_id, stored)
    key = integrity.load_key(create=False, path=key_file)
    bad = integrity.tampered(key, instance_id, fields, signatures)
    if bad:
        raise TamperedState(
            f'{_where(instance_id)} (format 2) was changed outside this '
            f'driver (e.g. through PATCH /vnf_instances/{instance_id}), or '
            f'signed with another key: {", ".join(bad)} do not match the '
            'signed state' + _REFUSED)
    LOG.info('instance %s: driver state of format 2 verified; stored '
             'again as format %d', instance_id, FORMAT)
    return DriverState.from_dict(fields)


def _legacy(instance_id: str, stored: dict) -> DriverState:
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
    return DriverState.from_dict(stored)


def save(vnf_instance: Any, state: DriverState) -> None:
    """Store ``state`` signed, as the instance's next generation (the
    site key is created on the first save of a site)."""
    _store(vnf_instance, dataclasses.asdict(state))


def forget(vnf_instance: Any) -> None:
    """Forget everything the driver stored (terminate, instantiate
    rollback): an empty state of the next generation replaces it."""
    instance_id = _instance_id(vnf_instance)
    found = _found_leniently(vnf_instance, instance_id)
    if found.document is None and \
            generations.floors().read(instance_id) is None:
        return      # nothing was ever stored
    _store(vnf_instance, {})


def holds_state(metadata: dict) -> bool:
    """Whether ``metadata`` (an instance's, as Tacker shows it) holds
    driver state: neither nothing nor the empty state a terminate leaves.
    Unverified: for display and tests, never for a decision."""
    raw = (metadata or {}).get(METADATA_KEY)
    try:
        stored = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return True
    if not stored:
        return False
    return not (isinstance(stored, dict) and stored.get('state') == {})


def _store(vnf_instance: Any, fields: dict, key_file: str | None = None
           ) -> None:
    instance_id = _instance_id(vnf_instance)
    floors = generations.floors(key_file)
    with _saving(instance_id):
        current = _found_leniently(vnf_instance, instance_id).document or {}
        # Never a new key over state signed with a lost one.
        key = integrity.load_key(create=not current.get('signatures'),
                                 path=key_file)
        generation = max(_generation(current),
                         floors.read(instance_id) or 0) + 1
        metadata = dict(getattr(vnf_instance, 'vnf_metadata', None) or {})
        metadata[METADATA_KEY] = json.dumps({
            'format': FORMAT, 'generation': generation,
            'key_id': integrity.key_id(key), 'state': fields,
            'signatures': integrity.sign(key, instance_id, fields,
                                         generation)}, sort_keys=True)
        _show_expiry(metadata, fields.get('certificates_expire_at'))
        vnf_instance.vnf_metadata = metadata
        if callable(getattr(vnf_instance, 'save', None)):
            vnf_instance.save()
            floors.raise_to(instance_id, generation)    # Tacker has it


def _show_expiry(metadata: dict, expiry: Any) -> None:
    if isinstance(expiry, str) and expiry:
        metadata[EXPIRY_KEY] = expiry
    else:
        metadata.pop(EXPIRY_KEY, None)


def _found_leniently(vnf_instance: Any, instance_id: str) -> Found:
    """As found, garbage taken as nothing (a save replaces it)."""
    try:
        return _found(vnf_instance, instance_id)
    except TamperedState:
        return Found(True, None, None)


def _generation(stored: dict) -> int:
    value = stored.get('generation')
    return value if type(value) is int and value > 0 else 0


_LOCKS: weakref.WeakValueDictionary[str, threading.Lock] = \
    weakref.WeakValueDictionary()
_LOCKS_GUARD = threading.Lock()


@contextmanager
def _saving(instance_id: str) -> Iterator[None]:
    """One save of an instance at a time in this process: two threads of
    an operation never store the same generation."""
    with _LOCKS_GUARD:
        lock = _LOCKS.get(instance_id)
        if lock is None:
            lock = _LOCKS[instance_id] = threading.Lock()
    with lock:
        yield

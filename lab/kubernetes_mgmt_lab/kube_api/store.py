"""The objects the double holds, with the bookkeeping an API server adds
(uid, resourceVersion, generation, timestamps)."""
from __future__ import annotations

import copy
import datetime
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from kubernetes_mgmt_lab.kube_api.catalog import ApiKind

Key = tuple[str, str, str]          # (kind, namespace or '', name)
# Changes kept for watches that resume from a resourceVersion; an older
# one gets 410 Gone and lists again, as from a real API server.
KEPT_CHANGES = 5000


@dataclass(frozen=True)
class Change:
    """One watch event: ADDED, MODIFIED or DELETED, and the object then."""

    version: int
    type: str
    key: Key
    obj: dict


def key_of(api_kind: ApiKind, namespace: str | None, name: str) -> Key:
    return (api_kind.kind, namespace or '' if api_kind.namespaced else '',
            name)


def timestamp() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%SZ')


@dataclass
class Store:
    """Objects by key, guarded by one lock (the HTTP server is threaded).

    ``ready_at`` and ``gone_at`` hold the times (of ``clock``) at which a
    pod becomes ready and a terminating object disappears; the
    controllers move objects along when the time has come. A store kept
    in a file between processes (``persisted``) uses the wall clock.
    ``hooks`` are more controllers, run after the built-in ones; they
    may read ``context``, what the store's owner keeps beside objects.
    """

    objects: dict[Key, dict] = field(default_factory=dict)
    ready_at: dict[Key, float] = field(default_factory=dict)
    gone_at: dict[Key, float] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)
    changes: list[Change] = field(default_factory=list)
    changed: threading.Condition = field(init=False, repr=False)
    version: int = 0                  # the last resourceVersion given
    clock: Callable[[], float] = time.monotonic
    hooks: list[Callable[[Store], None]] = field(default_factory=list)
    context: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Watches sleep on it; every change wakes them.
        self.changed = threading.Condition(self.lock)

    def next_version(self) -> str:
        with self.lock:
            self.version += 1
            return str(self.version)

    def _note(self, kind: str, key: Key, obj: dict, version: str) -> None:
        with self.lock:
            self.changes.append(Change(int(version), kind, key,
                                       copy.deepcopy(obj)))
            del self.changes[:-KEPT_CHANGES]
            self.changed.notify_all()

    def get(self, key: Key) -> dict | None:
        return self.objects.get(key)

    def put_new(self, api_kind: ApiKind, obj: dict) -> dict:
        """Store a new object, filling in what the server owns."""
        meta = obj.setdefault('metadata', {})
        meta['uid'] = str(uuid.uuid4())
        meta['creationTimestamp'] = timestamp()
        meta['resourceVersion'] = self.next_version()
        meta['generation'] = 1
        obj['apiVersion'] = api_kind.group_version
        obj['kind'] = api_kind.kind
        if not api_kind.namespaced:
            meta.pop('namespace', None)
        key = key_of(api_kind, meta.get('namespace'), meta['name'])
        self.objects[key] = obj
        self._note('ADDED', key, obj, meta['resourceVersion'])
        return obj

    def touch(self, key: Key, spec_changed: bool = False) -> None:
        meta = self.objects[key]['metadata']
        meta['resourceVersion'] = self.next_version()
        if spec_changed:
            meta['generation'] = meta.get('generation', 1) + 1
        self._note('MODIFIED', key, self.objects[key],
                   meta['resourceVersion'])

    def remove(self, key: Key) -> None:
        obj = self.objects.pop(key, None)
        self.ready_at.pop(key, None)
        self.gone_at.pop(key, None)
        if obj is not None:
            self._note('DELETED', key, obj, self.next_version())

    def of_kind(self, kind: str, namespace: str | None = None) -> list[dict]:
        return [obj for (k, ns, _), obj in sorted(self.objects.items())
                if k == kind and (namespace is None or ns == namespace)]

    def snapshot(self) -> dict[Key, dict]:
        with self.lock:
            return copy.deepcopy(self.objects)

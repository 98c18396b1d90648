"""A :class:`Store` kept in a JSON document between uses: the lab
cluster's "etcd", shared by every API server of the cluster and by the
node agents, each a process of its own.

The document keeps objects by kind (``objects``: kind -> list), the last
resourceVersion (``rv``) and the controllers' pending moments
(``timers``, wall-clock times). Whoever holds the document's lock loads
a store from it, works, and dumps the store back.
"""
from __future__ import annotations

import time
from collections.abc import Callable

from kubernetes_mgmt_lab.kube_api import catalog
from kubernetes_mgmt_lab.kube_api.store import Key, Store, key_of

Hook = Callable[[Store], None]


def _timers(entries: list) -> dict[Key, float]:
    return {(kind, ns, name): float(when)
            for kind, ns, name, when in entries}


def load(document: dict, hooks: list[Hook] = ()) -> Store:
    """A store over ``document`` (which becomes its ``context``)."""
    store = Store(version=int(document.get('rv') or 0), clock=time.time,
                  hooks=list(hooks), context=document)
    for kind, items in (document.get('objects') or {}).items():
        api_kind = catalog.by_kind(kind)
        for obj in items:
            meta = obj['metadata']
            store.objects[key_of(api_kind, meta.get('namespace'),
                                 meta['name'])] = obj
    timers = document.get('timers') or {}
    store.ready_at.update(_timers(timers.get('ready_at') or []))
    store.gone_at.update(_timers(timers.get('gone_at') or []))
    return store


def dump(store: Store, document: dict) -> None:
    """Write the store's objects, version and timers into ``document``."""
    by_kind: dict[str, list[dict]] = {}
    for key in sorted(store.objects):
        by_kind.setdefault(key[0], []).append(store.objects[key])
    document['objects'] = by_kind
    document['rv'] = store.version
    document['timers'] = {
        name: [[*key, when] for key, when in sorted(timers.items())]
        for name, timers in (('ready_at', store.ready_at),
                             ('gone_at', store.gone_at))}


def fingerprint(store: Store) -> tuple:
    """What tells whether a store changed since it was loaded."""
    return (store.version, len(store.objects), len(store.ready_at),
            len(store.gone_at))

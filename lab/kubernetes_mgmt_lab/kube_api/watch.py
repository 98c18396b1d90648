"""Watches: the changes of a list request's objects, streamed as they
happen (``?watch=true``), for ``kubectl wait``, ``delete --wait`` and
the informers of API clients.

A store living in the API's process wakes its watches on every change
and replays changes by version. A store shared through a file (a lab
cluster's, changed by several processes) is looked at every ``TICK``
instead, and what changed since the last look is sent; resuming from an
old resourceVersion there sends the objects changed since, but not the
deletions.

From ``resourceVersion`` N the changes after N are replayed first (410
Gone when they are no longer kept); without one, or with
``sendInitialEvents=true``, every object that matches is sent as ADDED
first, the latter closed by the bookmark clients wait for. A watch ends
after ``timeoutSeconds`` or when the client goes.
"""
from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterator

from kubernetes_mgmt_lab.kube_api import controllers, selectors
from kubernetes_mgmt_lab.kube_api.backend import Backend
from kubernetes_mgmt_lab.kube_api.controllers import Timing
from kubernetes_mgmt_lab.kube_api.paths import Target
from kubernetes_mgmt_lab.kube_api.status import ApiError
from kubernetes_mgmt_lab.kube_api.store import Store

DEFAULT_TIMEOUT = 1800.0
# How often a quiet watch moves time-driven changes along (pods turning
# Ready, objects whose grace period ends): changes themselves wake it.
TICK = 0.1
INITIAL_EVENTS_END = 'k8s.io/initial-events-end'


def wanted(query: dict[str, str]) -> bool:
    return query.get('watch') in ('true', '1')


def _matches(target: Target, query: dict[str, str], key, obj) -> bool:
    kind, namespace, name = key
    return (kind == target.api_kind.kind
            and (target.namespace is None or namespace == target.namespace)
            and (target.name is None or name == target.name)
            and selectors.matches_labels(obj, query.get('labelSelector'))
            and selectors.matches_fields(obj, query.get('fieldSelector')))


def _initial(store: Store, target: Target, query: dict[str, str]
             ) -> tuple[list[dict], int]:
    """Events that open the watch, and the version it goes on from."""
    since = query.get('resourceVersion') or '0'
    initial = query.get('sendInitialEvents') == 'true' or since == '0'
    if initial:
        now = int(store.next_version())
        events = [{'type': 'ADDED', 'object': obj}
                  for key, obj in sorted(store.objects.items())
                  if _matches(target, query, key, obj)]
        if query.get('sendInitialEvents') == 'true':
            events.append(_bookmark(target, now))
        return events, now
    version = int(since)
    oldest = store.changes[0].version if store.changes else version
    if version < oldest - 1:
        raise ApiError(410, f'too old resource version: {version} '
                       f'({oldest})', 'Expired')
    return [], version


def _bookmark(target: Target, version: int) -> dict:
    return {'type': 'BOOKMARK', 'object': {
        'kind': target.api_kind.kind,
        'apiVersion': target.api_kind.group_version,
        'metadata': {'resourceVersion': str(version),
                     'annotations': {INITIAL_EVENTS_END: 'true'}}}}


def events(backend: Backend, target: Target, query: dict[str, str],
           alive: Callable[[], bool]) -> Iterator[dict]:
    """The watch's events, as they happen, until it times out."""
    deadline = time.monotonic() + float(query.get('timeoutSeconds')
                                        or DEFAULT_TIMEOUT)
    store = backend.live_store()
    if store is not None:
        yield from _live(store, backend.timing, target, query,
                         lambda: time.monotonic() < deadline and alive())
    else:
        yield from _polled(backend, target, query,
                           lambda: time.monotonic() < deadline and alive())


def _live(store: Store, timing: Timing, target: Target,
          query: dict[str, str], going: Callable[[], bool]
          ) -> Iterator[dict]:
    with store.lock:
        controllers.advance(store, timing)
        opening, seen = _initial(store, target, query)
    yield from opening
    while going():
        with store.lock:
            controllers.advance(store, timing)
            fresh = [c for c in store.changes if c.version > seen]
            if not fresh:
                store.changed.wait(TICK)
                continue
        seen = fresh[-1].version
        for change in fresh:
            if _matches(target, query, change.key, change.obj):
                yield {'type': change.type, 'object': change.obj}


def _look(store: Store, target: Target, query: dict[str, str]) -> dict:
    return {key: copy.deepcopy(obj) for key, obj in store.objects.items()
            if _matches(target, query, key, obj)}


def _polled(backend: Backend, target: Target, query: dict[str, str],
            going: Callable[[], bool]) -> Iterator[dict]:
    since = query.get('resourceVersion') or '0'
    initial = since == '0' or query.get('sendInitialEvents') == 'true'
    with backend.transaction() as store:
        controllers.advance(store, backend.timing)
        opening = _initial(store, target, query)[0] if initial else []
        known = {key: obj for key, obj in _look(store, target, query).items()
                 if initial or
                 int(obj['metadata']['resourceVersion']) <= int(since)}
    yield from opening
    pause = threading.Event()
    while going():
        with backend.transaction() as store:
            controllers.advance(store, backend.timing)
            now = _look(store, target, query)
        for key, obj in now.items():
            old = known.get(key)
            if old is None:
                yield {'type': 'ADDED', 'object': obj}
            elif old['metadata']['resourceVersion'] != \
                    obj['metadata']['resourceVersion']:
                yield {'type': 'MODIFIED', 'object': obj}
        for key in known.keys() - now.keys():
            yield {'type': 'DELETED', 'object': known[key]}
        known = now
        pause.wait(TICK)

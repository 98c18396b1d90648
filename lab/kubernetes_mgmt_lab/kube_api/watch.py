"""Watches: the changes of a list request's objects, streamed as they
happen (``?watch=true``), for ``kubectl wait``, ``delete --wait`` and
the informers of API clients.

From ``resourceVersion`` N the changes after N are replayed first (410
Gone when they are no longer kept); without one, or with
``sendInitialEvents=true``, every object that matches is sent as ADDED
first, the latter closed by the bookmark clients wait for. A watch ends
after ``timeoutSeconds`` or when the client goes.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from kubernetes_mgmt_lab.kube_api import controllers, selectors
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


def events(store: Store, timing: Timing, target: Target,
           query: dict[str, str], alive: Callable[[], bool]
           ) -> Iterator[dict]:
    """The watch's events, as they happen, until it times out."""
    deadline = time.monotonic() + float(query.get('timeoutSeconds')
                                        or DEFAULT_TIMEOUT)
    with store.lock:
        controllers.advance(store, timing)
        opening, seen = _initial(store, target, query)
    yield from opening
    while time.monotonic() < deadline and alive():
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

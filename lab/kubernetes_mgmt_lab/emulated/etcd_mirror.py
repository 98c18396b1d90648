"""The durable copy of the lab cluster's objects, in the cluster's real
etcd: each object under ``/registry/<Kind>/<namespace>/<name>``
(``/registry/<Kind>/<name>`` when cluster-scoped).

The shared state file keeps the working copy (every emulated command and
API request reads it, cheaply). Every change of its objects is written
to etcd in one transaction, in the same lock: an API request whose write
etcd refuses (no quorum) fails and changes nothing, as a real API
server's would; a node-side change (a kubelet stopped) is kept and
written with the next change that etcd takes.

Each transaction also sets ``/registry/klab/rv`` and only applies if
that key still holds what the lab wrote last: etcd restored from a
snapshot holds an older value, and the working copy is then reloaded
from etcd instead (``reload_if_restored`` does it when an API server
starts).
"""
from __future__ import annotations

import json

from kubernetes_mgmt.remote.retry import wait_until
from kubernetes_mgmt_lab.emulated import etcd_gateway
from kubernetes_mgmt_lab.emulated.etcd_gateway import EtcdError, Gateway

PREFIX = '/registry/'
MARKER = '/registry/klab/rv'
STRICT_TIMEOUT = 6.0
RELOAD_DEADLINE = 10.0
LENIENT_TIMEOUT = 3.0
Key = tuple[str, str, str]          # kind, namespace ('' if none), name

_GATEWAYS: dict[tuple, Gateway] = {}


class MirrorError(Exception):
    """An API write etcd did not take; ``message`` is etcd's reason."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def endpoints(state: dict, near: str | None = None) -> list[str]:
    """Client URLs of the running members, ``near``'s own first."""
    hosts = state.get('hosts') or {}
    urls = [(name != near, rec['etcd']['url'])
            for name, rec in hosts.items() if rec.get('etcd')]
    return [url for _, url in sorted(urls)]


def index(state: dict) -> dict[Key, str]:
    """Object key -> resourceVersion: what tells changed objects."""
    found = {}
    for kind, items in (state.get('objects') or {}).items():
        for obj in items:
            meta = obj['metadata']
            found[(kind, meta.get('namespace') or '', meta['name'])] = \
                str(meta.get('resourceVersion'))
    return found


def etcd_key(key: Key) -> str:
    kind, namespace, name = key
    return f'{PREFIX}{kind}/{namespace}/{name}' if namespace else \
        f'{PREFIX}{kind}/{name}'


def _objects_by_key(state: dict) -> dict[Key, dict]:
    return {(kind, o['metadata'].get('namespace') or '',
             o['metadata']['name']): o
            for kind, items in (state.get('objects') or {}).items()
            for o in items}


def _gateway(cluster_dir: str, urls: list[str], timeout: float) -> Gateway:
    """One kept per endpoint list (a long-lived API server reuses its
    TLS connection; its writes are serialized by the state lock)."""
    key = (cluster_dir, tuple(urls), timeout)
    found = _GATEWAYS.get(key)
    if found is None:
        found = _GATEWAYS[key] = Gateway(cluster_dir, urls, timeout=timeout)
    return found


def sync(cluster_dir: str, state: dict, before: dict[Key, str] | None,
         strict: bool, near: str | None = None) -> None:
    """Write the objects that changed since ``before`` (all of them after
    a write etcd missed). ``strict``: raise MirrorError when etcd does
    not take it (the caller must not save the state)."""
    urls = endpoints(state, near)
    mirror = state.setdefault('etcd_mirror', {})
    if not urls or not state.get('cluster', {}).get('initialized'):
        return
    after = index(state)
    if before == after and not mirror.get('stale'):
        return
    gateway = _gateway(cluster_dir, urls,
                       STRICT_TIMEOUT if strict else LENIENT_TIMEOUT)
    try:
        applied = _write(gateway, state, mirror, before, after)
        marker = None if applied else gateway.get(MARKER)
        if _own_late_write(mirror, marker):
            # Not a restore: write the whole working copy over it.
            _adopt(mirror, marker)
            applied = _write(gateway, state, mirror, before, after)
    except EtcdError as exc:
        if strict:
            raise MirrorError(exc.message) from None
        mirror['stale'] = True
        return
    if not applied:
        # etcd holds data the lab did not write last: a restore.
        _reload(state, gateway)
        if strict:
            raise MirrorError('the cluster was restored from an etcd '
                              'snapshot; retry the request')


def _write(gateway: Gateway, state: dict, mirror: dict,
           before: dict[Key, str] | None, after: dict[Key, str]) -> bool:
    objects = _objects_by_key(state)
    if mirror.get('stale') or before is None:
        stored = gateway.prefix(PREFIX, keys_only=True)
        wanted = {etcd_key(k) for k in after} | {MARKER}
        ops = [etcd_gateway.delete_op(k) for k in stored
               if k not in wanted]
        changed = list(after)
    else:
        ops = [etcd_gateway.delete_op(etcd_key(k)) for k in before
               if k not in after]
        changed = [k for k, rv in after.items() if before.get(k) != rv]
    ops += [etcd_gateway.put_op(etcd_key(k), json.dumps(
        objects[k], sort_keys=True, separators=(',', ':')))
        for k in changed]
    marker = f'{state.get("rv", 0)}.{int(mirror.get("writes", 0)) + 1}'
    ops.append(etcd_gateway.put_op(MARKER, marker))
    if not gateway.txn([etcd_gateway.value_is(MARKER, mirror.get('rv'))],
                       ops):
        return False
    mirror.update(rv=marker, writes=int(mirror.get('writes', 0)) + 1)
    mirror.pop('stale', None)
    return True


def _writes_of(marker: str | None) -> int:
    """The lab's write count a marker carries (``<rv>.<writes>``)."""
    try:
        return int(str(marker).rsplit('.', 1)[1])
    except (IndexError, ValueError):
        return -1


def _own_late_write(mirror: dict, marker: str | None) -> bool:
    """etcd's marker counts more writes than the lab recorded: a write
    whose client gave up while etcd had no quorum, committed once the
    quorum came back. A snapshot restore brings an older marker back;
    reloading etcd's objects now would undo every later change of the
    working copy (a kubelet's Ready status written since)."""
    return marker is not None and \
        _writes_of(marker) > int(mirror.get('writes', 0))


def _adopt(mirror: dict, marker: str | None) -> None:
    """Take the late write's marker as the last written, and have the
    next write put the whole working copy over what it wrote."""
    mirror.update(rv=marker, writes=_writes_of(marker), stale=True)


def _reload(state: dict, gateway: Gateway) -> None:
    """Replace the working copy's objects with etcd's."""
    stored = gateway.prefix(PREFIX)
    marker = stored.pop(MARKER, None)
    by_kind: dict[str, list[dict]] = {}
    top = int(state.get('rv') or 0)
    for key in sorted(stored):
        obj = json.loads(stored[key])
        by_kind.setdefault(obj['kind'], []).append(obj)
        rv = str(obj['metadata'].get('resourceVersion') or '0')
        top = max(top, int(rv) if rv.isdigit() else 0)
    state['objects'] = by_kind
    # resourceVersions only grow, restore or not (watchers rely on it).
    state['rv'] = top
    keys = {(k, o['metadata'].get('namespace') or '', o['metadata']['name'])
            for k, items in by_kind.items() for o in items}
    timers = state.get('timers') or {}
    for name, entries in timers.items():
        timers[name] = [e for e in entries if tuple(e[:3]) in keys]
    mirror = state.setdefault('etcd_mirror', {})
    mirror['rv'] = marker
    mirror.pop('stale', None)


def reload_if_restored(cluster_dir: str, near: str | None = None) -> bool:
    """When etcd's marker is not the one the lab wrote last (etcd was
    restored from a snapshot), reload the objects from etcd. True if it
    did."""
    from kubernetes_mgmt_lab.emulated import store
    with store.exclusive(cluster_dir, mirrored=False) as (state, save):
        urls = endpoints(state, near)
        if not urls:
            return False
        gateway = _gateway(cluster_dir, urls, STRICT_TIMEOUT)
        found: list[str | None] = []

        def read() -> bool:
            # A member just started may not have elected a leader yet.
            try:
                found.append(gateway.get(MARKER))
            except EtcdError:
                return False
            return True

        if not wait_until(read, deadline=RELOAD_DEADLINE, ceiling=0.5):
            return False
        marker = found[0]
        mirror = state.setdefault('etcd_mirror', {})
        if marker is None or marker == mirror.get('rv'):
            return False
        if _own_late_write(mirror, marker):
            _adopt(mirror, marker)
            save()
            return False
        _reload(state, gateway)
        save()
        return True

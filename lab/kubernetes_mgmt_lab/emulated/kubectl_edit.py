"""``kubectl label|annotate|patch|delete``."""
from __future__ import annotations

import json
import re

import yaml

from kubernetes_mgmt.remote.retry import wait_until
from kubernetes_mgmt_lab.emulated import (
    cluster,
    kinds,
    manifests,
    objects,
    selectors,
    store,
    tokens,
)
from kubernetes_mgmt_lab.emulated.flags import Flag
from kubernetes_mgmt_lab.emulated.kubectl_apply import merge
from kubernetes_mgmt_lab.emulated.kubectl_common import (
    KubectlError,
    Session,
    not_found,
    resolve_kind,
    scoped_ns,
)
from kubernetes_mgmt_lab.emulated.runner import CommandError

LABEL_FLAGS = [Flag('overwrite', value=False), Flag('all', value=False),
               Flag('selector', short='l'), Flag('output', short='o'),
               Flag('dry-run'), Flag('list', value=False),
               Flag('resource-version')]
PATCH_FLAGS = [Flag('patch', short='p'), Flag('type'),
               Flag('output', short='o'), Flag('dry-run'),
               Flag('patch-file'), Flag('subresource')]
DELETE_FLAGS = [Flag('filename', short='f', multi=True),
                Flag('ignore-not-found', value=False),
                Flag('wait', value=False), Flag('timeout'),
                Flag('grace-period'), Flag('force', value=False),
                Flag('now', value=False), Flag('all', value=False),
                Flag('selector', short='l'), Flag('cascade'),
                Flag('recursive', value=False, short='R'),
                Flag('output', short='o'), Flag('dry-run')]
_NAME = r'([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)'
LABEL_VALUE = re.compile(rf'^({_NAME})?$')
LABEL_KEY = re.compile(
    rf'^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?'
    rf'{_NAME}$')


def _split_args(args: list[str]) -> tuple[list[str], list[str]]:
    changes = [a for a in args[1:] if '=' in a or a.endswith('-')]
    return [args[0]] + [a for a in args[1:] if a not in changes], changes


def _check_label(key: str, value: str | None) -> None:
    if not LABEL_KEY.match(key) or len(key.split('/')[-1]) > 63:
        raise KubectlError(f'invalid label spec: {key}')
    if value is not None and (len(value) > 63 or
                              not LABEL_VALUE.match(value)):
        raise KubectlError(
            f'invalid label value: "{key}={value}": a valid label must be '
            "an empty string or consist of alphanumeric characters, '-', "
            "'_' or '.', and must start and end with an alphanumeric "
            'character')


def _change(obj: dict, field: str, changes: list[str], overwrite: bool,
            validate: bool) -> bool:
    meta = obj['metadata']
    current = dict(meta.get(field) or {})
    before = dict(current)
    for change in changes:
        if change.endswith('-') and '=' not in change:
            current.pop(change[:-1], None)
            continue
        key, _, value = change.partition('=')
        if validate:
            _check_label(key, value)
        if key in current and current[key] != value and not overwrite:
            raise KubectlError(f"'{key}' already has a value "
                               f'({current[key]}), and --overwrite is false')
        current[key] = value
    meta[field] = current
    return current != before


def _objects(session: Session, state: dict, args: list[str]):
    first = args[0]
    if '/' in first:
        pairs = [tuple(a.split('/', 1)) for a in args]
        return [(resolve_kind(k, state), n) for k, n in pairs]
    kind = resolve_kind(first, state)
    names = args[1:]
    if session.opts.get('all') or session.opts.get('selector'):
        ns = scoped_ns(kind, session.namespace())
        names = [o['metadata']['name']
                 for o in cluster.objects_of(state, kind.kind)
                 if o['metadata'].get('namespace') == ns and
                 selectors.match_labels(session.opts.get('selector'), o)]
    return [(kind, n) for n in names]


def label(session: Session, field: str = 'labels') -> int:
    targets, changes = _split_args(session.opts.args)
    if not changes:
        raise KubectlError('at least one label update is required')
    word = 'labeled' if field == 'labels' else 'annotated'
    with store.mutate(session.cluster_dir) as state:
        for kind, name in _objects(session, state, targets):
            obj = cluster.find(state, kind.kind, name,
                               scoped_ns(kind, session.namespace()))
            if obj is None:
                raise not_found(kind, name)
            changed = _change(obj, field, changes,
                              bool(session.opts.get('overwrite')),
                              field == 'labels')
            if changed:
                cluster.put(state, obj)
            session.ctx.out(f'{kind.ref}/{name} '
                            f'{word if changed else "not " + word}')
        cluster.reconcile(state)
    return 0


def _json_patch(obj: dict, ops: list[dict]) -> dict:
    for op in ops:
        parts = [p.replace('~1', '/').replace('~0', '~')
                 for p in op['path'].split('/')[1:]]
        parent = obj
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) \
                else parent.setdefault(part, {})
        last = parts[-1]
        if isinstance(parent, list):
            idx = len(parent) if last == '-' else int(last)
            if op['op'] == 'remove':
                parent.pop(idx)
            elif op['op'] == 'add':
                parent.insert(idx, op['value'])
            else:
                parent[idx] = op['value']
        elif op['op'] == 'remove':
            parent.pop(last, None)
        else:
            parent[last] = op['value']
    return obj


def patch(session: Session) -> int:
    text = session.opts.get('patch')
    if session.opts.get('patch-file'):
        with open(session.opts.get('patch-file'), encoding='utf-8') as f:
            text = f.read()
    if not text:
        raise KubectlError('must specify --patch or --patch-file containing '
                           'the contents of the patch')
    body = yaml.safe_load(text)
    with store.mutate(session.cluster_dir) as state:
        for kind, name in _objects(session, state, session.opts.args):
            obj = cluster.find(state, kind.kind, name,
                               scoped_ns(kind, session.namespace()))
            if obj is None:
                raise not_found(kind, name)
            new = _json_patch(json.loads(json.dumps(obj)), body) \
                if session.opts.get('type') == 'json' else merge(obj, body)
            if new == obj:
                session.ctx.out(f'{kind.ref}/{name} patched (no change)')
                continue
            cluster.put(state, new)
            session.ctx.out(f'{kind.ref}/{name} patched')
        cluster.reconcile(state)
    return 0


def _delete_obj(state: dict, kind: kinds.Kind, obj: dict) -> bool:
    """Delete now, or mark as terminating when a finalizer holds it.
    True when it is gone."""
    meta = obj['metadata']
    if kind.kind == 'PersistentVolume' and \
            (obj.get('status') or {}).get('phase') == 'Bound':
        meta.setdefault('deletionTimestamp', objects.iso())
        meta.setdefault('finalizers', ['kubernetes.io/pv-protection'])
        return False
    if kind.kind == 'Node':
        cluster.delete_node(state, meta['name'])
    elif kind.kind == 'Namespace':
        for items in state['objects'].values():
            items[:] = [o for o in items
                        if o['metadata'].get('namespace') != meta['name']]
        cluster.remove(state, 'Namespace', meta['name'])
    else:
        cluster.remove(state, kind.kind, meta['name'], meta.get('namespace'))
        _collect_garbage(state, kind.kind, meta)
    return True


def _collect_garbage(state: dict, kind: str, meta: dict) -> None:
    if kind in ('DaemonSet', 'Deployment'):
        owner_kind = 'DaemonSet' if kind == 'DaemonSet' else 'ReplicaSet'
        prefix = meta['name']
        pods = cluster.objects_of(state, 'Pod')
        pods[:] = [p for p in pods if not any(
            o['kind'] == owner_kind and o['name'].startswith(prefix)
            for o in p['metadata'].get('ownerReferences', []))]


# kubectl's --timeout=0 means "wait a week".
_FOREVER = 7 * 24 * 3600.0


def _wait_gone(session: Session, pending: list[tuple], timeout: float):
    def all_gone() -> bool:
        nonlocal pending
        state = session.read()
        pending = [(k, n, ns) for k, n, ns in pending
                   if cluster.find(state, k.kind, n, ns) is not None]
        return not pending

    if not wait_until(all_gone, deadline=timeout or _FOREVER, first=0.05,
                      ceiling=0.2):
        kind, name, _ = pending[0]
        raise KubectlError(f'timed out waiting for the condition on '
                           f'{kind.plural}/{name}')


def _targets_from_files(session: Session) -> list[tuple]:
    docs = manifests.load(session.opts.list('filename'),
                          bool(session.opts.get('recursive')))
    out = []
    for doc in docs:
        kind = kinds.for_object(doc.obj)
        meta = doc.obj.get('metadata', {})
        ns = meta.get('namespace') or session.namespace()
        out.append((kind, meta.get('name'), ns))
    return out


def delete(session: Session) -> int:
    if session.opts.list('filename'):
        wanted = _targets_from_files(session)
    else:
        if not session.opts.args:
            raise KubectlError('You must provide one or more resources by '
                               'argument or filename.')
        wanted = [(k, n, session.namespace())
                  for k, n in _objects(session, session.read(),
                                       session.opts.args)]
    pending, errors = [], []
    with store.mutate(session.cluster_dir) as state:
        for kind, name, ns in wanted:
            obj = cluster.find(state, kind.kind, name, scoped_ns(kind, ns))
            if obj is None:
                if not session.opts.get('ignore-not-found'):
                    errors.append(not_found(kind, name).message)
                continue
            if not _delete_obj(state, kind, obj):
                pending.append((kind, name, scoped_ns(kind, ns)))
            session.ctx.out(f'{kind.ref} "{name}" deleted')
        cluster.reconcile(state)
    wait = session.opts.get('wait', True)
    if pending and wait:
        timeout = tokens.parse_duration(session.opts.get('timeout') or '0')
        _wait_gone(session, pending, timeout)
    for message in errors:
        session.ctx.err(message)
    if errors:
        raise CommandError('', 1)
    return 0

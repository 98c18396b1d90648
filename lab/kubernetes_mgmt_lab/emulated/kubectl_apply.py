"""``kubectl apply -f`` and ``kubectl create -f``."""
from __future__ import annotations

import copy
import json

from kubernetes_mgmt_lab.emulated import cluster, kinds, manifests, store
from kubernetes_mgmt_lab.emulated.flags import Flag
from kubernetes_mgmt_lab.emulated.kubectl_common import KubectlError, Session
from kubernetes_mgmt_lab.emulated.runner import CommandError

FLAGS = [Flag('filename', short='f', multi=True),
         Flag('recursive', value=False, short='R'),
         Flag('output', short='o'), Flag('dry-run'),
         Flag('server-side', value=False), Flag('force-conflicts',
                                                value=False),
         Flag('field-manager'), Flag('validate'), Flag('prune',
                                                       value=False),
         Flag('selector', short='l'), Flag('overwrite', value=False),
         Flag('save-config', value=False), Flag('wait', value=False),
         Flag('force', value=False), Flag('timeout')]
LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration'
SERVER_FIELDS = ('uid', 'resourceVersion', 'creationTimestamp',
                 'managedFields', 'generation')


def merge(base, patch):
    """JSON merge patch (RFC 7386): maps merge, null deletes. (Strategic
    merge patches are applied the same way, which is exact for the maps
    and scalars the lab patches.)"""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(base) if isinstance(base, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


def _comparable(obj: dict) -> dict:
    obj = copy.deepcopy(obj)
    obj.pop('status', None)
    for key in SERVER_FIELDS:
        obj.get('metadata', {}).pop(key, None)
    return obj


def _namespace_of(session: Session, doc: manifests.Doc) -> str:
    given = session.opts.get('namespace')
    own = doc.obj.get('metadata', {}).get('namespace')
    if given and own and given != own and \
            kinds.for_object(doc.obj).namespaced:
        raise KubectlError(f'the namespace from the provided object '
                           f'"{own}" does not match the namespace "{given}".'
                           f" You must pass '--namespace={own}' to perform "
                           'this operation.')
    return own or session.namespace()


def _check(state: dict, doc: manifests.Doc, obj: dict, verb: str) -> None:
    meta = obj['metadata']
    kind = kinds.for_object(obj)
    if not manifests.known_kind(state, obj):
        raise CommandError(
            f'error: resource mapping not found for name: '
            f'"{meta.get("name")}" namespace: "{meta.get("namespace", "")}"'
            f' from "{doc.source}": no matches for kind "{obj["kind"]}" in '
            f'version "{obj["apiVersion"]}"\nensure CRDs are installed '
            'first', 1)
    if not meta.get('name'):
        raise KubectlError(f'error when {verb} "{doc.source}": resource '
                           'name may not be empty')
    ns = meta.get('namespace')
    if kind.namespaced and obj['kind'] != 'Namespace' and \
            cluster.find(state, 'Namespace', ns) is None:
        raise CommandError(f'Error from server (NotFound): error when '
                           f'{verb} "{doc.source}": namespaces "{ns}" not '
                           'found', 1)


def _apply_one(session: Session, state: dict, doc: manifests.Doc) -> str:
    obj = manifests.normalize(doc.obj, _namespace_of(session, doc))
    _check(state, doc, obj, 'creating')
    kind = kinds.for_object(obj)
    meta = obj['metadata']
    meta.setdefault('annotations', {})[LAST_APPLIED] = json.dumps(
        doc.obj, sort_keys=True, separators=(',', ':'))
    old = cluster.find(state, obj['kind'], meta['name'],
                       meta.get('namespace'))
    if old is None:
        cluster.put(state, obj)
        verb = 'created'
    else:
        new = merge(old, obj)
        if _comparable(new) == _comparable(old):
            verb = 'unchanged'
        else:
            cluster.put(state, new)
            verb = 'configured'
    return f'{kind.ref}/{meta["name"]} {verb}'


def _create_one(session: Session, state: dict, doc: manifests.Doc) -> str:
    obj = manifests.normalize(doc.obj, _namespace_of(session, doc))
    _check(state, doc, obj, 'creating')
    kind = kinds.for_object(obj)
    meta = obj['metadata']
    if cluster.find(state, obj['kind'], meta['name'],
                    meta.get('namespace')) is not None:
        raise CommandError(f'Error from server (AlreadyExists): error when '
                           f'creating "{doc.source}": {kind.resource} '
                           f'"{meta["name"]}" already exists', 1)
    cluster.put(state, obj)
    return f'{kind.ref}/{meta["name"]} created'


def run(session: Session, create: bool) -> int:
    paths = session.opts.list('filename')
    if not paths:
        raise KubectlError('must specify one of -f and -k')
    docs = manifests.load(paths, bool(session.opts.get('recursive')))
    failures = []
    dry = (session.opts.get('dry-run') or 'none') != 'none'
    with store.mutate(session.cluster_dir) as state:
        for doc in docs:
            try:
                line = (_create_one if create else _apply_one)(
                    session, state, doc)
                session.ctx.out(line + (' (dry run)' if dry else ''))
            except CommandError as e:
                failures.append(e.message)
        cluster.reconcile(state)
        if dry:
            raise _DryRun
    for message in failures:
        session.ctx.err(message)
    return 1 if failures else 0


class _DryRun(Exception):
    """Aborts the state update of a dry run."""


def run_guarded(session: Session, create: bool) -> int:
    try:
        return run(session, create)
    except _DryRun:
        return 0

"""What each verb does to the store: get, list, create, replace, patch,
delete, and the scale subresource."""
from __future__ import annotations

import base64
import copy
import itertools
from dataclasses import dataclass

from kubernetes_mgmt_lab.kube_api import (
    controllers,
    eviction,
    rbac,
    selectors,
)
from kubernetes_mgmt_lab.kube_api.catalog import EVICTION, ApiKind
from kubernetes_mgmt_lab.kube_api.controllers import Timing
from kubernetes_mgmt_lab.kube_api.patching import merge, strategic_merge
from kubernetes_mgmt_lab.kube_api.paths import Target
from kubernetes_mgmt_lab.kube_api.status import (
    ApiError,
    already_exists,
    not_found,
    success,
)
from kubernetes_mgmt_lab.kube_api.store import Store, key_of

_CLUSTER_IPS = itertools.count(10)
_MERGE_TYPES = {'application/merge-patch+json': merge,
                'application/strategic-merge-patch+json': strategic_merge}


@dataclass
class Request:
    target: Target
    identity: rbac.Identity
    query: dict[str, str]
    body: object
    content_type: str = ''


def _object(store: Store, target: Target) -> dict:
    obj = store.get(key_of(target.api_kind, target.namespace, target.name))
    if obj is None:
        raise not_found(target.api_kind, target.name or '')
    return obj


def _scale_view(obj: dict) -> dict:
    meta = obj['metadata']
    labels = (obj['spec'].get('selector') or {}).get('matchLabels') or {}
    return {'kind': 'Scale', 'apiVersion': 'autoscaling/v1',
            'metadata': {k: meta[k] for k in (
                'name', 'namespace', 'uid', 'resourceVersion',
                'creationTimestamp') if k in meta},
            'spec': {'replicas': obj['spec'].get('replicas', 1)},
            'status': {'replicas': obj.get('status', {}).get('replicas', 0),
                       'selector': ','.join(f'{k}={v}'
                                            for k, v in labels.items())}}


def get(store: Store, req: Request) -> tuple[int, dict]:
    target = req.target
    if target.name is None:
        return 200, _list(store, req)
    obj = _object(store, target)
    if target.subresource == 'scale':
        return 200, _scale_view(obj)
    return 200, copy.deepcopy(obj)


def _list(store: Store, req: Request) -> dict:
    api_kind = req.target.api_kind
    items = [copy.deepcopy(o) for o in store.of_kind(
        api_kind.kind, req.target.namespace if api_kind.namespaced else None)
        if selectors.matches_labels(o, req.query.get('labelSelector'))
        and selectors.matches_fields(o, req.query.get('fieldSelector'))]
    return {'kind': f'{api_kind.kind}List',
            'apiVersion': api_kind.group_version,
            'metadata': {'resourceVersion': store.next_version()},
            'items': items}


def _check_namespace(store: Store, api_kind: ApiKind,
                     namespace: str | None) -> None:
    if not api_kind.namespaced:
        return
    ns = store.get(('Namespace', '', namespace or ''))
    if ns is None:
        raise ApiError(404, f'namespaces "{namespace}" not found',
                       details={'name': namespace, 'kind': 'namespaces'})
    if controllers.terminating(ns):
        raise ApiError(403, f'{api_kind.plural} "..." is forbidden: unable '
                       f'to create new content in namespace {namespace} '
                       'because it is being terminated')


def _body(req: Request) -> dict:
    if not isinstance(req.body, dict):
        raise ApiError(400, 'the request body must be a JSON object')
    return copy.deepcopy(req.body)


def _review(req: Request) -> tuple[int, dict]:
    """SelfSubjectAccessReview: may the caller do what the spec says?"""
    review = _body(req)
    attrs = (review.get('spec') or {}).get('resourceAttributes') or {}
    resource = attrs.get('resource', '')
    if attrs.get('subresource'):
        resource = f'{resource}/{attrs["subresource"]}'
    allowed = rbac.allows(req.identity, rbac.Attributes(
        verb=attrs.get('verb', ''), group=attrs.get('group', ''),
        resource=resource, namespace=attrs.get('namespace') or None,
        name=attrs.get('name')))
    review['status'] = {'allowed': allowed}
    review.update(kind='SelfSubjectAccessReview',
                  apiVersion='authorization.k8s.io/v1')
    return 201, review


def create(store: Store, req: Request, timing: Timing) -> tuple[int, dict]:
    target = req.target
    api_kind = target.api_kind
    if api_kind.kind == 'SelfSubjectAccessReview':
        return _review(req)
    if target.subresource == EVICTION:
        return _evict(store, req, timing)
    if target.name is not None:
        raise ApiError(405, 'POST is only served on collections')
    obj = _body(req)
    meta = obj.setdefault('metadata', {})
    if api_kind.namespaced:
        if meta.get('namespace') not in (None, target.namespace):
            raise ApiError(400, 'the namespace of the provided object does '
                           'not match the namespace sent on the request')
        meta['namespace'] = target.namespace
    if not meta.get('name') and meta.get('generateName'):
        meta['name'] = meta['generateName'] + controllers.random_suffix()
    if not meta.get('name'):
        raise ApiError(422, f'{api_kind.kind} is invalid: metadata.name: '
                       'Required value: name or generateName is required')
    _check_namespace(store, api_kind, target.namespace)
    if store.get(key_of(api_kind, target.namespace, meta['name'])):
        raise already_exists(api_kind, meta['name'])
    if req.query.get('dryRun') == 'All':
        return 201, obj
    _prepare(api_kind, obj)
    stored = store.put_new(api_kind, obj)
    if api_kind.kind == 'Pod':
        controllers.start_pod(store, stored, timing)
    controllers.advance(store, timing)
    return 201, copy.deepcopy(stored)


def _evict(store: Store, req: Request, timing: Timing) -> tuple[int, dict]:
    pod = _object(store, req.target)
    eviction.check(store, pod)
    options = (_body(req).get('deleteOptions') or {})
    grace = options.get('gracePeriodSeconds')
    key = key_of(req.target.api_kind, req.target.namespace, req.target.name)
    controllers.mark_terminating(store, key, timing,
                                 None if grace is None else int(grace))
    controllers.advance(store, timing)
    return 201, {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {},
                 'status': 'Success', 'code': 201}


def _prepare(api_kind: ApiKind, obj: dict) -> None:
    if api_kind.kind == 'Secret':
        # The API keeps stringData as base64 data, and never shows it.
        data = obj.setdefault('data', {})
        for name, text in (obj.pop('stringData', None) or {}).items():
            data[name] = base64.b64encode(str(text).encode()).decode()
        obj.setdefault('type', 'Opaque')
    elif api_kind.kind == 'Namespace':
        obj['status'] = {'phase': 'Active'}
    elif api_kind.kind == 'Service':
        obj.setdefault('spec', {}).setdefault(
            'clusterIP', f'10.96.0.{next(_CLUSTER_IPS) % 250}')
    elif api_kind.kind in controllers.WORKLOADS:
        obj['status'] = {}
        if api_kind.kind in ('Deployment', 'StatefulSet', 'ReplicaSet'):
            obj.setdefault('spec', {}).setdefault('replicas', 1)


def replace(store: Store, req: Request, timing: Timing) -> tuple[int, dict]:
    target = req.target
    current = _object(store, target)
    body = _body(req)
    wanted = body.get('metadata', {}).get('resourceVersion')
    if wanted and wanted != current['metadata']['resourceVersion']:
        raise ApiError(409, 'the object has been modified; please apply '
                       'your changes to the latest version and try again',
                       'Conflict')
    if target.subresource == 'scale':
        return _set_replicas(store, req, current,
                             (body.get('spec') or {}).get('replicas'),
                             timing)
    return _store_update(store, req, current, body, timing)


def patch_object(store: Store, req: Request,
                 timing: Timing) -> tuple[int, dict]:
    target = req.target
    if req.content_type not in _MERGE_TYPES:
        raise ApiError(415, f'the lab API applies merge patches only, '
                       f'not {req.content_type or "(no content type)"}')
    apply_patch = _MERGE_TYPES[req.content_type]
    current = _object(store, target)
    if target.subresource == 'scale':
        changed = apply_patch(_scale_view(current), req.body)
        return _set_replicas(store, req, current,
                             (changed.get('spec') or {}).get('replicas'),
                             timing)
    return _store_update(store, req, current,
                         apply_patch(copy.deepcopy(current), req.body),
                         timing)


def _set_replicas(store: Store, req: Request, current: dict,
                  replicas: object, timing: Timing) -> tuple[int, dict]:
    if not isinstance(replicas, int) or replicas < 0:
        raise ApiError(422, 'Scale.autoscaling "..." is invalid: '
                       'spec.replicas: must be a non-negative integer')
    key = key_of(req.target.api_kind, req.target.namespace, req.target.name)
    if current['spec'].get('replicas') != replicas:
        current['spec']['replicas'] = replicas
        store.touch(key, spec_changed=True)
    controllers.advance(store, timing)
    return 200, _scale_view(store.objects[key])


def _store_update(store: Store, req: Request, current: dict, new: dict,
                  timing: Timing) -> tuple[int, dict]:
    target = req.target
    key = key_of(target.api_kind, target.namespace, target.name)
    meta = new.setdefault('metadata', {})
    for owned in ('uid', 'creationTimestamp', 'namespace', 'name',
                  'generation', 'deletionTimestamp', 'ownerReferences'):
        if owned in current['metadata']:
            meta[owned] = current['metadata'][owned]
    new['apiVersion'] = current['apiVersion']
    new['kind'] = current['kind']
    if target.subresource != 'status':
        new['status'] = current.get('status', {})
    spec_changed = new.get('spec') != current.get('spec')
    store.objects[key] = new
    store.touch(key, spec_changed=spec_changed)
    controllers.advance(store, timing)
    return 200, copy.deepcopy(new)


def _delete_options(req: Request) -> tuple[str | None, int | None]:
    body = req.body if isinstance(req.body, dict) else {}
    policy = req.query.get('propagationPolicy') or body.get(
        'propagationPolicy')
    grace = req.query.get('gracePeriodSeconds',
                          body.get('gracePeriodSeconds'))
    return policy, None if grace is None else int(grace)


def delete(store: Store, req: Request, timing: Timing) -> tuple[int, dict]:
    target = req.target
    if target.name is None or target.subresource:
        raise ApiError(405, 'the double deletes single objects only')
    obj = _object(store, target)
    key = key_of(target.api_kind, target.namespace, target.name)
    policy, grace = _delete_options(req)
    kind = target.api_kind.kind
    if kind == 'Namespace':
        _delete_namespace(store, key, timing)
    elif kind == 'Pod' and grace != 0:
        controllers.mark_terminating(store, key, timing, grace)
    elif kind == 'PersistentVolume' and controllers.held(store, key, obj):
        controllers.mark_terminating(store, key, timing, grace)
    elif controllers.dependents(store, obj) and policy == 'Foreground':
        obj['metadata']['finalizers'] = ['foregroundDeletion']
        controllers.mark_terminating(store, key, timing, grace)
        for dependent in controllers.dependents(store, obj):
            controllers.mark_terminating(store, dependent, timing, grace)
    else:
        if policy == 'Orphan':
            for dependent in controllers.dependents(store, obj):
                store.objects[dependent]['metadata'].pop(
                    'ownerReferences', None)
        store.remove(key)
        controllers.advance(store, timing)
        return 200, success(target.api_kind, target.name,
                            obj['metadata']['uid'])
    controllers.advance(store, timing)
    return 200, copy.deepcopy(store.objects.get(key, obj))


def _delete_namespace(store: Store, key, timing: Timing) -> None:
    namespace = key[2]
    store.objects[key]['status'] = {'phase': 'Terminating'}
    controllers.mark_terminating(store, key, timing)
    for content in [k for k in store.objects if k[1] == namespace]:
        if content[0] == 'Pod':
            controllers.mark_terminating(store, content, timing)
        else:
            store.remove(content)

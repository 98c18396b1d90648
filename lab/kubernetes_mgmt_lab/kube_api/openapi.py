"""OpenAPI v3 documents, as much of them as kubectl reads.

kubectl validates what it sends (``create``, ``apply``; ``--validate``
is strict by default) on the server when the server says it can: the
PATCH operation of the kind's path in its group-version's document takes
a ``fieldValidation`` query parameter. Without these documents kubectl
refuses to send anything. The documents carry no schemas: the server
accepts every field, and kubectl then builds its patches from the types
compiled into it.

kubectl validates a ``List`` (which no v3 document describes) against
the OpenAPI v2 document instead, a protobuf it must be able to fetch;
kinds that document does not describe are not checked. The v2 document
served is the empty one: no definitions.
"""
from __future__ import annotations

import hashlib
import json

from kubernetes_mgmt_lab.kube_api import catalog
from kubernetes_mgmt_lab.kube_api.catalog import ApiKind

ROOT = '/openapi/v3'
V2 = '/openapi/v2'
V2_CONTENT_TYPE = 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf'
# A protobuf message with no field set is zero bytes long.
V2_DOCUMENT = b''


def _path_of(group_version: str) -> str:
    return f'api/{group_version}' if '/' not in group_version \
        else f'apis/{group_version}'


def _group_versions() -> list[str]:
    seen: list[str] = []
    for api_kind in catalog.KINDS:
        if api_kind.group_version not in seen:
            seen.append(api_kind.group_version)
    return seen


def _object_path(api_kind: ApiKind) -> str:
    base = f'/{_path_of(api_kind.group_version)}'
    if api_kind.namespaced:
        base += '/namespaces/{namespace}'
    return f'{base}/{api_kind.plural}/{{name}}'


def _patch(api_kind: ApiKind) -> dict:
    return {'patch': {
        'x-kubernetes-group-version-kind': {
            'group': api_kind.group, 'version': api_kind.version,
            'kind': api_kind.kind},
        'parameters': [{'name': 'fieldValidation', 'in': 'query',
                        'schema': {'type': 'string', 'uniqueItems': True}}],
        'responses': {'200': {'description': 'OK'}}}}


def document(group_version: str) -> dict | None:
    """The document of one group-version, None for an unknown one."""
    kinds = [k for k in catalog.KINDS if k.group_version == group_version
             and 'patch' in k.verbs]
    if not kinds:
        return None
    return {'openapi': '3.0.0',
            'info': {'title': 'Kubernetes', 'version': 'lab'},
            'paths': {_object_path(k): _patch(k) for k in kinds},
            'components': {'schemas': {}}}


def _digest(group_version: str) -> str:
    text = json.dumps(document(group_version), sort_keys=True)
    return hashlib.sha512(text.encode()).hexdigest()[:64].upper()


def root() -> dict:
    return {'paths': {
        _path_of(gv): {'serverRelativeURL':
                       f'{ROOT}/{_path_of(gv)}?hash={_digest(gv)}'}
        for gv in _group_versions() if document(gv) is not None}}


def serve(path: str) -> dict | None:
    """The document at ``path`` (under /openapi/v3), None if none."""
    if path.rstrip('/') == ROOT:
        return root()
    rest = path[len(ROOT) + 1:] if path.startswith(ROOT + '/') else ''
    for gv in _group_versions():
        if rest == _path_of(gv):
            return document(gv)
    return None

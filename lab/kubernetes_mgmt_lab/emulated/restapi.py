"""Read-only REST paths of the stand-in API server."""
from __future__ import annotations

from kubernetes_mgmt_lab.emulated import kinds

_PLURALS = {k.plural: k for k in kinds.KINDS}


def _status(code: int, reason: str, message: str) -> dict:
    return {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {},
            'status': 'Failure', 'message': message, 'reason': reason,
            'code': code}


def _split(path: str) -> tuple[str, list[str]] | None:
    parts = [p for p in path.split('/') if p]
    if parts[:2] == ['api', 'v1']:
        return 'v1', parts[2:]
    if len(parts) >= 3 and parts[0] == 'apis':
        return f'{parts[1]}/{parts[2]}', parts[3:]
    return None


def _items(state: dict, kind: str) -> list[dict]:
    return state.get('objects', {}).get(kind, [])


def get(state: dict, path: str, address: str) -> tuple[int, dict]:
    if path == '/api':
        return 200, {'kind': 'APIVersions', 'versions': ['v1'],
                     'serverAddressByClientCIDRs': [
                         {'clientCIDR': '0.0.0.0/0',
                          'serverAddress': address}]}
    if path == '/apis':
        return 200, {'kind': 'APIGroupList', 'apiVersion': 'v1',
                     'groups': []}
    split = _split(path)
    if split is None:
        return 404, _status(404, 'NotFound', 'the server could not find '
                            'the requested resource')
    api_version, rest = split
    namespace = None
    if len(rest) >= 2 and rest[0] == 'namespaces' and len(rest) != 2:
        namespace, rest = rest[1], rest[2:]
    kind = _PLURALS.get(rest[0]) if rest else None
    if kind is None or kind.api_version != api_version:
        return 404, _status(404, 'NotFound', 'the server could not find '
                            'the requested resource')
    items = [o for o in _items(state, kind.kind)
             if namespace is None or
             o['metadata'].get('namespace') == namespace]
    if len(rest) == 1:
        return 200, {'kind': f'{kind.kind}List', 'apiVersion': api_version,
                     'metadata': {'resourceVersion': str(state.get('rv'))},
                     'items': items}
    for obj in items:
        if obj['metadata']['name'] == rest[1]:
            return 200, obj
    return 404, _status(404, 'NotFound',
                        f'{kind.plural} "{rest[1]}" not found')

"""Label and field selectors of list requests (equality-based)."""
from __future__ import annotations

from kubernetes_mgmt_lab.kube_api.status import ApiError


def _pairs(selector: str, what: str) -> list[tuple[str, str, bool]]:
    pairs = []
    for term in filter(None, (t.strip() for t in selector.split(','))):
        if '!=' in term:
            key, _, value = term.partition('!=')
            pairs.append((key.strip(), value.strip(), False))
        elif '=' in term:
            key, _, value = term.partition('=')
            pairs.append((key.strip(), value.strip().lstrip('='), True))
        else:
            raise ApiError(400, f'unable to parse requirement: {what} '
                           f'selector "{term}" is not supported here')
    return pairs


def matches_labels(obj: dict, selector: str | None) -> bool:
    if not selector:
        return True
    labels = obj['metadata'].get('labels') or {}
    return all((labels.get(k) == v) == equal
               for k, v, equal in _pairs(selector, 'label'))


_FIELDS = {'metadata.name': lambda o: o['metadata'].get('name'),
           'metadata.namespace': lambda o: o['metadata'].get('namespace'),
           'status.phase': lambda o: o.get('status', {}).get('phase'),
           'spec.nodeName': lambda o: o.get('spec', {}).get('nodeName')}


def matches_fields(obj: dict, selector: str | None) -> bool:
    if not selector:
        return True
    for key, value, equal in _pairs(selector, 'field'):
        if key not in _FIELDS:
            raise ApiError(400, f'field label not supported: {key}')
        if (_FIELDS[key](obj) == value) != equal:
            return False
    return True

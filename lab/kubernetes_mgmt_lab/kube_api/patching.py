"""PATCH bodies: JSON merge patches (RFC 7386) and the part of strategic
merge patches kubectl sends (``label``, ``cordon``, ``apply``).

A strategic patch merges lists of named elements (containers, env,
volumes, ports ...) element by element, by ``name``; ``$patch: delete``
removes an element and the ``$setElementOrder``/``$retainKeys``
directives are dropped (the order and key set they describe are what
merging already gives for the objects the lab patches).
"""
from __future__ import annotations

import copy


def merge(base, patch):
    """RFC 7386: maps merge, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(base) if isinstance(base, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


def _named(items) -> bool:
    return isinstance(items, list) and bool(items) and all(
        isinstance(i, dict) and 'name' in i for i in items)


def _merge_named(base: list, patch: list) -> list:
    out = [copy.deepcopy(i) for i in base]
    for item in patch:
        position = next((n for n, old in enumerate(out)
                         if old.get('name') == item['name']), None)
        if item.get('$patch') == 'delete':
            if position is not None:
                del out[position]
        elif position is None:
            out.append(strategic_merge({}, item))
        else:
            out[position] = strategic_merge(out[position], item)
    return out


def strategic_merge(base, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(base) if isinstance(base, dict) else {}
    for key, value in patch.items():
        if key.startswith('$'):
            continue
        if value is None:
            out.pop(key, None)
        elif _named(value) and _named(out.get(key)):
            out[key] = _merge_named(out[key], value)
        else:
            out[key] = strategic_merge(out.get(key), value)
    return out

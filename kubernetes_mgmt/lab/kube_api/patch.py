"""JSON merge patch (RFC 7386); strategic merge patches are applied the
same way, which is exact for the maps and scalars the tests patch."""
from __future__ import annotations

import copy


def merge(target: object, patch: object) -> object:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge(result.get(key), value)
    return result

"""Read attributes of Tacker objects, of their stand-ins, and of the
plain dicts Tacker sometimes passes instead, alike.

A Tacker versioned object raises on an unset field instead of returning
None; ``obj_attr_is_set`` tells first.
"""
from __future__ import annotations

from collections.abc import Mapping


def value(obj: object, name: str, default=None):
    if obj is None:
        return default
    if isinstance(obj, Mapping):
        result = obj.get(name)
    else:
        is_set = getattr(obj, 'obj_attr_is_set', None)
        if is_set is not None and not is_set(name):
            return default
        result = getattr(obj, name, default)
    return default if result is None else result

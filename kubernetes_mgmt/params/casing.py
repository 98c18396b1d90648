"""camelCase to snake_case conversion of stored request parameters.

Older Tacker releases stored ``additionalParams`` with camelCase keys
(``k8sClusterInstallationParam``, ``masterNode``, ``sshCpName``...); newer
ones keep the snake_case the user wrote.  Converting every key lets one
validator read both.
"""
from __future__ import annotations

import re
from typing import Any

from kubernetes_mgmt.params.paths import Path

# A boundary before an upper-case letter that follows a lower-case letter
# or digit (k8sNode -> k8s_node), and inside acronyms (HTTPProxy ->
# http_proxy).
_BOUNDARY = re.compile(r'(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])')


def snake_key(key: str) -> str:
    """``podCidr`` -> ``pod_cidr``; keys without capitals are unchanged."""
    if not any(c.isupper() for c in key):
        return key
    return _BOUNDARY.sub('_', key).lower()


def snake_keys(value: Any, at: Path = ()) -> tuple[Any, list[Path]]:
    """Copy ``value`` with every dict key in snake_case.

    Returns the copy and the paths where two keys became one (e.g. both
    ``podCidr`` and ``pod_cidr``); there the key already in snake_case is
    kept, being the newer spelling.
    """
    clashes: list[Path] = []
    if isinstance(value, list):
        items = []
        for index, item in enumerate(value):
            converted, inner = snake_keys(item, (*at, index))
            items.append(converted)
            clashes += inner
        return items, clashes
    if not isinstance(value, dict):
        return value, clashes
    result: dict[Any, Any] = {}
    for key, item in value.items():
        new_key = snake_key(key) if isinstance(key, str) else key
        converted, inner = snake_keys(item, (*at, new_key))
        clashes += inner
        if new_key in result:
            clashes.append((*at, new_key))
            if new_key != key:
                continue  # the snake_case spelling was already there
        result[new_key] = converted
    return result, clashes

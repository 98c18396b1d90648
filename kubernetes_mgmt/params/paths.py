"""JSON paths of request fields, as shown in error messages.

A path is kept as a tuple of keys (``str``) and list indices (``int``) and
rendered as ``additionalParams.k8s_cluster_installation_param.
master_node.pod_cidr`` or ``...nfs_server_setup_params[1].export_dir``.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

Part = str | int
Path = tuple[Part, ...]

ROOT_LABEL = '(request body)'

# Keys made of these characters can be shown with a plain dot; anything
# else (spaces, dots, control characters) is quoted so a hostile key cannot
# break the one-line-per-problem output.
_PLAIN_KEY = re.compile(r'[A-Za-z0-9_-]+')


def render(base: str, parts: Iterable[Part]) -> str:
    """Render ``base`` followed by ``parts`` as a dotted JSON path."""
    text = base
    for part in parts:
        if isinstance(part, int):
            text += f'[{part}]'
        elif _PLAIN_KEY.fullmatch(part):
            text += f'.{part}' if text else part
        else:
            text += f'[{json.dumps(part)}]'
    return text or ROOT_LABEL


def select(node: Any, pattern: Path, at: Path = ()
           ) -> Iterator[tuple[Path, Any]]:
    """(path, value) of each value at ``pattern`` in ``node`` (``'*'``:
    every list entry); wrong types simply don't match."""
    if not pattern:
        yield at, node
        return
    head, rest = pattern[0], pattern[1:]
    if head == '*':
        if isinstance(node, list):
            for index, item in enumerate(node):
                yield from select(item, rest, (*at, index))
    elif isinstance(node, dict) and head in node:
        yield from select(node[head], rest, (*at, head))


def sort_key(path: Sequence[Part]) -> tuple[tuple[int, int, str], ...]:
    """Order paths naturally: list indices numerically, keys by name."""
    return tuple((1, p, '') if isinstance(p, int) else (0, 0, p)
                 for p in path)


_SHOW_MAX = 80


def show(value: str) -> str:
    """Quote a user value for a message: escaped and cut to a sane size.

    Never call this with a password or a proxy URL.
    """
    if len(value) > _SHOW_MAX:
        value = value[:_SHOW_MAX - 3] + '...'
    return repr(value)

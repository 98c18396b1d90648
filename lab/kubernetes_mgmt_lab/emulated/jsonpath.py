"""The JSONPath dialect of ``kubectl -o jsonpath=``: ``{.a.b}``,
``{.items[*].x}``, ``{.a[0]}``, ``{.a[?(@.k=="v")].x}``, ``{..x}``,
``{range ...}{end}``, ``{"\\n"}`` literals, ``\\.`` escapes in keys."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass


class JSONPathError(Exception):
    pass


@dataclass
class _Node:
    kind: str                   # text | path | range | literal
    value: str = ''
    body: list | None = None


def _split_template(template: str) -> list[tuple[str, str]]:
    """[('text', ...), ('expr', ...)] honouring quotes inside {}."""
    out, i, text = [], 0, ''
    while i < len(template):
        ch = template[i]
        if ch != '{':
            text += ch
            i += 1
            continue
        if text:
            out.append(('text', text))
            text = ''
        j, quote = i + 1, None
        while j < len(template):
            c = template[j]
            if quote:
                if c == '\\':
                    j += 1
                elif c == quote:
                    quote = None
            elif c in '"\'':
                quote = c
            elif c == '}':
                break
            j += 1
        if j >= len(template):
            raise JSONPathError(f'unclosed action in {template!r}')
        out.append(('expr', template[i + 1:j].strip()))
        i = j + 1
    if text:
        out.append(('text', text))
    return out


def _build(parts: list[tuple[str, str]], pos: int = 0,
           inner: bool = False) -> tuple[list[_Node], int]:
    nodes = []
    while pos < len(parts):
        kind, value = parts[pos]
        pos += 1
        if kind == 'text':
            nodes.append(_Node('text', value))
        elif value == 'end':
            if not inner:
                raise JSONPathError('not in range, nothing to end')
            return nodes, pos
        elif value.startswith('range '):
            body, pos = _build(parts, pos, True)
            nodes.append(_Node('range', value[6:].strip(), body))
        elif value[:1] in '"\'':
            nodes.append(_Node('literal', _string(value)))
        else:
            nodes.append(_Node('path', value))
    if inner:
        raise JSONPathError('unclosed range')
    return nodes, pos


def _string(quoted: str) -> str:
    body = quoted[1:-1]
    if quoted[0] == "'":
        body = body.replace('"', '\\"')
    return json.loads(f'"{body}"', strict=False)


_TOKEN = re.compile(r"""
    (?P<recurse>\.\.)(?P<rname>(?:\\.|[^.\[\\])+) |
    \.(?P<name>(?:\\.|[^.\[\\])+) |
    \[(?P<bracket>(?:'[^']*'|"[^"]*"|[^\]])*)\]
""", re.VERBOSE)


def _steps(path: str) -> list[tuple[str, str]]:
    path = path.strip()
    if path.startswith(('$', '@')):
        path = path[1:]
    if path in ('', '.'):
        return []
    steps, pos = [], 0
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if not m:
            raise JSONPathError(f'unrecognized character in {path!r}')
        if m.group('recurse'):
            steps.append(('recurse', _unescape(m.group('rname'))))
        elif m.group('name') is not None:
            steps.append(('key', _unescape(m.group('name'))))
        else:
            steps.append(('bracket', m.group('bracket').strip()))
        pos = m.end()
    return steps


def _unescape(name: str) -> str:
    return re.sub(r'\\(.)', r'\1', name)


def _children(value) -> list:
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, list):
        return list(value)
    return []


def _descend(value, name: str) -> list:
    found = []
    if isinstance(value, dict) and name in value:
        found.append(value[name])
    for child in _children(value):
        found += _descend(child, name)
    return found


def _literal(text: str):
    text = text.strip()
    if text[:1] in '"\'':
        return text[1:-1]
    try:
        return json.loads(text)
    except ValueError:
        return text


def _filter(items: list, expr: str) -> list:
    m = re.fullmatch(r'\?\((.*)\)', expr)
    cond = m.group(1).strip()
    op = re.search(r'(==|!=|<=|>=|<|>)', cond)
    out = []
    for item in _children(items) if isinstance(items, (list, dict)) \
            else []:
        if op is None:
            if _walk(item, _steps(cond)):
                out.append(item)
            continue
        left = _walk(item, _steps(cond[:op.start()]))
        right = _literal(cond[op.end():])
        if left and _compare(left[0], op.group(1), right):
            out.append(item)
    return out


def _compare(left, op: str, right) -> bool:
    try:
        return {'==': left == right, '!=': left != right,
                '<': left < right, '>': left > right,
                '<=': left <= right, '>=': left >= right}[op]
    except TypeError:
        return False


def _bracket(value, expr: str) -> list:
    if expr.startswith('?'):
        return _filter(value, expr)
    if expr == '*':
        return _children(value)
    if expr[:1] in '"\'':
        key = _unescape(expr[1:-1])
        return [value[key]] if isinstance(value, dict) and key in value \
            else []
    if not isinstance(value, list):
        return []
    if ':' in expr:
        a, _, b = expr.partition(':')
        return value[int(a) if a else None:int(b) if b else None]
    idx = int(expr)
    return [value[idx]] if -len(value) <= idx < len(value) else []


def _walk(root, steps: list[tuple[str, str]]) -> list:
    current = [root]
    for kind, arg in steps:
        nxt = []
        for value in current:
            if kind == 'key':
                if isinstance(value, dict) and arg in value:
                    nxt.append(value[arg])
                elif arg == '*':
                    nxt += _children(value)
            elif kind == 'recurse':
                nxt += _descend(value, arg)
            else:
                nxt += _bracket(value, arg)
        current = nxt
    return current


def _format(value) -> str:
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(',', ':'))
    return '' if value is None else str(value)


def _render(nodes: list[_Node], root, current) -> str:
    out = []
    for node in nodes:
        if node.kind in ('text', 'literal'):
            out.append(node.value)
        elif node.kind == 'path':
            base = root if node.value.startswith('$') else current
            out.append(' '.join(_format(v)
                                for v in _walk(base, _steps(node.value))))
        else:
            base = root if node.value.startswith('$') else current
            for item in _walk(base, _steps(node.value)):
                out.append(_render(node.body or [], root, item))
    return ''.join(out)


def evaluate(template: str, data) -> str:
    nodes, _ = _build(_split_template(template))
    return _render(nodes, data, data)


def values(path: str, data) -> list:
    """All values a single path selects (for custom-columns)."""
    path = path.strip()
    if path.startswith('{') and path.endswith('}'):
        path = path[1:-1]
    return _walk(data, _steps(path))

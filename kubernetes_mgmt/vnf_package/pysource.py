"""The Python modules of a package, read with ``ast`` and never run.

What a module binds at its top level (classes, imports, ``A = B``
aliases) is enough to follow a class to its bases across the package's
own modules, and to see which of its imports the package cannot satisfy.
Module names are those Tacker gives them: the package root is on
``sys.path``, so ``UserData/x.py`` is ``UserData.x``.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

from kubernetes_mgmt.vnf_package.csar import Csar

# Nested statements that still run at import (not function or class bodies).
_BLOCKS = ('body', 'orelse', 'finalbody', 'handlers')


class SourceProblem(Exception):
    """A module cannot be parsed; the message is ``path:line: reason``."""


@dataclass
class Module:
    name: str                   # dotted, as Python imports it
    path: str                   # member of the CSAR
    tree: ast.Module
    bindings: dict[str, str] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)

    @property
    def package(self) -> str:
        """The package relative imports start from."""
        if self.path.endswith('/__init__.py'):
            return self.name
        return self.name.rpartition('.')[0]


class PackageSource:
    """Parsed modules of one CSAR, by dotted name, parsed once."""

    def __init__(self, csar: Csar):
        self._csar = csar
        self._parsed: dict[str, Module] = {}
        self._tops = {n.split('/')[0].removesuffix('.py') for n in csar.names}

    def in_package(self, dotted: str) -> bool:
        """Whether Python would look for ``dotted`` in the package."""
        return dotted.split('.')[0] in self._tops

    def exists(self, dotted: str) -> bool:
        """A module file, a package or a namespace directory."""
        path = dotted.replace('.', '/')
        return self._csar.has(f'{path}.py') or self.is_namespace(dotted) \
            or self._csar.has(f'{path}/__init__.py')

    def is_namespace(self, dotted: str) -> bool:
        path = dotted.replace('.', '/')
        return not self._csar.has(f'{path}/__init__.py') and any(
            n.startswith(f'{path}/') for n in self._csar.names)

    def module(self, dotted: str) -> Module | None:
        """The package's module ``dotted``; None if it has no such file."""
        path = dotted.replace('.', '/')
        for candidate in (f'{path}.py', f'{path}/__init__.py'):
            if self._csar.has(candidate):
                return self.parse(candidate, dotted)
        return None

    def parse(self, path: str, dotted: str) -> Module:
        if dotted not in self._parsed:
            self._parsed[dotted] = _parse(path, dotted,
                                          self._csar.read(path))
        return self._parsed[dotted]

    def find_class(self, qualified: str, depth: int = 0
                   ) -> tuple[Module, ast.ClassDef] | None:
        """The package's class a qualified name refers to, following
        re-exports (``from .impl import X`` in another module)."""
        owner, _, name = qualified.rpartition('.')
        module = self.module(owner) if owner and self.in_package(owner) \
            else None
        if module is None or depth > 20:
            return None
        if name in module.classes:
            return module, module.classes[name]
        target = module.bindings.get(name)
        if target and target != qualified:
            return self.find_class(target, depth + 1)
        return None


def resolve(module: Module, node: ast.expr) -> str | None:
    """The qualified name an expression such as ``a.B`` refers to."""
    if isinstance(node, ast.Name):
        if node.id in module.bindings:
            return module.bindings[node.id]
        return f'builtins.{node.id}' if node.id in ('object',) else None
    if isinstance(node, ast.Attribute):
        owner = resolve(module, node.value)
        return f'{owner}.{node.attr}' if owner else None
    return None


def imported_module(module: Module, node: ast.ImportFrom) -> str | None:
    """The absolute name of a ``from X import`` (None: above the top)."""
    if not node.level:
        return node.module
    parts = module.package.split('.') if module.package else []
    if node.level > len(parts):
        return None
    base = parts[:len(parts) - node.level + 1]
    return '.'.join([*base, *([node.module] if node.module else [])])


def top_level(statements: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements that run when the module is imported, in order."""
    for statement in statements:
        yield statement
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef,
                                  ast.ClassDef)):
            continue
        for block in _BLOCKS:
            for child in getattr(statement, block, None) or []:
                if isinstance(child, ast.ExceptHandler):
                    yield from top_level(child.body)
                elif isinstance(child, ast.stmt):
                    yield from top_level([child])


def _parse(path: str, dotted: str, data: bytes) -> Module:
    try:
        tree = ast.parse(data, filename=path)
    except SyntaxError as exc:
        raise SourceProblem(f'{path}:{exc.lineno or 1}: {exc.msg}') \
            from None
    except ValueError as exc:       # NUL bytes
        raise SourceProblem(f'{path}: not Python source: {exc}') from None
    except (RecursionError, MemoryError):
        raise SourceProblem(f'{path}: nested too deeply to be read') \
            from None
    module = Module(dotted, path, tree)
    for statement in top_level(tree.body):
        _bind(module, statement)
    return module


def _bind(module: Module, node: ast.stmt) -> None:
    if isinstance(node, ast.ClassDef):
        module.classes[node.name] = node
        module.bindings[node.name] = f'{module.name}.{node.name}'
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        _rebind(module, node.name, f'{module.name}.{node.name}')
    elif isinstance(node, ast.Import):
        for alias in node.names:
            top = alias.name.split('.')[0]
            _rebind(module, alias.asname or top,
                    alias.name if alias.asname else top)
    elif isinstance(node, ast.ImportFrom):
        source = imported_module(module, node)
        for alias in node.names:
            if alias.name != '*':
                _rebind(module, alias.asname or alias.name,
                        source and f'{source}.{alias.name}')
    elif isinstance(node, ast.Assign) and len(node.targets) == 1 and \
            isinstance(node.targets[0], ast.Name):
        _rebind(module, node.targets[0].id, resolve(module, node.value))


def _rebind(module: Module, name: str, target: str | None) -> None:
    """``name`` now refers to ``target`` (None: to something unknown)."""
    module.classes.pop(name, None)
    if target:
        module.bindings[name] = target
    else:
        module.bindings.pop(name, None)

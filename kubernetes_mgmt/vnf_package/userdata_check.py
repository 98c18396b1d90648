"""Is the package's user data class one Tacker can call?

Read with ``ast``, never imported: importing a module runs it, and the
verifier runs as whoever checks the package (often root), before anyone
trusts it. The class is followed to its bases through the package's own
modules until it reaches one of Tacker's user data bases; the methods
Tacker calls must be defined on the way (or by that base) and accept the
arguments Tacker passes. What runs inside the methods is not checked.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

from kubernetes_mgmt.vnf_package import userdata_tacker as tacker
from kubernetes_mgmt.vnf_package.csar import Csar
from kubernetes_mgmt.vnf_package.pysource import (
    Module,
    PackageSource,
    SourceProblem,
    imported_module,
    resolve,
)
from kubernetes_mgmt.vnf_package.request_refs import UserData

# Decorators that leave the signature as written.
_PLAIN = {'staticmethod', 'abstractmethod'}
_IMPORT_ERRORS = {'ImportError', 'ModuleNotFoundError', 'Exception',
                  'BaseException'}


@dataclass(frozen=True)
class Defined:
    """A method the package defines: ``node`` None when it is assigned
    (``instantiate = staticmethod(f)``), whose signature is not read."""
    module: Module
    owner: str
    node: ast.FunctionDef | ast.AsyncFunctionDef | None


@dataclass
class Lineage:
    providers: dict[str, Defined | tacker.Base] = field(default_factory=dict)
    bases: list[tacker.Base] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)
    modules: dict[str, Module] = field(default_factory=dict)


def check(csar: Csar, user_data: UserData, v2: bool = False) -> list[str]:
    """One line per problem of the request's user data class."""
    where = (f'{user_data.request}: {user_data.path} '
             f'({user_data.class_name or "no class named"})')
    if not user_data.class_name:
        return [f'{where}: lcm-operation-user-data-class is not set']
    if not user_data.path.endswith('.py'):
        return [f'{where}: Tacker imports it as the module '
                f'{user_data.module}, which needs a .py file']
    source = PackageSource(csar)
    try:
        module = source.parse(user_data.path, user_data.module)
        lineage = _lineage(source, module, user_data.class_name)
        if lineage is None:
            return [f'{where}: it defines no class {user_data.class_name}']
        problems = _problems(lineage, user_data.class_name,
                             'v2' if v2 else 'v1')
        for visited in lineage.modules.values():
            problems += _import_problems(source, visited)
    except SourceProblem as exc:
        return [f'{where}: {exc}']
    return [f'{where}: {p}' for p in problems]


def _lineage(source: PackageSource, module: Module,
             class_name: str) -> Lineage | None:
    lineage = Lineage(modules={module.name: module})
    if class_name in module.classes:
        _walk(source, module, module.classes[class_name], lineage, set())
        return lineage
    target = module.bindings.get(class_name, '')
    if target in tacker.BASES:      # Tacker's own class, named directly
        _add_base(tacker.BASES[target], lineage)
        return lineage
    found = source.find_class(target) if target else None
    if found is None:
        return None
    _walk(source, *found, lineage, set())
    return lineage


def _walk(source: PackageSource, module: Module, node: ast.ClassDef,
          lineage: Lineage, seen: set[tuple[str, str]]) -> None:
    """Depth first, left to right: Python's order for single
    inheritance, near enough for the rest."""
    if (module.name, node.name) in seen:
        return
    seen.add((module.name, node.name))
    lineage.modules.setdefault(module.name, module)
    for name, method in _methods(node):
        lineage.providers.setdefault(name, Defined(module, node.name,
                                                   method))
    for base in node.bases:
        qualified = resolve(module, base)
        if qualified in tacker.BASES:
            _add_base(tacker.BASES[qualified], lineage)
            continue
        found = source.find_class(qualified) if qualified else None
        if found:
            _walk(source, *found, lineage, seen)
        else:
            lineage.foreign.append(ast.unparse(base))


def _methods(node: ast.ClassDef):
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield item.name, item
        elif isinstance(item, ast.Assign):
            for target in item.targets:
                if isinstance(target, ast.Name):
                    yield target.id, None


def _add_base(base: tacker.Base, lineage: Lineage) -> None:
    lineage.bases.append(base)
    for name in base.declares | base.implements:
        lineage.providers.setdefault(name, base)


def _problems(lineage: Lineage, class_name: str, api: str) -> list[str]:
    if not lineage.bases:
        found = ', '.join(lineage.foreign) or 'none'
        return [f"{class_name} does not derive from Tacker's user data "
                f'base {tacker.expected_bases(api)} (its bases: {found})']
    other = [b for b in lineage.bases if b.api != api]
    if other:
        return [f'{class_name} derives from {other[0].qualified}, a base '
                f"for Tacker's {other[0].api} API, but the package is for "
                f'the {api} API']
    problems, missing = [], []
    for call in tacker.calls(api):
        provider = lineage.providers.get(call.method)
        if isinstance(provider, Defined):
            problems += _signature_problems(provider, call)
        elif call.required and (provider is None or
                                call.method not in provider.implements):
            missing.append(call.method)
    if missing:
        problems.insert(0, f'{class_name} does not implement '
                           f"{', '.join(missing)}, which Tacker's {api} "
                           'API calls')
    return problems


def _signature_problems(defined: Defined, call: tacker.Call) -> list[str]:
    node = defined.node
    if node is None:
        return []
    where = f'{defined.module.path}:{node.lineno}: ' \
            f'{defined.owner}.{node.name}'
    if isinstance(node, ast.AsyncFunctionDef):
        return [f'{where} is a coroutine (async def); Tacker calls it '
                'and does not await it']
    decorators = {_name(d) for d in node.decorator_list}
    if decorators - _PLAIN - {'classmethod'}:
        return []                   # a wrapper: its signature is unknown
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    if 'classmethod' in decorators:
        positional = positional[1:]
    wanted = len(call.args)
    fits = (len(positional) >= wanted or args.vararg is not None) and \
        len(positional) - len(args.defaults) <= wanted and \
        None not in args.kw_defaults
    if fits:
        return []
    return [f'{where}({", ".join(a.arg for a in positional)}) cannot take '
            f'the {wanted} arguments Tacker passes by position '
            f'({", ".join(call.args)})']


def _name(decorator: ast.expr) -> str:
    if isinstance(decorator, ast.Attribute):
        return decorator.attr
    return decorator.id if isinstance(decorator, ast.Name) else '?'


def _import_problems(source: PackageSource, module: Module) -> list[str]:
    """Imports of the package's own modules that it lacks (those in a
    ``try`` that catches ImportError are optional)."""
    problems = []
    for node in _unguarded_imports(module.tree):
        where = f'{module.path}:{node.lineno}'
        if isinstance(node, ast.Import):
            problems += [f'{where}: imports {a.name}, which is not in the '
                         'package' for a in node.names
                         if source.in_package(a.name)
                         and not source.exists(a.name)]
        elif isinstance(node, ast.ImportFrom):
            problems += _from_problems(source, module, node, where)
    return problems


def _from_problems(source: PackageSource, module: Module,
                   node: ast.ImportFrom, where: str) -> list[str]:
    name = imported_module(module, node)
    if name is None:
        return [f'{where}: a relative import above the package root']
    if not source.in_package(name):
        return []
    if not source.exists(name):
        return [f'{where}: imports {name}, which is not in the package']
    target = None if source.is_namespace(name) else source.module(name)
    return [f'{where}: imports {alias.name} from {name}, which has no '
            'such module or name' for alias in node.names
            if alias.name != '*' and not source.exists(f'{name}.{alias.name}')
            and (target is None or alias.name not in target.bindings)]


def _unguarded_imports(node: ast.AST) -> Iterator[ast.Import |
                                                   ast.ImportFrom]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
        return
    guarded = isinstance(node, ast.Try) and any(
        _catches_import_error(h.type) for h in node.handlers)
    for field_name, value in ast.iter_fields(node):
        if guarded and field_name == 'body':
            continue
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, ast.AST):
                yield from _unguarded_imports(child)


def _catches_import_error(handler_type: ast.expr | None) -> bool:
    if handler_type is None:
        return True
    names = handler_type.elts if isinstance(handler_type, ast.Tuple) \
        else [handler_type]
    return any(_name(n) in _IMPORT_ERRORS for n in names)

"""The product's rooms and layers: imports point down, never up; no
packages import each other in a circle; and the rules of the rooms.

From top to bottom (a unit is a package or a top-level module of
``kubernetes_mgmt``; units of one layer may import each other, without a
circle):

1. the entry names and tools: ``driver_file`` (kubernetes_mgmt.py, the
   class Tacker loads and hashes), ``lifecycle`` and ``v2`` (the names
   that file and packaged v2 scripts import), ``cli``, ``vnf_package``,
   ``cnf`` (the CNF infra driver's own vertical);
2. ``shim``: the only package that knows Tacker's objects;
3. ``operations``: one typed request in, an operation's graphs run;
4. ``steps``: the steps' declarations and actions;
5. ``engine``: runs a graph (imports only the base);
6. ``vim``, ``monitoring``: registering the cluster as a VIM; the
   automatic heal's alert rules and Prometheus targets;
7. ``cluster``: the only layer that talks to the VMs' cluster;
8. ``storage``, ``topology``: PVs; the hosts Heat describes;
9. ``remote``, ``params``: SSH and kubectl over it; request parameters;
10. ``state``: the signed state, its generations, the cluster record;
11. ``conf``, ``errors``, ``redact``, ``seams``, the package root.

The graph is read from the code (every import statement, those inside
functions too). The product never imports the lab (kubernetes_mgmt_lab).
Each rule is also run on a copy of the tree with a deliberate violation,
which it must report.
"""
from __future__ import annotations

import ast
import shutil
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = 'kubernetes_mgmt'
ROOT = Path(__file__).resolve().parents[2] / PACKAGE
LAB = 'kubernetes_mgmt_lab'
ROOT_UNIT = '(root)'        # kubernetes_mgmt/__init__.py
DRIVER_FILE = 'driver_file'  # kubernetes_mgmt/kubernetes_mgmt.py
ENTRY = {DRIVER_FILE, 'lifecycle', 'v2', 'cli', 'vnf_package', 'cnf'}
BASE = {'conf', 'errors', 'redact', 'seams', ROOT_UNIT}

LAYERS = (
    ENTRY,
    {'shim'},
    {'operations'},
    {'steps'},
    {'engine'},
    {'vim', 'monitoring'},
    {'cluster'},
    {'storage', 'topology'},
    {'remote', 'params'},
    {'state'},
    BASE,
)
LEVEL = {unit: index for index, layer in enumerate(LAYERS) for unit in layer}


@dataclass(frozen=True)
class Edge:
    source: str          # unit
    target: str          # unit
    where: str           # file:line
    imported: str        # dotted name

    def __str__(self) -> str:
        return f'{self.source} -> {self.target}: {self.where} imports ' \
               f'{self.imported}'


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix('').parts
    if parts[-1] == '__init__':
        parts = parts[:-1]
    return '.'.join(parts)


def _unit(module: str) -> str:
    parts = module.split('.')
    if len(parts) == 1:
        return ROOT_UNIT
    return DRIVER_FILE if parts[1] == PACKAGE else parts[1]


def _exists(module: str, root: Path = ROOT) -> bool:
    relative = Path(*module.split('.')[1:])
    return (root / relative).with_suffix('.py').is_file() or \
        (root / relative / '__init__.py').is_file()


def _targets(node: ast.AST, module: str, is_package: bool,
             package: str = PACKAGE, root: Path = ROOT) -> list[str]:
    """Dotted names of the modules an import statement loads."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ''
    if node.level:
        anchor = module.split('.')
        anchor = anchor if is_package else anchor[:-1]
        anchor = anchor[:len(anchor) - node.level + 1]
        base = '.'.join([*anchor, base] if base else anchor)
    # "from kubernetes_mgmt import redact" loads a submodule; "from
    # kubernetes_mgmt import scripts_dir" an attribute of the package.
    return [f'{base}.{alias.name}'
            if base.startswith(package) and
            _exists(f'{base}.{alias.name}', root)
            else base for alias in node.names]


@dataclass(frozen=True)
class Import:
    source: str          # dotted module
    target: str          # dotted module (or name) it loads
    where: str           # file:line


def _trees(root: Path):
    for path in sorted(root.rglob('*.py')):
        yield path, ast.parse(path.read_text(encoding='utf-8'), str(path))


def module_imports(root: Path = ROOT) -> list[Import]:
    """Every import of the product and the lab's package, by module."""
    found = []
    for path, tree in _trees(root):
        module = _module_name(path, root)
        for node in ast.walk(tree):
            for name in _targets(node, module, path.name == '__init__.py',
                                 root=root):
                if name.split('.')[0] in (PACKAGE, LAB):
                    found.append(Import(
                        module, name,
                        f'{path.relative_to(root.parent)}:{node.lineno}'))
    return found


def import_edges(root: Path = ROOT) -> list[Edge]:
    edges = set()
    for imp in module_imports(root):
        source = _unit(imp.source)
        top = imp.target.split('.')[0]
        target = LAB if top == LAB else _unit(imp.target)
        if target != source:
            edges.add(Edge(source, target, imp.where, imp.target))
    return sorted(edges, key=str)


def _cycles(edges: list[Edge]) -> list[set[str]]:
    """Strongly connected components with more than one unit."""
    graph = defaultdict(set)
    for edge in edges:
        graph[edge.source].add(edge.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(unit: str) -> None:
        index[unit] = low[unit] = len(index)
        stack.append(unit)
        for nxt in sorted(graph[unit]):
            if nxt not in index:
                visit(nxt)
                low[unit] = min(low[unit], low[nxt])
            elif nxt in stack:
                low[unit] = min(low[unit], index[nxt])
        if low[unit] == index[unit]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == unit:
                    break
            if len(component) > 1:
                found.append(component)

    for unit in sorted(graph):
        if unit not in index:
            visit(unit)
    return found


def _report(title: str, edges: list[Edge]) -> str:
    return title + '\n' + '\n'.join(f'  {e}' for e in edges)


def test_the_graph_is_read_from_the_code():
    """The reader sees imports at module level, inside functions, and
    names imported from the package root."""
    edges = {(e.source, e.target) for e in import_edges()}
    assert (DRIVER_FILE, 'lifecycle') in edges
    assert ('operations', 'cluster') in edges
    assert ('vnf_package', ROOT_UNIT) in edges      # scripts_dir
    assert ('cluster', 'remote') in edges
    assert ('cli', 'shim') in edges                  # inside a function


def test_every_unit_has_a_layer():
    units = {e.source for e in import_edges()} | \
        {e.target for e in import_edges()} - {LAB}
    assert units - set(LEVEL) == set(), \
        'units without a layer; add them to LAYERS (and README)'


def test_no_import_points_upward():
    upward = [e for e in import_edges() if e.target != LAB and
              LEVEL.get(e.target, -1) < LEVEL.get(e.source, -1)]
    assert not upward, _report('imports from a lower layer to a higher '
                               'one:', upward)


def test_no_circle_between_packages():
    edges = [e for e in import_edges() if e.target != LAB]
    cycles = _cycles(edges)
    offending = [e for e in edges for c in cycles
                 if e.source in c and e.target in c]
    assert not cycles, _report(f'packages in a circle {cycles}:', offending)


def test_the_product_never_imports_the_lab():
    lab = [e for e in import_edges() if e.target == LAB]
    assert not lab, _report('the product imports the lab:', lab)


# The lab (kubernetes_mgmt_lab, under lab/): its units are its folders
# and its top-level modules; they may import each other in any direction
# but not in a circle (a circle makes two folders one room).
# -- the rules of the rooms ----------------------------------------------
# Each returns what breaks it in the tree at ``root``; the tests run each
# on the product and on a copy with a deliberate violation.

# The operations proper; the other modules of operations/ serve them all.
OPERATIONS = ('instantiate', 'scale', 'heal', 'rebuild', 'terminate')
# Rooms where nothing may reach a VM directly, nor see Tacker's objects.
NO_VM_CALLS = ('engine', 'steps', 'operations', 'shim')
NO_TACKER = ('engine', 'steps', 'operations', 'cluster')
VM_CALLS = {'run', 'upload', 'read_file', 'write_file'}
# What the step actions share: their plan, runtime and script, set once.
SHARED = ('ClusterSetup',)


def _in(module: str, *units: str) -> bool:
    return _unit(module) in units


def engine_outside_base(root: Path = ROOT) -> list[str]:
    """The engine imports nothing but the base (no SSH, no cluster)."""
    return [f'{i.where}: {i.target}' for i in module_imports(root)
            if _in(i.source, 'engine') and
            _unit(i.target) not in BASE | {'engine'}]


def vm_calls_outside_cluster(root: Path = ROOT) -> list[str]:
    """Only the cluster layer (and storage, remote) talks to the VMs: no
    kubectl import, and no command or file transfer on an SSH session
    (``session.run``, ``self.session(node).upload`` ...) in the rooms
    above it."""
    found = [f'{i.where}: {i.target}' for i in module_imports(root)
             if i.target.startswith(f'{PACKAGE}.remote.kubectl') and
             _in(i.source, *NO_VM_CALLS)]
    for path, tree in _trees(root):
        if not _in(_module_name(path, root), *NO_VM_CALLS):
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and
                    isinstance(node.func, ast.Attribute)):
                continue
            name = node.func.attr
            receiver = _name_of(node.func.value)
            if name in VM_CALLS and ('session' in receiver
                                     or receiver == 'kube'):
                found.append(f'{path.relative_to(root.parent)}:'
                             f'{node.lineno}: {receiver}.{name}(...)')
    return found


def _name_of(expr: ast.expr) -> str:
    """The last name of ``session``, ``self.session`` or
    ``self.session(node)``."""
    if isinstance(expr, ast.Call):
        return _name_of(expr.func)
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return expr.id if isinstance(expr, ast.Name) else ''


def operations_importing_operations(root: Path = ROOT) -> list[str]:
    """An operation imports no other operation (what two share lives in
    a module of its own: context, install, vim_steps ...); only the
    printed plans know them all."""
    ops = {f'{PACKAGE}.operations.{name}' for name in OPERATIONS}
    return [f'{i.where}: {i.target}' for i in module_imports(root)
            if i.source.startswith(f'{PACKAGE}.operations.') and
            i.source != f'{PACKAGE}.operations.plans' and
            any(i.target == o or i.target.startswith(o + '.') for o in ops)
            and i.target != i.source]


def shim_imported_from_below(root: Path = ROOT) -> list[str]:
    """What knows Tacker's objects (the shim) is imported only from the
    entry names above it."""
    return [f'{i.where}: {i.target}' for i in module_imports(root)
            if _unit(i.target) == 'shim' and
            _unit(i.source) not in ENTRY | {'shim'}]


def tacker_objects_below_shim(root: Path = ROOT) -> list[str]:
    """No function below the shim takes Tacker's ``vnf_instance`` or
    ``context``."""
    found = []
    for path, tree in _trees(root):
        if not _in(_module_name(path, root), *NO_TACKER):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                 ast.Lambda)):
                args = node.args
                for arg in [*args.posonlyargs, *args.args,
                            *args.kwonlyargs]:
                    if arg.arg in ('vnf_instance', 'context'):
                        found.append(f'{path.relative_to(root.parent)}:'
                                     f'{node.lineno}: {arg.arg}')
    return found


def ready_checks(root: Path = ROOT) -> list[str]:
    """The Ready condition is read in one place (cluster.conditions)."""
    home = root / 'cluster' / 'conditions.py'
    return [f'{path.relative_to(root.parent)}:{node.lineno}'
            for path, tree in _trees(root) if path != home
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value == 'Ready']


def state_kept_between_steps(root: Path = ROOT) -> list[str]:
    """Data moves along the graph's edges: no step action keeps what it
    learnt on the object the actions share for a later step (no
    attribute of a ``ClusterSetup`` set outside its ``__init__``, no
    ``setup.x = ...``)."""
    found = []
    for path, tree in _trees(root):
        shared = {id(f) for c in ast.walk(tree)
                  if isinstance(c, ast.ClassDef) and c.name in SHARED
                  for f in c.body if isinstance(f, ast.FunctionDef)}
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef):
                continue
            for node in ast.walk(func):
                targets = node.targets if isinstance(node, ast.Assign) \
                    else [node.target] if isinstance(
                        node, (ast.AugAssign, ast.AnnAssign)) else []
                for target in targets:
                    if not (isinstance(target, ast.Attribute) and
                            isinstance(target.value, ast.Name)):
                        continue
                    owner = target.value.id
                    if owner == 'setup' or (
                            id(func) in shared and owner == 'self' and
                            func.name != '__init__'):
                        found.append(f'{path.relative_to(root.parent)}:'
                                     f'{node.lineno}: {owner}.'
                                     f'{target.attr}')
    return found


RULES = (engine_outside_base, vm_calls_outside_cluster,
         operations_importing_operations, shim_imported_from_below,
         tacker_objects_below_shim, ready_checks, state_kept_between_steps)

# A deliberate violation of each rule: (file of the copy, code appended).
VIOLATIONS = {
    engine_outside_base: (
        'engine/runner.py', 'from kubernetes_mgmt.remote.ssh import Sessions'),
    vm_calls_outside_cluster: (
        'steps/cluster_setup.py',
        'def _peek(setup, node):\n'
        "    return setup.session(node).read_file('/x', step='peek')"),
    operations_importing_operations: (
        'operations/scale.py',
        'from kubernetes_mgmt.operations import heal as _heal'),
    shim_imported_from_below: (
        'operations/context.py',
        'from kubernetes_mgmt.shim import tacker_objects as _t'),
    tacker_objects_below_shim: (
        'operations/heal.py',
        'def _by_instance(vnf_instance):\n    return vnf_instance.id'),
    ready_checks: (
        'cnf/pods.py', "_READY = {'type': 'Ready', 'status': 'True'}"),
    state_kept_between_steps: (
        'operations/scale.py',
        'def _keep(setup, node):\n    setup.first = node'),
}


@pytest.mark.parametrize('rule', RULES, ids=lambda r: r.__name__)
def test_the_product_keeps_the_rule(rule):
    broken = rule()
    assert not broken, f'{rule.__doc__}\n' + '\n'.join(broken)


@pytest.mark.parametrize('rule', RULES, ids=lambda r: r.__name__)
def test_the_rule_finds_a_deliberate_violation(rule, tmp_path):
    copy = tmp_path / PACKAGE
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(
        '__pycache__'))
    assert rule(copy) == []
    name, code = VIOLATIONS[rule]
    with (copy / name).open('a', encoding='utf-8') as out:
        out.write('\n\n' + code + '\n')
    assert rule(copy), f'{rule.__name__} missed: {code}'


LAB_ROOT = ROOT.parent / 'lab' / LAB


def _lab_unit(module: str) -> str:
    parts = module.split('.')
    return parts[1] if len(parts) > 1 else ROOT_UNIT


def lab_import_edges() -> list[Edge]:
    edges = set()
    for path in sorted(LAB_ROOT.rglob('*.py')):
        module = _module_name(path, LAB_ROOT)
        source = _lab_unit(module)
        tree = ast.parse(path.read_text(encoding='utf-8'), str(path))
        for node in ast.walk(tree):
            for name in _targets(node, module, path.name == '__init__.py',
                                 LAB, LAB_ROOT):
                target = _lab_unit(name)
                if name.split('.')[0] == LAB and target != source:
                    edges.add(Edge(
                        source, target,
                        f'{path.relative_to(LAB_ROOT.parent)}:{node.lineno}',
                        name))
    return sorted(edges, key=str)


def test_the_lab_graph_is_read_from_the_code():
    edges = {(e.source, e.target) for e in lab_import_edges()}
    assert ('emulated', 'kube_api') in edges        # module level
    assert ('hosts', 'emulated') in edges           # inside a function
    assert ('kube_api', 'pki') in edges             # from the lab's root
    assert ('emulated', 'pki') in edges


def test_no_circle_between_lab_folders_and_modules():
    edges = lab_import_edges()
    cycles = _cycles(edges)
    offending = [e for e in edges for c in cycles
                 if e.source in c and e.target in c]
    assert not cycles, _report(f'lab units in a circle {cycles}:', offending)

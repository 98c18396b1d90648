"""The product's packages form layers: imports point down, never up, and
no packages import each other in a circle.

From top to bottom (a unit is a package or a top-level module of
``kubernetes_mgmt``; units of one layer may import each other, without a
circle):

1. ``shim`` (kubernetes_mgmt.kubernetes_mgmt, the file Tacker loads),
   ``v2`` (the LCM script Tacker's v2 API runs), ``cli``,
   ``vnf_package``, ``cnf`` (the CNF infra driver's own vertical): the
   entry points;
2. ``lifecycle``: what each hook does;
3. ``orchestration``: runs an operation's steps over the hosts;
4. ``vim``: registering the cluster as a VIM;
5. ``instance_state``: the driver's state stored in the VNF instance;
6. ``cluster``: cluster steps on the nodes;
7. ``storage``, ``topology``: PVs; the hosts Heat describes;
8. ``remote``, ``params``, ``package``, ``integrity``, ``generations``:
   SSH and kubectl over it; request parameters; VNF package files;
   signatures; the stored state's generations this host has seen;
9. ``conf``, ``errors``, ``redact``, ``tacker_objects``, ``seams``,
   ``durable``, the package root: options, errors, masking, Tacker's
   objects, the seams other distributions plug into, crash-safe files.

The graph is read from the code (every import statement, those inside
functions too). The product never imports the lab (kubernetes_mgmt_lab);
the lab's folders and top-level modules import each other without a
circle.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

PACKAGE = 'kubernetes_mgmt'
ROOT = Path(__file__).resolve().parents[2] / PACKAGE
LAB = 'kubernetes_mgmt_lab'
ROOT_UNIT = '(root)'        # kubernetes_mgmt/__init__.py
SHIM_UNIT = 'shim'          # kubernetes_mgmt/kubernetes_mgmt.py

LAYERS = (
    {SHIM_UNIT, 'v2', 'cli', 'vnf_package', 'cnf'},
    {'lifecycle'},
    {'orchestration'},
    {'vim'},
    {'instance_state'},
    {'cluster'},
    {'storage', 'topology'},
    {'remote', 'params', 'package', 'integrity', 'generations'},
    {'conf', 'errors', 'redact', 'tacker_objects', 'seams', 'durable',
     ROOT_UNIT},
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
    return SHIM_UNIT if parts[1] == PACKAGE else parts[1]


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


def import_edges() -> list[Edge]:
    edges = set()
    for path in sorted(ROOT.rglob('*.py')):
        module = _module_name(path)
        source = _unit(module)
        tree = ast.parse(path.read_text(encoding='utf-8'), str(path))
        for node in ast.walk(tree):
            for name in _targets(node, module, path.name == '__init__.py'):
                top = name.split('.')[0]
                if top not in (PACKAGE, LAB):
                    continue
                target = LAB if top == LAB else _unit(name)
                if target != source:
                    edges.add(Edge(
                        source, target,
                        f'{path.relative_to(ROOT.parent)}:{node.lineno}',
                        name))
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
    assert ('shim', 'lifecycle') in edges
    assert ('orchestration', 'cluster') in edges
    assert ('vnf_package', ROOT_UNIT) in edges      # scripts_dir
    assert ('cluster', 'remote') in edges


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

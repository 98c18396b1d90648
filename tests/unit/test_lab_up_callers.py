"""Every ``Lab.up(...)`` call in the repository names only keywords that
``Lab.up`` takes. The lab's own services call it in processes of their
own (the lab cloud), where a stale keyword shows only as a 500 far from
its cause; twice a removed keyword survived in such a caller."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

from kubernetes_mgmt_lab.manager import Lab

REPO = Path(__file__).resolve().parents[2]
SOURCES = ('lab/kubernetes_mgmt_lab', 'tests', 'bench')


def _lab_up_calls():
    for top in SOURCES:
        for path in sorted((REPO / top).rglob('*.py')):
            tree = ast.parse(path.read_text(encoding='utf-8'))
            for node in ast.walk(tree):
                func = getattr(node, 'func', None)
                if isinstance(node, ast.Call) and \
                        isinstance(func, ast.Attribute) and \
                        func.attr == 'up' and \
                        isinstance(func.value, ast.Name) and \
                        func.value.id == 'Lab':
                    yield path.relative_to(REPO), node


def test_lab_up_callers_use_its_keywords():
    taken = set(inspect.signature(Lab.up).parameters)
    calls = list(_lab_up_calls())
    assert len(calls) >= 5         # the cloud's two, the CLI, tests
    wrong = [f'{path}:{call.lineno}: {kw.arg}' for path, call in calls
             for kw in call.keywords
             if kw.arg is not None and kw.arg not in taken]
    assert wrong == []

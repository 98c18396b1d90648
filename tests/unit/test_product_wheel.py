"""The product's wheel carries no lab, and works alone; its source
distribution carries the manual the README links to.

Built from a copy of the product's sources (stale build/ directories of
the checkout cannot leak into it), installed with its dependencies
into a fresh virtualenv: the shim Tacker loads imports there, every
module of the product imports without loading the lab, and the CLI
offers only the product's own commands. Needs the package index (or
pip's cache) for the dependencies.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = ('setup.py', 'setup.cfg', 'MANIFEST.in', 'README.rst',
           'kubernetes_mgmt', 'scripts', 'samples', 'docs')

# Imports every module of the installed product, then reports what of
# the lab got loaded or could be found.
PROBE = '''
import importlib, pkgutil, sys
import kubernetes_mgmt, kubernetes_mgmt.kubernetes_mgmt
for info in pkgutil.walk_packages(kubernetes_mgmt.__path__,
                                  'kubernetes_mgmt.'):
    if info.name != 'kubernetes_mgmt.cli.__main__':
        importlib.import_module(info.name)
loaded = sorted(m for m in sys.modules if m.startswith('kubernetes_mgmt_'))
print('lab modules loaded:', loaded)
print('lab installed:', importlib.util.find_spec('kubernetes_mgmt_lab'))
'''


def _run(*argv: str, cwd: Path) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True,
                          check=False, timeout=300)
    assert done.returncode == 0, \
        f'{" ".join(argv)} failed:\n{done.stdout}\n{done.stderr}'
    return done.stdout


def _sources(work: Path) -> Path:
    source = work / 'src'
    for name in SOURCES:
        origin = REPO / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.
                            ignore_patterns('__pycache__', '*.pyc'))
        else:
            source.mkdir(exist_ok=True)
            shutil.copy2(origin, source / name)
    return source


@pytest.fixture(scope='module')
def wheel(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp('wheel')
    source = _sources(work)
    _run(sys.executable, '-m', 'pip', 'wheel', '-q', '--no-deps',
         '--no-build-isolation', '--use-pep517', '-w', str(work / 'dist'),
         str(source), cwd=work)
    built = list((work / 'dist').glob('tacker_kubernetes_mgmt-*.whl'))
    assert len(built) == 1, built
    return built[0]


def test_the_wheel_has_no_lab_file(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n == 'kubernetes_mgmt/kubernetes_mgmt.py' for n in names)
    assert any(n.startswith('kubernetes_mgmt/data/scripts/') for n in names)
    lab = [n for n in names if 'kubernetes_mgmt_lab' in n or
           n.startswith('kubernetes_mgmt/lab/')]
    assert lab == []
    outside = [n for n in names if not n.startswith(
        ('kubernetes_mgmt/', 'tacker_kubernetes_mgmt-'))]
    assert outside == []


def test_the_product_alone_imports_and_never_loads_the_lab(wheel,
                                                          tmp_path):
    venv = tmp_path / 'venv'
    _run(sys.executable, '-m', 'venv', str(venv), cwd=tmp_path)
    python = str(venv / 'bin' / 'python')
    _run(python, '-m', 'pip', 'install', '-q',
         '--disable-pip-version-check', str(wheel), cwd=tmp_path)
    # -I: only the fresh venv, not this checkout, is on sys.path.
    _run(python, '-I', '-c', 'import kubernetes_mgmt.kubernetes_mgmt',
         cwd=tmp_path)
    report = _run(python, '-I', '-c', PROBE, cwd=tmp_path)
    assert 'lab modules loaded: []' in report
    assert 'lab installed: None' in report
    usage = _run(str(venv / 'bin' / 'kubernetes-mgmt'), '--help',
                 cwd=tmp_path)
    # Only the product's own sub-commands: lab and demo come with the lab.
    assert '{validate-request,package,plan,monitoring}' in usage


def test_importing_the_product_loads_no_lab_even_when_installed(tmp_path):
    """Next to the lab (this environment), importing every module of
    the product still loads nothing of it: the lab comes in only when a
    seam or a sub-command names it."""
    report = _run(sys.executable, '-I', '-c', PROBE, cwd=tmp_path)
    assert 'lab modules loaded: []' in report
    assert 'lab installed: None' not in report


def test_the_source_distribution_holds_the_manual_the_readme_links(
        tmp_path):
    """A reader of the sdist's README finds each page of docs/ it links
    to (the lab's own README travels with the lab)."""
    source = _sources(tmp_path)
    _run(sys.executable, 'setup.py', '-q', 'sdist', '-d',
         str(tmp_path / 'dist'), cwd=source)
    # setuptools names it with '-' or, newer, with '_'.
    sdist, = (tmp_path / 'dist').glob('tacker[-_]kubernetes[-_]mgmt-*.tar.gz')
    with tarfile.open(sdist) as tar:
        names = {n.split('/', 1)[1] for n in tar.getnames() if '/' in n}
    readme = (REPO / 'README.rst').read_text(encoding='utf-8')
    linked = set(re.findall(r'<(docs/[^>]+\.rst)>`__', readme))
    assert len(linked) >= 8, linked
    assert linked - names == set()
    assert {n for n in names if n.startswith('docs/')} >= {
        str(p.relative_to(REPO)) for p in (REPO / 'docs').glob('*.rst')}

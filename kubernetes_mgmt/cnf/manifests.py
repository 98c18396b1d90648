"""Read the Kubernetes resource files a request names.

The files are paths inside the VNF package
(``additionalParams['lcm-kubernetes-def-files']``); a path that leaves
the package directory, a URL, a missing file or a document that is not a
Kubernetes object is a request problem, reported with the list index.
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path

import yaml

from kubernetes_mgmt.errors import Problem

FILES_KEY = 'lcm-kubernetes-def-files'
FILES_FIELD = f'additionalParams.{FILES_KEY}'


@dataclass(frozen=True, eq=False)
class Manifest:
    """One object of one resource file (compared by identity: two
    files may hold equal objects)."""

    source: str            # the path as the request gave it
    body: dict

    @property
    def api_version(self) -> str:
        return self.body['apiVersion']

    @property
    def kind(self) -> str:
        return self.body['kind']

    @property
    def name(self) -> str:
        return self.body['metadata']['name']

    @property
    def namespace(self) -> str | None:
        return self.body['metadata'].get('namespace') or None

    def describe(self) -> str:
        return f'{self.kind}/{self.name} ({self.source})'


def list_problem(files: object) -> Problem | None:
    """The file list must be a non-empty list."""
    if isinstance(files, list) and files:
        return None
    return Problem(FILES_FIELD, 'required: a non-empty list of resource '
                   'file paths inside the VNF package')


def form_problem(value: object, where: str) -> Problem | None:
    """What is wrong with one listed path as written, before the package
    is looked at: not a path, a URL, or a path that leaves the package."""
    if not isinstance(value, str) or not value.strip():
        return Problem(where, 'must be a non-empty path string')
    if '://' in value:
        return Problem(where, f'{value!r} is a URL; only paths inside the '
                       'VNF package are accepted')
    normal = posixpath.normpath(value)
    if Path(value).is_absolute() or normal == '..' or \
            normal.startswith('../'):
        return Problem(where, _outside(value))
    return None


def _outside(value: str) -> str:
    return f'{value!r} points outside the VNF package'


def _resolve(package_dir: Path, value: object, where: str,
             problems: list[Problem]) -> Path | None:
    problem = form_problem(value, where)
    if problem:
        problems.append(problem)
        return None
    root = package_dir.resolve()
    path = (root / value).resolve()
    if not path.is_relative_to(root):       # through a symlink
        problems.append(Problem(where, _outside(value)))
        return None
    if not path.is_file():
        problems.append(Problem(where, f'{value!r} is not a file of the '
                                'VNF package'))
        return None
    return path


def _document_problem(doc: object) -> str | None:
    if not isinstance(doc, dict):
        return 'is not a mapping'
    for key in ('apiVersion', 'kind'):
        if not isinstance(doc.get(key), str) or not doc[key]:
            return f'has no {key}'
    metadata = doc.get('metadata')
    if not isinstance(metadata, dict) or not isinstance(
            metadata.get('name'), str) or not metadata['name']:
        return ('has no metadata.name (generateName is not supported: '
                'the driver must know what it created)')
    namespace = metadata.get('namespace')
    if namespace is not None and not isinstance(namespace, str):
        return 'has a metadata.namespace that is not a string'
    return None


def _parse(path: Path, source: str, where: str,
           problems: list[Problem]) -> list[Manifest]:
    try:
        docs = list(yaml.safe_load_all(path.read_text(encoding='utf-8')))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        problems.append(Problem(where, f'{source}: cannot be read as YAML: '
                                f'{exc}'))
        return []
    found = []
    for number, doc in enumerate(docs, start=1):
        if doc is None:
            continue                 # an empty document between '---'
        problem = _document_problem(doc)
        if problem:
            problems.append(Problem(where, f'{source}: document {number} '
                                    f'{problem}'))
        else:
            found.append(Manifest(source, doc))
    return found


def read(package_dir: Path, files: object,
         problems: list[Problem]) -> list[Manifest]:
    """Every object of every listed file, in order. Problems (bad paths,
    unreadable files, documents that are not objects, duplicates) are
    appended to ``problems``."""
    problem = list_problem(files)
    if problem:
        problems.append(problem)
        return []
    found: list[Manifest] = []
    for index, value in enumerate(files):
        where = f'{FILES_FIELD}[{index}]'
        path = _resolve(package_dir, value, where, problems)
        if path is not None:
            found.extend(_parse(path, str(value), where, problems))
    _check_duplicates(found, problems)
    return found


def _check_duplicates(found: list[Manifest], problems: list[Problem]):
    seen: dict[tuple[str, str], Manifest] = {}
    for manifest in found:
        key = (manifest.kind, manifest.name)
        if key in seen:
            problems.append(Problem(FILES_FIELD, (
                f'{manifest.kind}/{manifest.name} is defined twice: in '
                f'{seen[key].source} and {manifest.source}')))
        seen[key] = manifest

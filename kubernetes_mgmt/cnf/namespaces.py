"""Choose the one namespace a CNF lives in.

``additionalParams.namespace`` wins; else the single namespace the
resource files name; else ``default``. An object without a namespace
goes wherever the CNF goes, so it never conflicts; two different
explicit namespaces (or one that differs from the requested one) are an
error naming the files and namespaces. Cluster-scoped objects do not
count.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from kubernetes_mgmt.cnf.manifests import FILES_FIELD, Manifest
from kubernetes_mgmt.errors import Problem

NAMESPACE_FIELD = 'additionalParams.namespace'
DEFAULT = 'default'
_DNS_LABEL = re.compile(r'[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z')


@dataclass(frozen=True)
class Choice:
    namespace: str
    source: str          # where it came from, for logs and messages


def label_problem(value: object, where: str) -> Problem | None:
    """A namespace name must be a DNS-1123 label."""
    if not isinstance(value, str):
        return Problem(where, 'must be a string')
    if len(value) > 63 or not _DNS_LABEL.match(value):
        return Problem(where, (
            f'{value!r} is not a valid namespace name: at most 63 '
            'characters of lower-case letters, digits and "-", starting '
            'and ending with a letter or digit (RFC 1123 label)'))
    return None


def _explicit(manifests: list[Manifest],
              namespaced: Callable[[Manifest], bool]) -> list[Manifest]:
    return [m for m in manifests if m.namespace and namespaced(m)]


def _listing(manifests: list[Manifest]) -> str:
    return '; '.join(f'{m.describe()} in {m.namespace!r}' for m in manifests)


def choose(requested: object, manifests: list[Manifest],
           namespaced: Callable[[Manifest], bool],
           problems: list[Problem]) -> Choice | None:
    """The namespace, or None with the reasons appended to ``problems``."""
    explicit = _explicit(manifests, namespaced)
    bad = [p for m in explicit if (p := label_problem(
        m.namespace, f'{FILES_FIELD} ({m.source}): {m.kind}/{m.name} '
        'metadata.namespace'))]
    problems.extend(bad)
    if requested not in (None, ''):
        problem = label_problem(requested, NAMESPACE_FIELD)
        if problem:
            problems.append(problem)
            return None
        others = [m for m in explicit if m.namespace != requested]
        if others:
            problems.append(Problem(FILES_FIELD, (
                f'{NAMESPACE_FIELD} is {requested!r} but resource files '
                f'name another namespace: {_listing(others)}')))
            return None
        return None if bad else Choice(requested, NAMESPACE_FIELD)
    named = sorted({m.namespace for m in explicit})
    if len(named) > 1:
        problems.append(Problem(FILES_FIELD, (
            f'resource files name {len(named)} different namespaces '
            f'({", ".join(named)}); a CNF lives in one: '
            f'{_listing(explicit)}')))
        return None
    if bad:
        return None
    if named:
        return Choice(named[0], 'resource files')
    return Choice(DEFAULT, 'default')

"""BaseHOT/<flavour>/: the Heat templates Tacker uses with the user data.

Tacker reads every ``*.yaml`` directly in ``BaseHOT/<flavour>/`` as THE
top template (the last one read wins) and hands every file of
``BaseHOT/<flavour>/nested/`` to Heat by its file name, which is how the
top template's resource types name them.
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from kubernetes_mgmt.vnf_package import layout
from kubernetes_mgmt.vnf_package.csar import Csar

_YAML = ('.yaml', '.yml')


@dataclass
class BaseHot:
    flavour: str
    top: str | None = None
    nested: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def inspect(csar: Csar, flavour: str) -> BaseHot:
    found = BaseHot(flavour)
    directory = f'{layout.BASE_HOT}/{flavour}'
    tops = [n for n in csar.names if posixpath.dirname(n) == directory
            and n.endswith(_YAML)]
    found.nested = [n for n in csar.names
                    if posixpath.dirname(n) == f'{directory}/nested'
                    and n.endswith(_YAML)]
    if len(tops) != 1:
        found.problems.append(
            f'flavour {flavour}: {directory}/ must hold exactly one top '
            f'Heat template (*.yaml), found {len(tops)}')
        return found
    found.top = tops[0]
    _check_top(csar, found, directory)
    for name in found.nested:
        _parse(csar, name, found)
    return found


def _check_top(csar: Csar, found: BaseHot, directory: str) -> None:
    template = _parse(csar, found.top or '', found)
    if template is None:
        return
    if 'nfv' not in (template.get('parameters') or {}):
        found.problems.append(f'{found.top} has no parameter nfv (the '
                              'user data fills it)')
    for name, resource in (template.get('resources') or {}).items():
        for kind in _template_types(resource):
            if f'{directory}/nested/{kind}' not in found.nested:
                found.problems.append(
                    f'{found.top}: resource {name} has type {kind}, but '
                    f'{directory}/nested/{kind} is not in the package')


def _template_types(resource: object) -> list[str]:
    """Resource types that name a nested template file."""
    if not isinstance(resource, dict):
        return []
    kinds = [resource.get('type')]
    inner = (resource.get('properties') or {}).get('resource')
    if isinstance(inner, dict):         # AutoScalingGroup member
        kinds.append(inner.get('type'))
    return [k for k in kinds if isinstance(k, str) and k.endswith(_YAML)]


def _parse(csar: Csar, name: str, found: BaseHot) -> dict | None:
    try:
        template = csar.load_yaml(name)
    except ValueError as exc:
        found.problems.append(str(exc))
        return None
    if not isinstance(template, dict) or \
            'heat_template_version' not in template:
        found.problems.append(f'{name} is not a Heat template (no '
                              'heat_template_version)')
        return None
    return template

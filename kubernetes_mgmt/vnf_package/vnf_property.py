"""One property of a package's VNF, in every place it is set.

Tacker takes a VNF property (the VNFD id, the software version, ...) from
the top VNFD's VNF node. The package's VNF node type repeats it twice: as
the property's ``default`` (the flavour templates' VNF nodes, which do
not set it, get that value) and in its ``valid_values`` constraint.
tosca-parser checks both values against the constraint when the package
is uploaded; a mismatch is a ValidationError that Tacker writes only to
tacker-conductor's log, leaving the package in CREATED. So all of them
must name one value, and ``settle`` sets every one of them. The
properties this is used for are described by ``VnfProperty`` values in
``descriptor_id`` and ``software_version``.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from kubernetes_mgmt.vnf_package.tosca_types import (
    VNF,
    derives,
    node_templates,
    node_types,
)

VALUE = 'value'                 # a VNF node's property
DEFAULT = 'default'             # the VNF node type's default
VALID_VALUES = 'valid_values'   # the VNF node type's constraint

Key = str | int


class PropertyError(ValueError):
    """The property cannot be set or is set to several values; one
    line."""


@dataclass(frozen=True)
class VnfProperty:
    """A property of the VNF node and how ``package build`` sets it."""

    name: str               # e.g. descriptor_id
    label: str              # in messages: 'the VNFD id (descriptor_id)'
    option: str             # the build option that sets it
    metavar: str            # its value in messages, e.g. ID
    noun: str               # one value of it: 'id'
    # Why a value given to ``option`` cannot be set; None if it can.
    problem: Callable[[str], str | None]


@dataclass(frozen=True)
class Site:
    """One place of a template that sets or constrains the property."""

    file: str                       # member of the package
    path: tuple[Key, ...]           # keys down to the value
    values: tuple[str, ...]
    kind: str

    @property
    def field(self) -> str:
        text = ''
        for key in self.path:
            text += f'[{key}]' if isinstance(key, int) else \
                (f'.{key}' if text else key)
        return text

    def shown(self) -> str:
        found = f'[{", ".join(self.values)}]' if self.kind == VALID_VALUES \
            else self.values[0]
        return f'{self.file} {self.field} is {found}'


def sites(documents: Mapping[str, Any], prop: VnfProperty) -> list[Site]:
    """Every site of ``prop`` in the parsed templates (by member)."""
    types = node_types(documents.values())
    found: list[Site] = []
    for name, document in documents.items():
        found += _value_sites(name, document, types, prop.name)
        found += _type_sites(name, document, types, prop.name)
    return found


def settle(texts: Mapping[str, str], prop: VnfProperty,
           new_value: str | None) -> tuple[dict[str, str], str | None]:
    """The templates (text by member) with every site of ``prop`` set to
    ``new_value`` when given, and the package's value. PropertyError if
    the value cannot be set, no template sets it, or the sites name
    different values."""
    if new_value is not None and prop.problem(new_value):
        raise PropertyError(prop.problem(new_value))
    found = sites(parse(texts), prop)
    settled = dict(texts)
    if new_value is not None:
        if not found:
            raise PropertyError(
                f'{prop.option}: no template under Definitions/ sets '
                f'{prop.name} (a node of a type derived from {VNF})')
        for name in {site.file for site in found}:
            settled[name] = rewrite(texts[name], [
                s for s in found if s.file == name], new_value)
        found = sites(parse(settled), prop)
    trouble = problems(found, prop)
    if trouble:
        raise PropertyError(trouble[0])
    return settled, current(found)


def parse(texts: Mapping[str, str]) -> dict[str, Any]:
    """The templates parsed; PropertyError names one that is no YAML."""
    documents = {}
    for name, text in texts.items():
        try:
            documents[name] = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, 'problem_mark', None)
            where = f' (line {mark.line + 1})' if mark else ''
            raise PropertyError(f'{name} is not valid YAML{where}: '
                                f'{getattr(exc, "problem", None) or exc}'
                                ) from None
    return documents


def current(found: list[Site]) -> str | None:
    """The value Tacker would take: the VNF node's, else the default."""
    chosen = chosen_site(found)
    return chosen.values[0] if chosen else None


def chosen_site(found: list[Site]) -> Site | None:
    """The site Tacker takes the value from."""
    for kind in (VALUE, DEFAULT):
        for site in found:
            if site.kind == kind:
                return site
    return None


def problems(found: list[Site], prop: VnfProperty) -> list[str]:
    """One line naming every site, if they do not agree."""
    values = {s.values[0] for s in found if s.kind in (VALUE, DEFAULT)}
    allowed = [set(s.values) for s in found if s.kind == VALID_VALUES]
    if len(values) <= 1 and all(values <= listed for listed in allowed):
        return []
    return [f'{prop.label} disagrees: '
            + '; '.join(site.shown() for site in found)
            + ". Tacker refuses such a package on upload (a "
            "ValidationError only in tacker-conductor's log; the package "
            f'stays CREATED): give all of them one {prop.noun}, e.g. with '
            f'kubernetes-mgmt package build {prop.option} {prop.metavar}']


def rewrite(text: str, found: list[Site], new_value: str) -> str:
    """``text`` (one template) with each of its sites set to
    ``new_value``; everything else, comments included, stays as it is."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    spans = []
    for site in found:
        node = _node_at(root, site.path)
        scalars = node.value if site.kind == VALID_VALUES else [node]
        spans += [(s.start_mark.index, s.end_mark.index, s.style)
                  for s in scalars if isinstance(s, yaml.ScalarNode)]
    for start, end, style in sorted(spans, reverse=True):
        text = text[:start] + _scalar(new_value, style) + text[end:]
    return text


def _scalar(value: str, style: str | None) -> str:
    if style == '"':
        return f'"{value}"'
    # Unquoted, 1.36 would be read back as a number, not the string.
    if style is None and yaml.safe_load(value) == value:
        return value
    return f"'{value}'"


def _node_at(root: Any, path: tuple[Key, ...]) -> Any:
    node = root
    for key in path:
        if isinstance(node, yaml.SequenceNode):
            node = node.value[int(key)]
        else:
            node = next(value for name, value in node.value
                        if name.value == key)
    return node


def _value_sites(name: str, document: Any, types: Mapping[str, dict],
                 prop: str) -> Iterator[Site]:
    for node_name, node in node_templates(document).items():
        value = (node.get('properties') or {}).get(prop)
        # A value that is no string (get_input) takes the type's default.
        if derives(node.get('type'), VNF, types) and isinstance(value, str):
            yield Site(name, ('topology_template', 'node_templates',
                              node_name, 'properties', prop),
                       (value,), VALUE)


def _type_sites(name: str, document: Any, types: Mapping[str, dict],
                prop: str) -> Iterator[Site]:
    own = document.get('node_types') if isinstance(document, dict) else None
    for type_name, definition in (own or {}).items():
        if type_name == VNF or not derives(type_name, VNF, types):
            continue
        spec = ((definition or {}).get('properties') or {}).get(prop)
        if not isinstance(spec, dict):
            continue
        at = ('node_types', type_name, 'properties', prop)
        if 'default' in spec:
            yield Site(name, (*at, 'default'), (str(spec['default']),),
                       DEFAULT)
        constraints = spec.get('constraints')
        for index, constraint in enumerate(
                constraints if isinstance(constraints, list) else []):
            listed = constraint.get('valid_values') if isinstance(
                constraint, dict) else None
            if isinstance(listed, list):
                yield Site(name, (*at, 'constraints', index, 'valid_values'),
                           tuple(str(v) for v in listed), VALID_VALUES)

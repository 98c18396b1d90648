"""The VNFD id (``descriptor_id``) of a package, in every place it is set.

Tacker takes the VNFD id from the top VNFD's VNF node. The package's VNF
node type repeats it twice: as the property's ``default`` (the flavour
templates' VNF nodes, which do not set it, get that value) and in its
``valid_values`` constraint. tosca-parser checks both values against the
constraint when the package is uploaded; a mismatch is a ValidationError
that Tacker writes only to tacker-conductor's log, leaving the package
in CREATED. So all of them must name one id, and ``package build
--descriptor-id`` sets every one of them.
"""
from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from kubernetes_mgmt.vnf_package.tosca_types import (
    VNF,
    derives,
    node_templates,
    node_types,
)

PROPERTY = 'descriptor_id'
VALUE = 'value'                 # a VNF node's property
DEFAULT = 'default'             # the VNF node type's default
VALID_VALUES = 'valid_values'   # the VNF node type's constraint

Key = str | int


class DescriptorError(ValueError):
    """The VNFD id cannot be set or is set to several ids; one line."""


@dataclass(frozen=True)
class Site:
    """One place of a template that sets or constrains the VNFD id."""

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


def sites(documents: Mapping[str, Any]) -> list[Site]:
    """Every site of the VNFD id in the parsed templates (by member)."""
    types = node_types(documents.values())
    found: list[Site] = []
    for name, document in documents.items():
        found += _value_sites(name, document, types)
        found += _type_sites(name, document, types)
    return found


def settle(texts: Mapping[str, str], new_id: str | None
           ) -> tuple[dict[str, str], str | None]:
    """The templates (text by member) with every site set to ``new_id``
    when given, and the package's VNFD id. DescriptorError if the id is
    no UUID, no template sets it, or the sites name different ids."""
    if new_id is not None and id_problem(new_id):
        raise DescriptorError(id_problem(new_id))
    found = sites(_parse(texts))
    settled = dict(texts)
    if new_id is not None:
        if not found:
            raise DescriptorError(
                f'--descriptor-id: no template under Definitions/ sets '
                f'{PROPERTY} (a node of a type derived from {VNF})')
        for name in {site.file for site in found}:
            settled[name] = rewrite(texts[name], [
                s for s in found if s.file == name], new_id)
        found = sites(_parse(settled))
    trouble = problems(found)
    if trouble:
        raise DescriptorError(trouble[0])
    return settled, current(found)


def _parse(texts: Mapping[str, str]) -> dict[str, Any]:
    documents = {}
    for name, text in texts.items():
        try:
            documents[name] = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, 'problem_mark', None)
            where = f' (line {mark.line + 1})' if mark else ''
            raise DescriptorError(f'{name} is not valid YAML{where}: '
                                  f'{getattr(exc, "problem", None) or exc}'
                                  ) from None
    return documents


def current(found: list[Site]) -> str | None:
    """The id Tacker would take: the VNF node's, else the default."""
    for kind in (VALUE, DEFAULT):
        for site in found:
            if site.kind == kind:
                return site.values[0]
    return None


def problems(found: list[Site]) -> list[str]:
    """One line naming every site, if they do not agree."""
    ids = {s.values[0] for s in found if s.kind in (VALUE, DEFAULT)}
    allowed = [set(s.values) for s in found if s.kind == VALID_VALUES]
    if len(ids) <= 1 and all(ids <= values for values in allowed):
        return []
    return ['the VNFD id (descriptor_id) disagrees: '
            + '; '.join(site.shown() for site in found)
            + ". Tacker refuses such a package on upload (a "
            "ValidationError only in tacker-conductor's log; the package "
            'stays CREATED): give all of them one id, e.g. with '
            'kubernetes-mgmt package build --descriptor-id ID']


def id_problem(value: str) -> str | None:
    """Why ``value`` cannot be a VNFD id; None if it can."""
    try:
        parsed = uuid.UUID(value)
    except ValueError:
        return (f'--descriptor-id {value!r} is not a UUID (Tacker\'s v1 '
                'API takes the VNFD id only as a UUID, e.g. '
                f'{uuid.UUID(int=0x1234)})')
    if str(parsed) != value:
        return (f'--descriptor-id {value!r}: write the UUID as {parsed} '
                '(lower case, with hyphens)')
    return None


def rewrite(text: str, found: list[Site], new_id: str) -> str:
    """``text`` (one template) with each of its sites set to ``new_id``;
    everything else, comments included, stays as it is."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    spans = []
    for site in found:
        node = _node_at(root, site.path)
        scalars = node.value if site.kind == VALID_VALUES else [node]
        spans += [(s.start_mark.index, s.end_mark.index, s.style)
                  for s in scalars if isinstance(s, yaml.ScalarNode)]
    for start, end, style in sorted(spans, reverse=True):
        text = text[:start] + _scalar(new_id, style) + text[end:]
    return text


def _scalar(value: str, style: str | None) -> str:
    if style == '"':
        return f'"{value}"'
    return value if style is None else f"'{value}'"


def _node_at(root: Any, path: tuple[Key, ...]) -> Any:
    node = root
    for key in path:
        if isinstance(node, yaml.SequenceNode):
            node = node.value[int(key)]
        else:
            node = next(value for name, value in node.value
                        if name.value == key)
    return node


def _value_sites(name: str, document: Any,
                 types: Mapping[str, dict]) -> Iterator[Site]:
    for node_name, node in node_templates(document).items():
        value = (node.get('properties') or {}).get(PROPERTY)
        # A value that is no string (get_input) takes the type's default.
        if derives(node.get('type'), VNF, types) and isinstance(value, str):
            yield Site(name, ('topology_template', 'node_templates',
                              node_name, 'properties', PROPERTY),
                       (value,), VALUE)


def _type_sites(name: str, document: Any,
                types: Mapping[str, dict]) -> Iterator[Site]:
    own = document.get('node_types') if isinstance(document, dict) else None
    for type_name, definition in (own or {}).items():
        if type_name == VNF or not derives(type_name, VNF, types):
            continue
        spec = ((definition or {}).get('properties') or {}).get(PROPERTY)
        if not isinstance(spec, dict):
            continue
        at = ('node_types', type_name, 'properties', PROPERTY)
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

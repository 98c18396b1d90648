"""TOSCA node types of a VNFD: which type derives from which.

The package's own types (``node_types`` of its templates) derive, one
``derived_from`` after another, from the ETSI SOL001 base types; a type
"is" a base type when that chain reaches it.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

VNF = 'tosca.nodes.nfv.VNF'
VDU = 'tosca.nodes.nfv.Vdu.Compute'
VDU_CP = 'tosca.nodes.nfv.VduCp'
VIRTUAL_LINK = 'tosca.nodes.nfv.VnfVirtualLink'
BLOCK_STORAGE = 'tosca.nodes.nfv.Vdu.VirtualBlockStorage'
SCALING_ASPECTS = 'tosca.policies.nfv.ScalingAspects'
INSTANTIATION_LEVELS = 'tosca.policies.nfv.InstantiationLevels'


def node_types(templates: Iterable[Any]) -> dict[str, dict]:
    """Every ``node_types`` entry of the parsed templates, by name."""
    found: dict[str, dict] = {}
    for template in templates:
        types = template.get('node_types') if isinstance(
            template, dict) else None
        for name, definition in (types or {}).items():
            if isinstance(definition, dict):
                found.setdefault(str(name), definition)
    return found


def derives(kind: Any, base: str, types: Mapping[str, dict]) -> bool:
    """Whether node type ``kind`` is ``base`` or derives from it."""
    seen: set[str] = set()
    while isinstance(kind, str) and kind not in seen:
        if kind == base:
            return True
        seen.add(kind)
        kind = (types.get(kind) or {}).get('derived_from')
    return False


def node_templates(template: Any) -> dict[str, dict]:
    """``topology_template.node_templates`` of one template."""
    topology = template.get('topology_template') if isinstance(
        template, dict) else None
    nodes = (topology or {}).get('node_templates') if isinstance(
        topology, dict) else None
    return {str(k): v for k, v in (nodes or {}).items()
            if isinstance(v, dict)} if isinstance(nodes, dict) else {}


def policies(template: Any) -> list[tuple[str, dict]]:
    """``topology_template.policies`` of one template: (name, policy)."""
    topology = template.get('topology_template') if isinstance(
        template, dict) else None
    listed = (topology or {}).get('policies') if isinstance(
        topology, dict) else None
    found = []
    for item in listed if isinstance(listed, list) else []:
        for name, policy in (item.items() if isinstance(item, dict)
                             else ()):
            if isinstance(policy, dict):
                found.append((str(name), policy))
    return found


def flavour_id(template: Any) -> str | None:
    """The flavour a template describes
    (``substitution_mappings.properties.flavour_id``)."""
    topology = template.get('topology_template') if isinstance(
        template, dict) else None
    mappings = (topology or {}).get('substitution_mappings') if isinstance(
        topology, dict) else None
    properties = (mappings or {}).get('properties') if isinstance(
        mappings, dict) else None
    value = (properties or {}).get('flavour_id') if isinstance(
        properties, dict) else None
    return value if isinstance(value, str) else None

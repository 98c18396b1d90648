"""The Kubernetes version a cluster package names: its VNF's
``software_version`` (SOL001), e.g. ``'1.37'``.

Tacker shows it as the instance's ``vnfSoftwareVersion``; a
ChangeCurrentVnfPackage to a package naming the next minor upgrades the
cluster. It is read from an unpacked package directory (the one Tacker
hands the LCM script), following the VNFD's imports inside the package:
the VNF node templates' property, else the default of the VNF node
type's. YAML is only parsed, never executed.
"""
from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

import yaml

from kubernetes_mgmt.errors import MgmtDriverError

VNF_TYPE = 'tosca.nodes.nfv.VNF'
TOSCA_META = 'TOSCA-Metadata/TOSCA.meta'
_ENTRY = re.compile(r'^Entry-Definitions:[ \t]*(\S+)[ \t]*$', re.MULTILINE)
_READ_LIMIT = 4 << 20


def package_software_version(root: Path) -> str:
    """The one software_version the package's VNFD gives its VNF."""
    templates = _templates(root)
    derived = {name for doc in templates.values()
               for name, body in (doc.get('node_types') or {}).items()
               if isinstance(body, dict)
               and body.get('derived_from') == VNF_TYPE}
    found = {str(v) for v in _template_values(templates, derived)} or \
        {str(v) for v in _type_defaults(templates, derived)}
    if len(found) != 1:
        raise MgmtDriverError(
            f'the VNF package in {root} names '
            + (f'several software versions ({", ".join(sorted(found))})'
               if found else 'no software_version for its VNF node')
            + ': a cluster package names the Kubernetes minor it '
            'installs, e.g. software_version: \'1.37\'')
    return found.pop()


def _templates(root: Path) -> dict[str, dict]:
    """Member name -> parsed template, from Entry-Definitions along the
    imports that stay in the package."""
    # The package was onboarded: Tacker checked its TOSCA.meta already.
    found_entry = _ENTRY.search(_read(root, TOSCA_META))
    if not found_entry:
        raise MgmtDriverError(f'{root}/{TOSCA_META} names no '
                              'Entry-Definitions')
    entry = found_entry[1]
    found: dict[str, dict] = {}
    queue: list[str] = [entry]
    while queue:
        name = queue.pop()
        if name in found or not (root / name).is_file():
            continue
        document = yaml.safe_load(_read(root, name)) or {}
        found[name] = document if isinstance(document, dict) else {}
        for item in found[name].get('imports') or []:
            target = item.get('file') if isinstance(item, dict) else item
            if isinstance(target, str):
                queue.append(posixpath.normpath(posixpath.join(
                    posixpath.dirname(name), target)))
    return found


def _read(root: Path, name: str) -> str:
    path = (root / name).resolve()
    if root.resolve() not in path.parents:
        raise MgmtDriverError(f'{name!r} leads outside the VNF package')
    try:
        with open(path, encoding='utf-8') as stream:
            return stream.read(_READ_LIMIT)
    except OSError as exc:
        raise MgmtDriverError(f'cannot read {name} of the VNF package in '
                              f'{root}: {exc.strerror}') from None


def _template_values(templates: dict[str, dict], types: set[str]) -> list:
    values: list[Any] = []
    for doc in templates.values():
        nodes = (doc.get('topology_template') or {}).get('node_templates')
        for node in (nodes or {}).values():
            if isinstance(node, dict) and node.get('type') in types:
                value = (node.get('properties') or {}).get('software_version')
                if isinstance(value, (str, int, float)):  # not get_input
                    values.append(value)
    return values


def _type_defaults(templates: dict[str, dict], types: set[str]) -> list:
    values: list[Any] = []
    for doc in templates.values():
        for name, body in (doc.get('node_types') or {}).items():
            if name in types:
                prop = ((body.get('properties') or {})
                        .get('software_version') or {})
                if isinstance(prop, dict) and prop.get('default') is not None:
                    values.append(prop['default'])
    return values

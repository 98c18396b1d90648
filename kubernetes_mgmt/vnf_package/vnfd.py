"""What the VNFD of a CSAR references, and whether it is there.

Starting at Entry-Definitions, every import is followed (relative to the
importing file, as the TOSCA parser does). In each template, artifacts and
``Vnflcm`` interface implementations are checked the way Tacker uses them:
the Mgmt Driver file relative to the package root (Tacker joins it with the
package directory), the v2 LCM script relative to Definitions/ (Tacker v2
joins it with that directory), other artifacts such as images relative to
the template.
"""
from __future__ import annotations

import posixpath
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from kubernetes_mgmt.vnf_package import image, layout
from kubernetes_mgmt.vnf_package.csar import Csar, resolve

PYTHON_ARTIFACT = 'tosca.artifacts.Implementation.Python'
SW_IMAGE = 'tosca.artifacts.nfv.SwImage'


@dataclass(frozen=True)
class SwImage:
    template: str
    node: str
    path: str
    algorithm: str | None
    hash: str | None


@dataclass
class VnfdFacts:
    templates: list[str] = field(default_factory=list)
    flavours: list[str] = field(default_factory=list)
    driver_files: set[str] = field(default_factory=set)
    v2_scripts: set[str] = field(default_factory=set)   # v2 LCM scripts
    images: list[SwImage] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # The parsed templates, by member name.
    documents: dict[str, dict] = field(default_factory=dict)


def inspect(csar: Csar, entry: str) -> VnfdFacts:
    facts = VnfdFacts()
    queue, seen = deque([(entry, 'TOSCA.meta Entry-Definitions')]), set()
    while queue:
        name, referrer = queue.popleft()
        if name in seen:
            continue
        seen.add(name)
        template = _load(csar, name, referrer, facts)
        if template is not None:
            facts.templates.append(name)
            facts.documents[name] = template
            queue.extend((i, name) for i in _imports(name, template, facts))
            _inspect_template(csar, name, template, facts)
    if not facts.flavours:
        facts.problems.append('the VNFD defines no deployment flavour '
                              '(substitution_mappings.properties.flavour_id)')
    return facts


def no_driver_problem() -> str:
    """What a cluster package (one with VMs) lacking the driver is told."""
    return (f'no flavour names the {layout.DRIVER_NAME} artifact (type '
            f'{PYTHON_ARTIFACT}): Tacker would never call this driver')


def _load(csar: Csar, name: str, referrer: str,
          facts: VnfdFacts) -> dict | None:
    if not csar.has(name):
        facts.problems.append(f'{referrer} references {name}, which is not '
                              'in the package')
        return None
    try:
        template = csar.load_yaml(name)
    except ValueError as exc:
        facts.problems.append(str(exc))
        return None
    if not isinstance(template, dict):
        facts.problems.append(f'{name} is not a TOSCA template (no mapping)')
        return None
    left = image.TOKEN.search(csar.read(name).decode('utf-8', 'replace'))
    if left:
        facts.problems.append(
            f'{name} still has {left.group()}: the package was zipped from '
            'the sample, not built; use kubernetes-mgmt package build')
    return template


def _imports(name: str, template: dict, facts: VnfdFacts) -> list[str]:
    found = []
    for item in template.get('imports') or []:
        reference = _import_file(item)
        if reference is None or '://' in reference:
            continue        # URLs: Tacker maps them to its local copies
        target = resolve(posixpath.dirname(name), reference)
        if target is None:
            facts.problems.append(f'{name} imports {reference}, outside the '
                                  'package')
        else:
            found.append(target)
    return found


def _import_file(item: Any) -> str | None:
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        if isinstance(item.get('file'), str):
            return item['file']
        for value in item.values():     # - name: {file: ...}
            if isinstance(value, dict) and isinstance(value.get('file'), str):
                return value['file']
    return None


def _inspect_template(csar: Csar, name: str, template: dict,
                      facts: VnfdFacts) -> None:
    topology = template.get('topology_template') or {}
    mappings = topology.get('substitution_mappings') or {}
    flavour = (mappings.get('properties') or {}).get('flavour_id')
    if isinstance(flavour, str) and flavour not in facts.flavours:
        facts.flavours.append(flavour)
    for node_name, node in (topology.get('node_templates') or {}).items():
        if isinstance(node, dict):
            _inspect_node(csar, name, node_name, node, facts)


def _inspect_node(csar: Csar, template: str, node_name: str, node: dict,
                  facts: VnfdFacts) -> None:
    artifacts = node.get('artifacts') or {}
    where = f'{template}: {node_name}'
    for key, artifact in artifacts.items():
        _inspect_artifact(csar, template, f'{where}.artifacts.{key}', key,
                          artifact, node, facts)
    vnflcm = (node.get('interfaces') or {}).get('Vnflcm') or {}
    for operation, body in vnflcm.items():
        implementation = (body.get('implementation')
                          if isinstance(body, dict) else body)
        if isinstance(implementation, str) and \
                implementation not in artifacts:
            facts.problems.append(
                f'{where}.interfaces.Vnflcm.{operation} names '
                f'implementation {implementation}, which is not an '
                f'artifact of {node_name}')


def _inspect_artifact(csar: Csar, template: str, where: str, key: str,
                      artifact: Any, node: dict, facts: VnfdFacts) -> None:
    if isinstance(artifact, str):
        artifact = {'file': artifact}
    reference = artifact.get('file') if isinstance(artifact, dict) else None
    if not isinstance(reference, str):
        facts.problems.append(f'{where} has no file')
        return
    if artifact.get('type') == PYTHON_ARTIFACT and \
            key == layout.DRIVER_V2_NAME:
        # Tacker v2: <package>/Definitions/<file>
        path = resolve(layout.DEFINITIONS, reference)
        if path:
            facts.v2_scripts.add(path)
    elif artifact.get('type') == PYTHON_ARTIFACT:
        path = resolve('', reference)       # Tacker: <package>/<file>
        if key == layout.DRIVER_NAME and path:
            facts.driver_files.add(path)
    else:
        path = resolve(posixpath.dirname(template), reference)
    if path is None or not csar.has(path):
        facts.problems.append(f'{where}: file {reference} is not in the '
                              'package')
        return
    if artifact.get('type') == SW_IMAGE:
        checksum = ((node.get('properties') or {}).get('sw_image_data')
                    or {}).get('checksum') or {}
        facts.images.append(SwImage(template, where, path,
                                    checksum.get('algorithm'),
                                    checksum.get('hash')))

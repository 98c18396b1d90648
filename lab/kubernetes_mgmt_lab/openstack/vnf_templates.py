"""The VNF stack's templates and parameters: the sample package's BaseHOT
of the flavour a layout needs, groups freed, and the ``nfv`` parameter as
Tacker's user data makes it."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from kubernetes_mgmt.vnf_package.layout import sample_package_dir
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.manager import default_layouts

FLAVOR = 'm1.small'
VOLUME_GIB = 1
ROLE_OF_VDU = {layout.server: layout.role for layout in default_layouts()}


def flavour_for(masters: int, anti_affinity: bool, storage: bool) -> str:
    if storage:
        if masters > 1 or anti_affinity:
            raise LabError('a storage server comes with one master and no '
                           'anti-affinity (flavour simple)')
        return 'simple'
    if anti_affinity:
        return 'podaffinity'
    return 'complex' if masters > 1 else 'simple'


def templates(flavour: str) -> tuple[dict, dict[str, str]]:
    """The flavour's top template (groups freed) and its nested files."""
    base = Path(sample_package_dir()) / 'BaseHOT' / flavour
    top = yaml.safe_load((base / f'kubernetes_mgmt_{flavour}.hot.yaml')
                         .read_text(encoding='utf-8'))
    for resource in top['resources'].values():
        if resource['type'] == 'OS::Heat::AutoScalingGroup':
            resource['properties'].update(min_size=0, max_size=32)
    files = {p.name: p.read_text(encoding='utf-8')
             for p in sorted((base / 'nested').glob('*.yaml'))}
    return top, files


def nfv_paths(*templates_: dict) -> list[list[str]]:
    """Every ``get_param: [nfv, ...]`` path of the templates."""
    found: list[list[str]] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            param = node.get('get_param')
            if isinstance(param, list) and param and param[0] == 'nfv':
                found.append([str(p) for p in param[1:]])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    for template in templates_:
        walk(template)
    return found


def nfv_param(paths: list[list[str]], counts: dict[str, int],
              image_id: str, network_id: str) -> dict:
    """The ``nfv`` parameter as the sample user data makes it."""
    values = {'flavor': FLAVOR, 'image': image_id, 'size': VOLUME_GIB,
              'network': network_id}
    nfv: dict = {'VDU': {}, 'CP': {}}
    for kind, name, key in (p for p in paths if len(p) == 3):
        entry = nfv[kind].setdefault(name, {})
        if key == 'desired_capacity':
            entry[key] = counts.get(ROLE_OF_VDU.get(name, ''), 0)
        elif key in values:
            entry[key] = values[key]
    return nfv


@dataclass(frozen=True)
class Layout:
    masters: int
    workers: int
    storage: bool = False
    anti_affinity: bool = False
    # role -> the adminPass of its servers (else the image's password)
    passwords: dict[str, str] = field(default_factory=dict, hash=False)

    @property
    def flavour(self) -> str:
        return flavour_for(self.masters, self.anti_affinity, self.storage)

    @property
    def counts(self) -> dict[str, int]:
        return {'master': self.masters, 'worker': self.workers}


def _with_admin_pass(text: str, passwords: dict[str, str]) -> str:
    """A nested template whose servers of a role in ``passwords`` get
    that role's password as ``admin_pass``."""
    template = yaml.safe_load(text)
    changed = False
    for name, resource in (template.get('resources') or {}).items():
        role = ROLE_OF_VDU.get(name)
        if resource.get('type') == 'OS::Nova::Server' and role in passwords:
            resource['properties']['admin_pass'] = passwords[role]
            changed = True
    return yaml.safe_dump(template, sort_keys=False) if changed else text


def stack_inputs(layout: Layout, image_id: str, network_id: str
                 ) -> tuple[dict, dict[str, str], dict[str, str]]:
    """(top template, nested files, parameters) of the layout's stack."""
    top, files = templates(layout.flavour)
    files = {name: _with_admin_pass(text, layout.passwords)
             for name, text in files.items()}
    nested = [yaml.safe_load(text) for text in files.values()]
    params = {'nfv': json.dumps(nfv_param(nfv_paths(top, *nested),
                                          layout.counts, image_id,
                                          network_id))}
    if 'storage_server_enabled' in top.get('parameters', {}):
        params['storage_server_enabled'] = str(layout.storage).lower()
    return top, files, params

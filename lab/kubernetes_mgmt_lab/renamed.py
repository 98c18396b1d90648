"""A copy of the sample VNF package whose VDUs, connection points,
aspects and HOT resources carry other names (and whose VNFD has its own
id), with requests renamed to match: the proof that nothing relies on
the sample's names."""
from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import yaml

# Longest first: a name that contains another is replaced whole.
RENAMES = {'masterNode_CP1': 'cp_port', 'workerNode_CP2': 'wk_port',
           'masterNode': 'cpNode', 'workerNode': 'wkNode',
           'master_instance': 'cp_group', 'worker_instance': 'wk_group',
           'vip_CP': 'vip_port'}
RENAMED_DIRS = ('Definitions', 'BaseHOT')
SAMPLE_VNFD_ID = 'b8e8e8a5-8d67-4f1f-bccb-4c746998f3a4'


def rename_text(text: str, renames: dict[str, str] = RENAMES) -> str:
    for old in sorted(renames, key=len, reverse=True):
        text = text.replace(old, renames[old])
    return text


def renamed_package(sample: Path, target: Path,
                    master_scale_level: int = 0) -> str:
    """Copy ``sample`` to ``target`` with the names replaced; the new
    VNFD id. With ``master_scale_level`` the VNFD and the HOT let the
    master aspect scale that far (as an operator's own package might), so
    that Tacker hands such a request on to the driver."""
    shutil.copytree(sample, target)
    vnfd_id = str(uuid.uuid4())
    for top in RENAMED_DIRS:
        for path in sorted((target / top).rglob('*.yaml')):
            text = rename_text(path.read_text(encoding='utf-8'))
            text = text.replace(SAMPLE_VNFD_ID, vnfd_id)
            if master_scale_level:
                text = _master_scale_level(text, master_scale_level)
            path.write_text(text, encoding='utf-8')
    if master_scale_level:
        for path in sorted((target / 'BaseHOT').glob('*/*.hot.yaml')):
            _scalable_master_group(path, master_scale_level)
    return vnfd_id


def _master_scale_level(text: str, level: int) -> str:
    """The first ``max_scale_level`` below the master aspect's key."""
    master = f'{RENAMES["master_instance"]}:'
    lines = text.splitlines(keepends=True)
    inside = False
    for i, line in enumerate(lines):
        inside = inside or line.strip() == master
        if inside and line.strip() == 'max_scale_level: 0':
            lines[i] = line.replace('0', str(level))
            inside = False
    return ''.join(lines)


def _scalable_master_group(hot: Path, level: int) -> None:
    """The top HOT's master group grows by up to ``level`` members, by
    the two policies Tacker signals."""
    template = yaml.safe_load(hot.read_text(encoding='utf-8'))
    group = RENAMES['master_instance']
    resources = template['resources']
    resources[group]['properties']['max_size'] += level
    for direction, step in (('out', 1), ('in', -1)):
        resources[f'{group}_scale_{direction}'] = {
            'type': 'OS::Heat::ScalingPolicy',
            'properties': {'scaling_adjustment': step,
                           'auto_scaling_group_id': {'get_resource': group},
                           'adjustment_type': 'change_in_capacity'}}
    hot.write_text(yaml.safe_dump(template, sort_keys=False),
                   encoding='utf-8')


def renamed_request(body: dict) -> dict:
    """An Instantiate (or scale) request with the same names replaced."""
    return json.loads(rename_text(json.dumps(body)))

"""A copy of the sample VNF package whose VDUs, connection points,
aspects and HOT resources carry other names (and whose VNFD has its own
id), with requests renamed to match: the proof that nothing relies on
the sample's names."""
from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

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


def renamed_package(sample: Path, target: Path) -> str:
    """Copy ``sample`` to ``target`` with the names replaced; the new
    VNFD id."""
    shutil.copytree(sample, target)
    vnfd_id = str(uuid.uuid4())
    for top in RENAMED_DIRS:
        for path in sorted((target / top).rglob('*.yaml')):
            text = rename_text(path.read_text(encoding='utf-8'))
            path.write_text(text.replace(SAMPLE_VNFD_ID, vnfd_id),
                            encoding='utf-8')
    return vnfd_id


def renamed_request(body: dict) -> dict:
    """An Instantiate (or scale) request with the same names replaced."""
    return json.loads(rename_text(json.dumps(body)))

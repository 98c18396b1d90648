"""The node exporters Prometheus scrapes, one file per VNF instance in
Prometheus' file service discovery format (``file_sd_configs``), each
target labelled with what Tacker heals: ``vnf_instance_id`` and
``vnfc_info_id``. The driver rewrites the file at the end of every
operation that changes the nodes and removes it at terminate;
Prometheus notices the change by itself."""
from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Member:
    """A node as the driver remembers it."""

    server_id: str
    name: str
    role: str
    ip: str


def path_of(directory: str, instance_id: str) -> Path:
    return Path(directory) / f'kubernetes-mgmt-{instance_id}.json'


def entries(instance_id: str, members: Iterable[Member],
            vnfcs: Mapping[str, str], port: int) -> list[dict]:
    """One target group per node whose VNFC Tacker records, by name."""
    found = []
    for member in sorted(members, key=lambda m: m.name):
        vnfc = vnfcs.get(member.server_id)
        if not vnfc:
            continue    # not a VNFC Tacker could heal
        found.append({'targets': [f'{member.ip}:{port}'],
                      'labels': {'vnf_instance_id': instance_id,
                                 'vnfc_info_id': vnfc,
                                 'node': member.name,
                                 'role': member.role}})
    return found


def write(directory: str, instance_id: str, groups: list[dict]) -> Path:
    """Replace the instance's file at once: Prometheus never reads half
    of one."""
    path = path_of(directory, instance_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix='.',
                                     suffix='.tmp')
    try:
        with os.fdopen(fd, 'w', encoding='utf-8') as out:
            json.dump(groups, out, indent=1, sort_keys=True)
            out.write('\n')
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def remove(directory: str, instance_id: str) -> None:
    path_of(directory, instance_id).unlink(missing_ok=True)

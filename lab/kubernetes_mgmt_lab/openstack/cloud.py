"""The compute, network and block-storage APIs below Heat (the lab's
emulation, ``kubernetes_mgmt_lab.cloud``) as a service of the root: an
empty lab (bridge, image, site mirror) whose VMs the compute API boots,
and the API process that serves the three services."""
from __future__ import annotations

import hashlib
import json
import os
import secrets

from kubernetes_mgmt_lab import detached, mirror, net
from kubernetes_mgmt_lab import state as lab_state
from kubernetes_mgmt_lab.cloud.network import NETWORK_NAME
from kubernetes_mgmt_lab.cloud.server import RECORDS_FILE
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.manager import Lab, lab_name_at, teardown
from kubernetes_mgmt_lab.openstack.layout import HOST, Root

NAME = 'cloud'
MODULE = 'kubernetes_mgmt_lab.cloud.server'
LAB_DIR = 'lab'
USERNAME = 'ubuntu'
# Catalog: service type -> (name, path below the API's URL).
SERVICES = {'compute': ('nova', '/compute/v2.1'),
            'network': ('neutron', '/network'),
            'volumev3': ('cinderv3', '/volume/v3/%(project_id)s'),
            'block-storage': ('cinder', '/volume/v3/%(project_id)s')}


def lab_root(root: Root) -> str:
    return root.of(LAB_DIR)


def lab_name(root: Root) -> str:
    digest = hashlib.sha256(os.path.realpath(root.path).encode())
    return 'kc' + digest.hexdigest()[:6]


def url(port: int) -> str:
    return f'http://{HOST}:{port}'


def free_subnet() -> str:
    """A /24 that overlaps nothing on this machine (nor a running lab)."""
    start = secrets.randbelow(100)
    for third in (*range(100 + start, 200), *range(100, 100 + start)):
        plan = net.AddressPlan.parse(f'10.20.{third}.0/24')
        try:
            net.check_subnet_free(plan, bridge='')
        except LabError:
            continue
        return str(plan.subnet)
    raise LabError('no free 10.20.x.0/24 subnet for the lab cloud')


def ensure_lab(root: Root, subnet: str, password: str) -> None:
    """The empty lab, made once per root (its VMs outlive a restart of
    the API)."""
    where = lab_root(root)
    if os.path.exists(lab_state.state_path(where)):
        return
    if lab_name_at(where) is not None:     # a half-made lab: start over
        teardown(where)
    Lab.up(masters=0, workers=0, heat=False, root=where,
           name=lab_name(root), subnet=subnet, username=USERNAME,
           password=password)


def network_id(root: Root) -> str:
    """The id of the lab's network (extVirtualLinks' resourceId)."""
    path = os.path.join(lab_root(root), RECORDS_FILE)
    with open(path, encoding='utf-8') as f:
        networks = json.load(f)['networks']
    for network in networks.values():
        if network['name'] == NETWORK_NAME:
            return network['id']
    raise LabError(f'the lab cloud of {root.path} has no network '
                   f'{NETWORK_NAME}')


def plugin_options(root: Root) -> dict[str, str]:
    """``[kubernetes_mgmt]`` options that point the plugin at the lab's
    site mirror (apt repository and key, CNI manifest)."""
    state = lab_state.load(lab_state.state_path(lab_root(root)))
    site = state.mirror_url
    return {'apt_repository_url': f'{site}apt/',
            'apt_key_url': f'{site}{mirror.KEY_PATH}',
            'cni_manifest': f'{site}{mirror.CALICO_PATH}',
            'cni_manifest_sha256': mirror.sha256_of(mirror.CALICO_MANIFEST)}


def start(root: Root, port: int, project_id: str) -> int:
    return detached.start(MODULE, ['--lab-root', lab_root(root),
                                   '--listen', f'{HOST}:{port}',
                                   '--project-id', project_id],
                          HOST, port, root.log(NAME),
                          'the lab cloud API')


def stop(pid: int | None) -> None:
    detached.stop(pid, MODULE)


def remove_lab(root: Root) -> None:
    """Every VM, bridge and loop device of the root's lab."""
    where = lab_root(root)
    if lab_name_at(where) is not None:
        teardown(where)

"""The compute, network and block-storage APIs below Heat (the lab's
emulation, ``kubernetes_mgmt_lab.cloud``) as a service of the root: empty
labs (bridge, image, site mirror), one per network, whose VMs the compute
API boots, and the API process that serves the three services."""
from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import secrets

from kubernetes_mgmt.cluster.placement import VNF_INSTANCE_LABEL, VNFC_LABEL
from kubernetes_mgmt_lab import detached, mirror, mirrorproc, net
from kubernetes_mgmt_lab import state as lab_state
from kubernetes_mgmt_lab.cloud.network import NETWORK_NAMES
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.manager import Lab, lab_name_at, teardown
from kubernetes_mgmt_lab.openstack import monitoring
from kubernetes_mgmt_lab.openstack.layout import HOST, Root

NAME = 'cloud'
MODULE = 'kubernetes_mgmt_lab.cloud.server'
RECORDS_FILE = 'cloud.json'
USERNAME = 'ubuntu'
# Catalog: service type -> (name, path below the API's URL).
SERVICES = {'compute': ('nova', '/compute/v2.1'),
            'network': ('neutron', '/network'),
            'volumev3': ('cinderv3', '/volume/v3/%(project_id)s'),
            'block-storage': ('cinder', '/volume/v3/%(project_id)s')}
# Each network is a lab of its own (bridge, VMs, emulated Kubernetes):
# clusters on different networks never share emulated state.
LABS = len(NETWORK_NAMES)


def lab_root(root: Root, index: int = 0) -> str:
    return root.of('lab' if index == 0 else f'lab-{index + 1}')


def lab_roots(root: Root) -> list[str]:
    return [lab_root(root, i) for i in range(LABS)]


def records_file(root: Root) -> str:
    return root.of(NAME, RECORDS_FILE)


def labs_dir(root: Root) -> str:
    """Where the labs of networks created through the API go."""
    return root.of(NAME, 'labs')


def lab_name(root: Root, index: int = 0) -> str:
    digest = hashlib.sha256(os.path.realpath(root.path).encode())
    return 'kc' + digest.hexdigest()[:5] + str(index)


def url(port: int) -> str:
    return f'http://{HOST}:{port}'


def free_subnets(count: int = LABS) -> list[str]:
    """/24s that overlap nothing on this machine (nor a running lab)."""
    start = secrets.randbelow(100)
    found = []
    for third in (*range(100 + start, 200), *range(100, 100 + start)):
        plan = net.AddressPlan.parse(f'10.20.{third}.0/24')
        try:
            net.check_subnet_free(plan, bridge='')
        except LabError:
            continue
        found.append(str(plan.subnet))
        if len(found) == count:
            return found
    raise LabError('no free 10.20.x.0/24 subnets for the lab cloud')


def ensure_labs(root: Root, subnets: list[str], password: str) -> None:
    """The empty labs, made once per root (their VMs outlive a restart
    of the API), each watched by the site's monitoring: its VMs run a
    node exporter, its cluster has a kube-state-metrics stand-in."""
    for index, subnet in enumerate(subnets):
        where = lab_root(root, index)
        if not os.path.exists(lab_state.state_path(where)):
            if lab_name_at(where) is not None:     # half-made: start over
                teardown(where)
            Lab.up(masters=0, workers=0, root=where,
                   name=lab_name(root, index), subnet=subnet,
                   username=USERNAME, password=password)
        _watch(root, Lab(where), lab_name(root, index))


def _watch(root: Root, lab: Lab, name: str) -> None:
    with lab_state.locked(lab.state_file) as st:
        st.node_exporter_port = monitoring.NODE_EXPORTER_PORT
    address, port = lab.start_state_metrics(
        [VNF_INSTANCE_LABEL, VNFC_LABEL])
    monitoring.publish_ksm(root, name, address, port)


def network_id(root: Root, name: str = NETWORK_NAMES[0]) -> str:
    """The id of a lab network (extVirtualLinks' resourceId)."""
    with open(records_file(root), encoding='utf-8') as f:
        networks = json.load(f)['networks']
    for network in networks.values():
        if network['name'] == name:
            return network['id']
    raise LabError(f'the lab cloud of {root.path} has no network {name}')


def plugin_options(root: Root) -> dict[str, str]:
    """``[kubernetes_mgmt]`` options that point the plugin at the first
    lab's site mirror (apt repository and key, CNI manifest); the VMs of
    every lab reach it through the machine."""
    state = lab_state.load(lab_state.state_path(lab_root(root)))
    site = state.mirror_url
    return {'apt_repository_url': f'{site}{mirror.APT_REPO_TEMPLATE}',
            'apt_key_url': f'{site}{mirror.KEY_PATH}',
            'apt_key_fingerprints': mirror.key_fingerprint(
                mirrorproc.content_dir(lab_root(root))),
            'cni_manifest': f'{site}{mirror.CALICO_PATH}',
            'cni_manifest_sha256': mirror.sha256_of(mirror.CALICO_MANIFEST),
            # The site's Prometheus reads the driver's targets there.
            'monitoring_targets_dir': monitoring.targets_dir(root),
            'node_exporter_port': str(monitoring.NODE_EXPORTER_PORT)}


def start(root: Root, port: int, project_id: str, keystone_url: str
          ) -> int:
    os.makedirs(root.service_dir(NAME), exist_ok=True)
    labs = [a for r in lab_roots(root) for a in ('--lab', r)]
    return detached.start(MODULE, ['--records', records_file(root), *labs,
                                   '--labs-dir', labs_dir(root),
                                   '--keystone', keystone_url,
                                   '--listen', f'{HOST}:{port}',
                                   '--project-id', project_id],
                          HOST, port, root.log(NAME),
                          'the lab cloud API')


def stop(pid: int | None) -> None:
    detached.stop(pid, MODULE)


def every_lab_root(root: Root) -> list[str]:
    """Where the root's labs are: those of its networks and those of
    networks created through the API (``lab up --services``)."""
    made = sorted(glob.glob(os.path.join(labs_dir(root), '*')))
    return lab_roots(root) + made


def remove_labs(root: Root) -> None:
    """Every VM, bridge and loop device of the root's labs (also those of
    networks created through the API); the cloud's records of them go
    too."""
    for where in every_lab_root(root):
        if lab_name_at(where) is not None:
            teardown(where)
    with contextlib.suppress(FileNotFoundError):
        os.remove(records_file(root))

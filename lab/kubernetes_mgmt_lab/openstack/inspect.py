"""What the lab cloud, its emulated clusters and Tacker's records say
about one VNF, gathered for checks that they agree."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from kubernetes_mgmt_lab import hosts
from kubernetes_mgmt_lab import state as lab_state
from kubernetes_mgmt_lab.emulated import ClusterView
from kubernetes_mgmt_lab.openstack import cloud
from kubernetes_mgmt_lab.openstack.layout import Root


@dataclass(frozen=True)
class Vnfc:
    """One VNFC of ``vnflcm show``, with the lab VM behind its server."""

    id: str
    vdu: str
    server_id: str
    ip: str | None
    lab_host: str | None
    lab: int = 0            # which lab (network) the VM is on


def _records(root: Root) -> dict:
    with open(cloud.records_file(root), encoding='utf-8') as f:
        return json.load(f)


def servers(root: Root) -> dict[str, dict]:
    """The lab cloud's servers by id (Nova's records)."""
    return _records(root)['servers']


def _lab_of_network(root: Root) -> dict[str, int]:
    names = {n: i for i, n in enumerate(cloud.NETWORK_NAMES)}
    return {net['id']: names.get(net['name'], 0)
            for net in _records(root)['networks'].values()}


def vnfcs(root: Root, shown: dict) -> list[Vnfc]:
    """The VNFCs of a ``vnflcm show`` output."""
    info = shown.get('Instantiated Vnf Info') or {}
    known = servers(root)
    labs = _lab_of_network(root)
    found = []
    for vnfc in info.get('vnfcResourceInfo') or []:
        server_id = vnfc['computeResource']['resourceId']
        if not server_id:
            # Tacker lists every VDU of the flavour, also one whose
            # resources a HOT condition left out (no storage server).
            continue
        server = known.get(server_id) or {}
        ips = [a['addr'] for net in server.get('addresses', {}).values()
               for a in net]
        found.append(Vnfc(vnfc['id'], vnfc['vduId'], server_id,
                          ips[0] if ips else None, server.get('lab_host'),
                          labs.get(server.get('lab_network'), 0)))
    return found


def cluster_dir(root: Root, lab: int = 0) -> str:
    """Where lab ``lab``'s emulated Kubernetes keeps its state."""
    state = lab_state.load(lab_state.state_path(cloud.lab_root(root, lab)))
    return state.cluster_dir


def cluster(root: Root, lab: int = 0) -> ClusterView:
    return ClusterView(cluster_dir(root, lab))


def node_ips(view: ClusterView) -> dict[str, str]:
    """Node name -> InternalIP."""
    found = {}
    for node in view.nodes():
        for addr in node.get('status', {}).get('addresses', []):
            if addr['type'] == 'InternalIP':
                found[node['metadata']['name']] = addr['address']
    return found


# sshd's line for a login it let in (LogLevel INFO).
_ACCEPTED = re.compile(r'Accepted (\S+) for (\S+) from \S+ port \d+ \S+'
                       r'(?:: (\S+) (SHA256:\S+))?')


@dataclass(frozen=True)
class Login:
    """A login the VM's sshd accepted: how, who, and with which key."""

    method: str                 # publickey, password ...
    user: str
    fingerprint: str | None = None


def logins(root: Root, vnfc: Vnfc) -> list[Login]:
    """Every login the sshd of the VNFC's VM has accepted."""
    text = read_in_vm(root, vnfc, hosts.SSHD_LOG) or ''
    return [Login(m.group(1), m.group(2), m.group(4))
            for m in map(_ACCEPTED.search, text.splitlines()) if m]


def login_methods(root: Root, vnfcs: list[Vnfc]
                  ) -> tuple[set[str], set[str | None]]:
    """How the VNFCs' VMs were logged into, all together: the methods
    their sshd accepted and the keys (fingerprints) that were used."""
    found = [login for vnfc in vnfcs for login in logins(root, vnfc)]
    return ({login.method for login in found},
            {login.fingerprint for login in found})


def read_in_vm(root: Root, vnfc: Vnfc, path: str) -> str | None:
    """A file inside the VNFC's lab VM (its private disk)."""
    state = lab_state.load(lab_state.state_path(cloud.lab_root(root,
                                                               vnfc.lab)))
    try:
        with open(hosts.disk_path(state.host(vnfc.lab_host), path),
                  encoding='utf-8') as f:
            return f.read()
    except FileNotFoundError:
        return None


def run_in_vm(root: Root, vnfc: Vnfc, argv: list[str],
              input: str | None = None):
    """Run ``argv`` as root in the VNFC's lab VM (-> CompletedProcess)."""
    from kubernetes_mgmt_lab.manager import Lab

    return Lab.load(cloud.lab_root(root, vnfc.lab)).run_in_host(
        vnfc.lab_host, argv, input=input)


def power_off_vm(root: Root, vnfc: Vnfc) -> None:
    """Crash the VNFC's lab VM (``hosts.power_off``): Nova and Heat are
    not told, as with a hypervisor that lost the VM."""
    from kubernetes_mgmt_lab.manager import Lab

    Lab.load(cloud.lab_root(root, vnfc.lab)).power_off(vnfc.lab_host)


def power_on_vm(root: Root, vnfc: Vnfc) -> None:
    """Boot the VNFC's powered-off lab VM again."""
    from kubernetes_mgmt_lab.manager import Lab

    Lab.load(cloud.lab_root(root, vnfc.lab)).power_on(vnfc.lab_host)

"""The lab behind each network: a subnet is a bridge on this machine (an
empty lab with its image and site mirror), and the network's servers are
that lab's VMs.

The labs named at start (``--lab``) serve the networks the services root
made; a subnet created through the API gets a lab of its own under the
labs directory, removed with the subnet. Which lab serves which network
is kept in the records, so that a restarted API finds them again.
"""
from __future__ import annotations

import hashlib
import os
import threading

from kubernetes_mgmt import redact
from kubernetes_mgmt_lab import net
from kubernetes_mgmt_lab import state as lab_state
from kubernetes_mgmt_lab.cloud.api import ApiError
from kubernetes_mgmt_lab.cloud.machines import Machines
from kubernetes_mgmt_lab.cloud.records import Records
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.manager import Lab, teardown

LOG = redact.get_logger(__name__)
KIND = 'bridges'


class Bridges:
    """Network id -> the lab (Machines) that serves it."""

    def __init__(self, records: Records, labs_dir: str | None,
                 template_root: str):
        self.records = records
        self.labs_dir = labs_dir
        # New labs boot VMs with the same login as the first lab's.
        self._template = lab_state.load(lab_state.state_path(template_root))
        self.machines: dict[str, Machines] = {}
        self._lock = threading.Lock()
        for bridge in records.all(KIND):
            self.machines[bridge['id']] = Machines(bridge['root'])

    @property
    def compute_hosts(self) -> list[str]:
        return list(self._template.compute_hosts)

    def adopt(self, network_id: str, root: str, made: bool = False) -> None:
        """Serve ``network_id`` with the lab at ``root`` (``made``: the
        API made it, and removes it with the subnet)."""
        with self.records.changing() as data:
            data[KIND][network_id] = {'id': network_id, 'root': root,
                                      'made': made}
        self.machines[network_id] = Machines(root)

    def create(self, network_id: str, cidr: str) -> None:
        """A new lab (bridge, image, mirror) for the network's subnet."""
        if not self.labs_dir:
            raise ApiError(400, 'BadRequest', 'this lab cloud was started '
                           'without a labs directory: it only serves the '
                           'networks it was given')
        name = lab_name(network_id)
        root = os.path.join(self.labs_dir, name)
        with self._lock:
            try:
                Lab.up(masters=0, workers=0, root=root,
                       name=name, subnet=cidr,
                       username=self._template.username,
                       password=self._template.password)
            except LabError as exc:
                raise ApiError(409, 'SubnetCreateFailed',
                               f'the lab cannot make a bridge for {cidr}: '
                               f'{exc}') from exc
        self.adopt(network_id, root, made=True)
        LOG.info('network %s: lab %s on %s', network_id, name, cidr)

    def remove(self, network_id: str) -> None:
        """The lab the API made for the network goes (its VMs are gone
        already: a subnet with ports is not deleted)."""
        with self.records.changing() as data:
            bridge = data[KIND].pop(network_id, None)
        self.machines.pop(network_id, None)
        if bridge and bridge['made']:
            teardown(bridge['root'])
            LOG.info('network %s: lab at %s removed', network_id,
                     bridge['root'])


def lab_name(network_id: str) -> str:
    """A lab name (8 characters) for the network."""
    return 'kn' + hashlib.sha256(network_id.encode()).hexdigest()[:6]


def check_cidr(cidr: str) -> net.AddressPlan:
    try:
        return net.AddressPlan.parse(cidr)
    except LabError as exc:
        raise ApiError(400, 'InvalidInput', f'Invalid input for cidr: '
                       f'{exc}') from exc

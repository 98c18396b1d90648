"""Node labels that say where a VM runs (hardware-aware pod affinity).

A worker in an anti-affinity server group is labelled with its compute
host (``[kubernetes_mgmt] compute_host_label``, ``CIS-node`` by default),
so pods can ask for, or avoid, workers on one physical host. A VM that a
Grant placed in an availability zone gets the zone labels. Every node
also names the VNF instance and the VNFC it is (``IDENTITY_LABELS``), so
a health alert can name what Tacker heals. Labels are set with
``--overwrite``: a healed VM on another host, or a new VNFC id, gets the
new value.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster.cluster_plan import Node
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.remote.kubectl import kubectl
from kubernetes_mgmt.remote.ssh import SshSession
from kubernetes_mgmt.topology.hosts import Topology

LOG = redact.get_logger(__name__)
# What a node is to Tacker: its VNF instance and VNFC (vnfcInfo id in v2).
VNF_INSTANCE_LABEL = 'kubernetes-mgmt.openstack.org/vnf-instance-id'
VNFC_LABEL = 'kubernetes-mgmt.openstack.org/vnfc-info-id'
HOST_ATTRIBUTE = 'OS-EXT-SRV-ATTR:host'
# A label value: at most 63 of [A-Za-z0-9._-], alphanumeric at both ends.
_VALUE = re.compile(r'([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?')


def node_labels(topology: Topology, nodes: Sequence[Node],
                zones: Mapping[str, str], instance_id: str = '',
                vnfcs: Mapping[str, str] | None = None
                ) -> dict[str, dict[str, str]]:
    """Node name -> labels to set, for ``nodes`` (``zones``: server id ->
    availability zone from the Grant; ``vnfcs``: server id -> its VNFC id
    as Tacker records it). Raises when an anti-affinity worker's compute
    host is not visible."""
    conf = CONF.kubernetes_mgmt
    labels: dict[str, dict[str, str]] = {}
    hidden = []
    for node in nodes:
        wanted = _identity(node, instance_id, vnfcs or {})
        groups = topology.anti_affinity_groups(node.host)
        if groups:
            if node.host.compute_host:
                wanted[conf.compute_host_label] = _value(
                    node.host.compute_host, node, HOST_ATTRIBUTE)
            else:
                hidden.append(f'{node.label} (server {node.host.server_id}, '
                              f'server group {groups[0].name})')
        zone = zones.get(node.host.server_id)
        if zone:
            for key in conf.zone_labels:
                wanted[key] = _value(zone, node, 'grant zone')
        if wanted:
            labels[node.name] = wanted
    if hidden:
        raise MgmtDriverError(
            f'cannot label workers with their compute host: the servers do '
            f'not show the {HOST_ATTRIBUTE} attribute: '
            f'{"; ".join(hidden)}. Nova shows it only to admins (policy '
            '"os_compute_api:os-extended-server-attributes"): register the '
            'OpenStack VIM with an admin user, or allow that policy for '
            "the VIM user's role.")
    return labels


def _identity(node: Node, instance_id: str,
              vnfcs: Mapping[str, str]) -> dict[str, str]:
    found = {}
    if instance_id:
        found[VNF_INSTANCE_LABEL] = _value(instance_id, node, 'instance id')
    vnfc = vnfcs.get(node.host.server_id)
    if vnfc:
        found[VNFC_LABEL] = _value(vnfc, node, 'VNFC id')
    return found


def _value(text: str, node: Node, source: str) -> str:
    if not _VALUE.fullmatch(text):
        raise MgmtDriverError(
            f'{node.label}: {source} {text!r} is not a valid label value '
            '(at most 63 letters, digits, "-", "_" or ".", alphanumeric at '
            'both ends)')
    return text


def apply_labels(kube: SshSession, labels: Mapping[str, Mapping[str, str]]
                 ) -> None:
    for name, values in labels.items():
        kubectl(kube, ['label', 'node', name, '--overwrite',
                       *(f'{k}={v}' for k, v in sorted(values.items()))],
                step=f'label node {name}')
        LOG.info('[%s] node %s labelled %s', kube.endpoint.name, name,
                 ', '.join(f'{k}={v}' for k, v in sorted(values.items())))

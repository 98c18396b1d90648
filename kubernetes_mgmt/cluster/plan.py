"""Everything an operation needs to know about the cluster, computed once
from the request, the Heat topology and the configuration - or, once the
cluster exists, from its record (``cluster.record``): what it was built
with wins over today's configuration."""
from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, replace
from pathlib import Path

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster.naming import node_name
from kubernetes_mgmt.cluster.proxy import no_proxy
from kubernetes_mgmt.cluster.record import ClusterRecord
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.orchestration.access import endpoint_for
from kubernetes_mgmt.package import package_file
from kubernetes_mgmt.params.model import ClusterParams
from kubernetes_mgmt.remote.ssh import Endpoint
from kubernetes_mgmt.storage.pv_manifests import PvManifest, load_pv_manifests
from kubernetes_mgmt.topology.model import Host, Topology

LOG = redact.get_logger(__name__)
API_PORT = 6443
# Pinned upstream manifests, used when [kubernetes_mgmt] cni_manifest is
# not set (sites without internet set it to a mirror or package file).
CNI_MANIFESTS = {
    'calico': 'https://raw.githubusercontent.com/projectcalico/calico/'
              'v3.29.1/manifests/calico.yaml',
    'flannel': 'https://github.com/flannel-io/flannel/releases/download/'
               'v0.26.1/kube-flannel.yml',
}


@dataclass(frozen=True)
class Node:
    host: Host
    name: str
    endpoint: Endpoint

    @property
    def ip(self) -> str:
        return self.host.nic_ip

    @property
    def label(self) -> str:
        return self.endpoint.label


@dataclass(frozen=True)
class CniSource:
    name: str
    manifest: str                   # as configured: URL or package path
    url: str | None = None          # fetched by the node
    package_path: Path | None = None  # uploaded by the driver


@dataclass(frozen=True)
class ClusterPlan:
    instance_id: str
    masters: tuple[Node, ...]
    workers: tuple[Node, ...]
    params: ClusterParams
    topology: Topology
    kubernetes_version: str
    lb_port: int
    vrrp_router_id: int
    no_proxy: str
    cni: CniSource
    script: Path
    vim_name: str
    control_plane_endpoint: str     # host:port the nodes use
    auth_url: str                   # where Tacker reaches the API
    pod_cidr: str
    service_cidr: str
    storage: Node | None = None     # the NFS server VM (not a node)
    persistent_volumes: tuple[PvManifest, ...] = ()

    @property
    def ha(self) -> bool:
        return self.topology.is_ha

    @property
    def first_master(self) -> Node:
        return self.masters[0]

    @property
    def nodes(self) -> tuple[Node, ...]:
        return self.masters + self.workers

    @property
    def nfs_client(self) -> bool:
        """Nodes need the NFS client to mount the PVs."""
        return bool(self.params.storage_server
                    or self.params.pv_registrations)

    def freeze(self, kubernetes_patch: str | None = None) -> ClusterRecord:
        """The record of the cluster this plan builds."""
        cni = self.cni
        return ClusterRecord(
            kubernetes_version=self.kubernetes_version,
            kubernetes_patch=kubernetes_patch,
            control_plane_endpoint=self.control_plane_endpoint,
            auth_url=self.auth_url,
            lb_port=self.lb_port if self.ha else None,
            vrrp_router_id=self.vrrp_router_id if self.ha else None,
            cni=cni.name, cni_manifest=cni.manifest,
            cni_sha256=None,
            pod_cidr=self.pod_cidr, service_cidr=self.service_cidr,
            image_repository=CONF.kubernetes_mgmt.image_repository,
            sandbox_image=None, contract_version=None)


@dataclass(frozen=True)
class _Choices:
    """The values today's request and configuration would choose."""

    kubernetes_version: str
    lb_port: int
    vrrp_router_id: int
    cni: str
    cni_manifest: str
    pod_cidr: str
    service_cidr: str

    @classmethod
    def today(cls, instance_id: str, params: ClusterParams) -> _Choices:
        conf = CONF.kubernetes_mgmt
        return cls(
            kubernetes_version=params.kubernetes_version
            or conf.kubernetes_version,
            lb_port=params.master.lb_port or conf.lb_port,
            vrrp_router_id=params.master.virtual_router_id
            or derived_router_id(instance_id),
            cni=conf.cni,
            cni_manifest=conf.cni_manifest or CNI_MANIFESTS[conf.cni],
            pod_cidr=params.master.pod_cidr,
            service_cidr=params.master.cluster_cidr)

    def following(self, record: ClusterRecord, instance_id: str,
                  ha: bool) -> _Choices:
        """The record's values, logging each that today's would change."""
        today = dataclasses.asdict(self)
        if not ha:      # no load balancer: its port and VRRP id unused
            today.pop('lb_port')
            today.pop('vrrp_router_id')
        for name, (kept, new) in sorted(record.differences(today).items()):
            LOG.info('instance %s: the cluster was built with %s = %s; '
                     'today\'s request and configuration would choose %s: '
                     'following the cluster record', instance_id, name,
                     kept, new)
        recorded = {name: getattr(record, name) for name in today
                    if getattr(record, name) is not None}
        return dataclasses.replace(self, **recorded)


def build_plan(instance_id: str, params: ClusterParams, topology: Topology,
               package_root: Path, record: ClusterRecord | None = None,
               keep_endpoint: bool = True) -> ClusterPlan:
    """The plan; with the cluster's ``record``, what it was built with
    wins over today's choices, and with ``keep_endpoint`` (the same VMs
    and VIP) so do its endpoint and API URL."""
    choices = _Choices.today(instance_id, params)
    if record is not None:
        choices = choices.following(record, instance_id, topology.is_ha)
    cluster_ips = [topology.cluster_ip]
    if topology.cluster_fip:
        cluster_ips.append(topology.cluster_fip)
    port = choices.lb_port if topology.is_ha else API_PORT
    endpoint = f'{topology.cluster_ip}:{port}'
    auth_url = f'https://{topology.cluster_fip or topology.cluster_ip}:{port}'
    if record is not None and keep_endpoint:
        endpoint, auth_url = record.control_plane_endpoint, record.auth_url
    return ClusterPlan(
        instance_id=instance_id,
        masters=_nodes(topology.masters, params),
        workers=_nodes(topology.workers, params),
        params=params,
        topology=topology,
        kubernetes_version=choices.kubernetes_version,
        lb_port=choices.lb_port,
        vrrp_router_id=choices.vrrp_router_id,
        no_proxy=no_proxy(params, cluster_ips,
                          [h.nic_ip for h in topology.hosts]),
        cni=_cni_source(package_root, choices.cni, choices.cni_manifest),
        script=package_file(package_root, params.script_path),
        vim_name=params.vim_name or f'kubernetes-{instance_id}',
        control_plane_endpoint=endpoint,
        auth_url=auth_url,
        pod_cidr=choices.pod_cidr,
        service_cidr=choices.service_cidr,
        storage=_nodes((topology.storage,), params)[0]
        if topology.storage else None,
        persistent_volumes=load_pv_manifests(package_root, params,
                                             topology.nfs_servers),
    )


def derived_router_id(instance_id: str) -> int:
    """1..255 from the instance, so that two clusters on one network
    rarely collide (the request can set it explicitly)."""
    digest = hashlib.sha256(instance_id.encode()).digest()
    return int.from_bytes(digest[:4], 'big') % 255 + 1


def _nodes(hosts: tuple[Host, ...], params: ClusterParams
           ) -> tuple[Node, ...]:
    nodes = []
    for host in hosts:
        name = node_name(host)
        endpoint = replace(endpoint_for(host, params),
                           label=f'{name}@{host.ssh_ip}')
        nodes.append(Node(host, name, endpoint))
    return tuple(nodes)


def _cni_source(package_root: Path, name: str, manifest: str) -> CniSource:
    if '://' in manifest:
        return CniSource(name, manifest, url=manifest)
    return CniSource(name, manifest,
                     package_path=package_file(package_root, manifest))

"""Everything an operation needs to know about the cluster, computed once
from the request, the Heat topology and the configuration."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path

from kubernetes_mgmt.cluster.naming import node_name
from kubernetes_mgmt.cluster.proxy import no_proxy
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.orchestration.access import endpoint_for
from kubernetes_mgmt.package import package_file
from kubernetes_mgmt.params.model import ClusterParams
from kubernetes_mgmt.remote.ssh import Endpoint
from kubernetes_mgmt.storage.pv_manifests import PvManifest, load_pv_manifests
from kubernetes_mgmt.topology.model import Host, Topology

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

    @property
    def control_plane_endpoint(self) -> str:
        port = self.lb_port if self.ha else API_PORT
        return f'{self.topology.cluster_ip}:{port}'

    @property
    def auth_url(self) -> str:
        """Where Tacker reaches the API (floating IP when there is one)."""
        host = self.topology.cluster_fip or self.topology.cluster_ip
        port = self.lb_port if self.ha else API_PORT
        return f'https://{host}:{port}'


def build_plan(instance_id: str, params: ClusterParams, topology: Topology,
               package_root: Path) -> ClusterPlan:
    conf = CONF.kubernetes_mgmt
    cluster_ips = [topology.cluster_ip]
    if topology.cluster_fip:
        cluster_ips.append(topology.cluster_fip)
    return ClusterPlan(
        instance_id=instance_id,
        masters=_nodes(topology.masters, params),
        workers=_nodes(topology.workers, params),
        params=params,
        topology=topology,
        kubernetes_version=params.kubernetes_version
        or conf.kubernetes_version,
        lb_port=params.master.lb_port or conf.lb_port,
        vrrp_router_id=params.master.virtual_router_id
        or derived_router_id(instance_id),
        no_proxy=no_proxy(params, cluster_ips,
                          [h.nic_ip for h in topology.hosts]),
        cni=_cni_source(package_root),
        script=package_file(package_root, params.script_path),
        vim_name=params.vim_name or f'kubernetes-{instance_id}',
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


def _cni_source(package_root: Path) -> CniSource:
    conf = CONF.kubernetes_mgmt
    manifest = conf.cni_manifest or CNI_MANIFESTS[conf.cni]
    if '://' in manifest:
        return CniSource(conf.cni, url=manifest)
    return CniSource(conf.cni,
                     package_path=package_file(package_root, manifest))

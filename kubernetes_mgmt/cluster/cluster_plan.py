"""Everything an operation needs to know about the cluster, computed once
from the request, the VNF package, the Heat topology and the configuration
- or, once the cluster exists, from its record (``state.cluster_record``):
what it was built with wins over today's configuration. The Kubernetes
minor of a new cluster is the request's, else the package's (its VNF's
software_version, when that is a minor), else the configuration's; a
request naming another minor than its package's is refused."""
from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, replace
from pathlib import Path

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster.access import endpoint_for
from kubernetes_mgmt.cluster.naming import node_name
from kubernetes_mgmt.cluster.proxy import no_proxy
from kubernetes_mgmt.cluster.script import CONTRACT_VERSION, check_contract
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import MgmtDriverError, ValidationError
from kubernetes_mgmt.params import image_bundle
from kubernetes_mgmt.params.cluster_params import ClusterParams
from kubernetes_mgmt.params.image_bundle import BundleError, ImageBundle
from kubernetes_mgmt.params.package_file import package_file
from kubernetes_mgmt.params.package_version import (
    TOSCA_META,
    package_software_version,
)
from kubernetes_mgmt.params.versions import chosen_minor, package_problem
from kubernetes_mgmt.remote.ssh import Endpoint
from kubernetes_mgmt.state.cluster_record import ClusterRecord
from kubernetes_mgmt.storage.pv_manifests import PvManifest, load_pv_manifests
from kubernetes_mgmt.topology.hosts import Host, Topology

LOG = redact.get_logger(__name__)
API_PORT = 6443
# kubeadm's default imageRepository: containerd's sandbox (pause) image
# comes from here too unless [kubernetes_mgmt] image_repository is set.
DEFAULT_IMAGE_REPOSITORY = 'registry.k8s.io'


@dataclass(frozen=True)
class PinnedManifest:
    url: str
    sha256: str     # of the file at url, as downloaded


# Upstream manifests pinned by content, used when [kubernetes_mgmt]
# cni_manifest is not set (sites without internet set it to a mirror or
# package file). Both are the files at the release tag in the projects'
# git repositories, hashed from there; see the README ("Pod network")
# for which Kubernetes minors each project lists.
CNI_MANIFESTS = {
    'calico': PinnedManifest(
        'https://raw.githubusercontent.com/projectcalico/calico/'
        'v3.32.1/manifests/calico.yaml',
        'a1df919d9721cf667accdc3e72848911b0cb25cfab7d2478ad0c996302c95744'),
    'flannel': PinnedManifest(
        'https://raw.githubusercontent.com/flannel-io/flannel/'
        'v0.28.9/Documentation/kube-flannel.yml',
        'e875824be2f552b45711dbda91af81b17eb961d00025d914d9fef18fad8f09c0'),
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
    sha256: str                     # the node checks the manifest against it
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
    # [kubernetes_mgmt] image_repository (None: kubeadm's default); the
    # control-plane images and containerd's sandbox image come from it.
    image_repository: str | None = None
    # The package's image bundle (sites with no registry) and where its
    # archives are on this host.
    image_bundle: ImageBundle | None = None
    package_root: Path | None = None

    def bundle_for(self, minor: str) -> ImageBundle | None:
        """The package's bundle when a node installs ``minor`` with it;
        MgmtDriverError when a cluster built from a bundle has none for
        ``minor`` (it would pull what it cannot reach)."""
        bundle = self.image_bundle
        if bundle is not None and bundle.minor == minor:
            return bundle
        if bundle is not None:
            raise MgmtDriverError(
                f'the VNF package\'s image bundle ({image_bundle.MANIFEST}) '
                f'is for Kubernetes {bundle.kubernetes_version}; nodes '
                f'installing {minor} need a bundle of {minor} (kubernetes-'
                'mgmt package build --image-bundle DIR). Nothing was '
                'changed.')
        return None

    @property
    def sandbox_repository(self) -> str:
        """Registry path of containerd's sandbox (pause) image; its tag
        is the one the nodes' kubeadm names for the cluster's version
        (prepare prints the whole image as SANDBOX_IMAGE)."""
        return self.image_repository or DEFAULT_IMAGE_REPOSITORY

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

    def freeze(self, kubernetes_patch: str | None = None,
               sandbox_image: str | None = None) -> ClusterRecord:
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
            cni_sha256=cni.sha256,
            pod_cidr=self.pod_cidr, service_cidr=self.service_cidr,
            image_repository=self.sandbox_repository,
            sandbox_image=sandbox_image, contract_version=CONTRACT_VERSION,
            image_bundle=self.image_bundle.kubernetes_version
            if self.image_bundle else None)


@dataclass(frozen=True)
class _Choices:
    """The values today's request and configuration would choose."""

    kubernetes_version: str
    lb_port: int
    vrrp_router_id: int
    cni: str
    cni_manifest: str
    cni_sha256: str | None
    pod_cidr: str
    service_cidr: str
    image_repository: str

    @classmethod
    def today(cls, instance_id: str, params: ClusterParams,
              software_version: str | None = None) -> _Choices:
        """``software_version``: the VNF package's (a minor or not)."""
        conf = CONF.kubernetes_mgmt
        return cls(
            kubernetes_version=chosen_minor(params.kubernetes_version,
                                            software_version,
                                            conf.kubernetes_version),
            lb_port=params.master.lb_port or conf.lb_port,
            vrrp_router_id=params.master.virtual_router_id
            or derived_router_id(instance_id),
            cni=conf.cni,
            **_cni_choice(),
            pod_cidr=params.master.pod_cidr,
            service_cidr=params.master.cluster_cidr,
            image_repository=conf.image_repository
            or DEFAULT_IMAGE_REPOSITORY)

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


def _cni_choice() -> dict[str, str | None]:
    conf = CONF.kubernetes_mgmt
    if not conf.cni_manifest:
        pinned = CNI_MANIFESTS[conf.cni]
        return {'cni_manifest': pinned.url, 'cni_sha256': pinned.sha256}
    return {'cni_manifest': conf.cni_manifest,
            'cni_sha256': (conf.cni_manifest_sha256 or '').lower() or None}


def build_plan(instance_id: str, params: ClusterParams, topology: Topology,
               package_root: Path, record: ClusterRecord | None = None,
               keep_endpoint: bool = True) -> ClusterPlan:
    """The plan; with the cluster's ``record``, what it was built with
    wins over today's choices, and with ``keep_endpoint`` (the same VMs
    and VIP) so do its endpoint and API URL."""
    script = package_file(package_root, params.script_path)
    # Before anything touches a VM: a script of another plugin version
    # would misread the keys this driver sends.
    check_contract(script, f'{params.script_path} of the VNF package')
    # A cluster with a record keeps its minor whatever the package says.
    software_version = None if record else _package_version(package_root)
    problem = package_problem(params.kubernetes_version, software_version)
    if problem:
        raise ValidationError([problem])
    choices = _Choices.today(instance_id, params, software_version)
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
        cni=_cni_source(package_root, choices.cni, choices.cni_manifest,
                        choices.cni_sha256),
        script=script,
        vim_name=params.vim_name or f'kubernetes-{instance_id}',
        control_plane_endpoint=endpoint,
        auth_url=auth_url,
        pod_cidr=choices.pod_cidr,
        service_cidr=choices.service_cidr,
        storage=_nodes((topology.storage,), params)[0]
        if topology.storage else None,
        persistent_volumes=load_pv_manifests(package_root, params,
                                             topology.nfs_servers),
        image_repository=None
        if choices.image_repository == DEFAULT_IMAGE_REPOSITORY
        else choices.image_repository,
        image_bundle=_bundle(package_root),
        package_root=package_root,
    )


def _bundle(package_root: Path) -> ImageBundle | None:
    try:
        return image_bundle.load(package_root)
    except BundleError as exc:
        raise MgmtDriverError(f'the VNF package in {package_root}: {exc}. '
                              'Nothing was changed.') from None


def _package_version(package_root: Path) -> str | None:
    """The package's software_version; None for a tree without a
    TOSCA.meta (not an onboarded package: it has no VNFD to read)."""
    if not (package_root / TOSCA_META).is_file():
        return None
    return package_software_version(package_root)


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


def _cni_source(package_root: Path, name: str, manifest: str,
                wanted: str | None) -> CniSource:
    """The manifest and the SHA-256 the node checks it against: pinned
    for the defaults; cni_manifest_sha256 for a URL override (required);
    for a package file the file's own hash (TOSCA.meta already pins it
    in the package), checked against the wanted one when there is one."""
    if '://' in manifest:
        if wanted is None:
            raise MgmtDriverError(
                f'[kubernetes_mgmt] cni_manifest is a URL ({manifest}): '
                'set [kubernetes_mgmt] cni_manifest_sha256 to the SHA-256 '
                'of that file, so that nodes apply only that content')
        return CniSource(name, manifest, wanted, url=manifest)
    path = package_file(package_root, manifest)
    actual = hashlib.sha256(path.read_bytes()).hexdigest()
    if wanted is not None and actual != wanted:
        raise MgmtDriverError(
            f'CNI manifest {manifest} of the VNF package has SHA-256 '
            f'{actual}, but {wanted} is wanted ([kubernetes_mgmt] '
            'cni_manifest_sha256, or the cluster record)')
    return CniSource(name, manifest, actual, package_path=path)

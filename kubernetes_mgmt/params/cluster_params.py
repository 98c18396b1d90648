"""Typed shape of ``additionalParams.k8s_cluster_installation_param``.

Objects here are only built from requests that passed validation
(``kubernetes_mgmt.params.validate``), so their fields can be trusted.
Passwords are excluded from ``repr`` so they never leak into logs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from kubernetes_mgmt.params.registries import RegistryParams

DEFAULT_POD_CIDR = '192.168.0.0/16'
DEFAULT_SERVICE_CIDR = '10.96.0.0/12'


@dataclass(frozen=True)
class NodeGroupParams:
    """How to find and log into the VMs of one node group."""

    ssh_cp_name: str
    nic_cp_name: str
    username: str
    # None: the driver's own key only (the VMs took the user data).
    password: str | None = field(default=None, repr=False)
    aspect_id: str | None = None


@dataclass(frozen=True)
class MasterParams(NodeGroupParams):
    cluster_cp_name: str = ''
    pod_cidr: str = DEFAULT_POD_CIDR
    cluster_cidr: str = DEFAULT_SERVICE_CIDR  # the service CIDR
    cluster_fip_name: str | None = None
    lb_port: int | None = None            # default: [kubernetes_mgmt]
    virtual_router_id: int | None = None  # default: derived per cluster


@dataclass(frozen=True)
class ProxyParams:
    http_proxy: str | None = field(default=None, repr=False)
    https_proxy: str | None = field(default=None, repr=False)
    no_proxy: str | None = None
    k8s_node_cidr: str | None = None


@dataclass(frozen=True)
class VolumeSetup:
    volume_resource_id: str
    mount_to: str


@dataclass(frozen=True)
class NfsExport:
    export_dir: str
    export_to: str
    allow_wide_export: bool = False  # export_to wider than /8 on purpose


@dataclass(frozen=True)
class StorageServerParams:
    ssh_cp_name: str
    username: str
    password: str | None = field(default=None, repr=False)
    volumes: tuple[VolumeSetup, ...] = ()
    exports: tuple[NfsExport, ...] = ()


@dataclass(frozen=True)
class PvRegistration:
    pv_manifest_file_path: str
    nfs_server_cp: str


@dataclass(frozen=True)
class ClusterParams:
    """Everything ``k8s_cluster_installation_param`` says."""

    script_path: str
    master: MasterParams
    worker: NodeGroupParams
    vim_name: str | None = None
    # Default: the VNF package's software_version when it is a minor,
    # else [kubernetes_mgmt] kubernetes_version (cluster_plan).
    kubernetes_version: str | None = None
    proxy: ProxyParams | None = None
    storage_server: StorageServerParams | None = None
    pv_registrations: tuple[PvRegistration, ...] = ()
    registries: tuple[RegistryParams, ...] = ()
    # Empty: [kubernetes_mgmt] apt_key_fingerprints.
    apt_key_fingerprints: tuple[str, ...] = ()

    def secrets(self) -> list[str]:
        """Every value that must be masked in logs."""
        values = [self.master.password, self.worker.password]
        if self.storage_server:
            values.append(self.storage_server.password)
        if self.proxy:
            values += [_url_password(self.proxy.http_proxy),
                       _url_password(self.proxy.https_proxy)]
        for registry in self.registries:
            values += registry.secrets()
        return [v for v in values if v]


def _url_password(url: str | None) -> str | None:
    if not url:
        return None
    try:
        return urlsplit(url).password
    except ValueError:  # placeholder URLs such as host1:port1
        return None

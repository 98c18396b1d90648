"""The cluster record: what a cluster was built with, frozen at instantiate.

Clusters outlive configurations and plugin versions. Every operation after
instantiate plans from this record, never from today's defaults: a new
default Kubernetes minor must not make a scale-out join kubelets newer
than the API server, and a new ``lb_port`` must not move HAProxy to a
port no kubeconfig uses. A deliberate upgrade would be its own operation.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from kubernetes_mgmt.errors import MgmtDriverError

# Bumped when a field is added; older records load with the new field
# absent (None) and are never rewritten with today's defaults.
RECORD_VERSION = 1


@dataclass(frozen=True)
class ClusterRecord:
    kubernetes_version: str             # the minor, e.g. '1.37'
    kubernetes_patch: str | None        # as the API server reports it
    control_plane_endpoint: str         # host:port the nodes use
    auth_url: str                       # where Tacker reaches the API
    lb_port: int | None                 # HA only: HAProxy's port
    vrrp_router_id: int | None          # HA only
    cni: str
    cni_manifest: str                   # URL, or a path in the package
    cni_sha256: str | None
    pod_cidr: str
    service_cidr: str
    image_repository: str | None
    sandbox_image: str | None
    contract_version: int | None        # of the install script used
    # The version of the image bundle it was built from (no registry).
    image_bundle: str | None = None
    version: int = RECORD_VERSION

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClusterRecord:
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        optional = {f.name: None for f in dataclasses.fields(cls)
                    if f.name not in values and f.name != 'version'}
        try:
            return cls(**{**optional, **values})
        except TypeError as exc:     # a field of the wrong shape
            raise MgmtDriverError(f'cluster record: {exc}') from None

    def differences(self, today: dict[str, Any]) -> dict[str, tuple]:
        """Field -> (recorded, today's) for each of ``today``'s values
        (what the current configuration would choose) that differs."""
        return {name: (getattr(self, name), value)
                for name, value in today.items()
                if value is not None and getattr(self, name) != value}

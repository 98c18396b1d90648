"""How the driver reaches each host of a topology."""
from __future__ import annotations

from kubernetes_mgmt.params.cluster_params import ClusterParams
from kubernetes_mgmt.remote.ssh import Endpoint, Login
from kubernetes_mgmt.topology.hosts import Host, Role


def endpoint_for(host: Host, params: ClusterParams) -> Endpoint:
    group = {Role.MASTER: params.master, Role.WORKER: params.worker,
             Role.STORAGE: params.storage_server}[host.role]
    if group is None:
        raise ValueError(f'{host.label}: no login parameters for role '
                         f'{host.role.value}')
    return Endpoint(address=host.ssh_ip,
                    login=Login(group.username, group.password),
                    label=host.label, host_id=host.server_id)

"""How an operation reaches its VMs: the driver's key, the VMs' user data
that authorizes it, and the host keys the VMs must present."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import paramiko

from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.params.cluster_params import ClusterParams
from kubernetes_mgmt.remote import identity, user_data
from kubernetes_mgmt.remote.hostkeys import ConsoleKeys, HostKeyStore
from kubernetes_mgmt.state.instance_state import DriverState
from kubernetes_mgmt.topology.console import ConsoleReader


def host_keys(state: DriverState, heat: Any,
              replacing: Iterable[str] = ()) -> HostKeyStore:
    """The host keys stored for the instance; a VM not seen before must
    present a key it published on its console (read through Nova with
    ``heat``'s session). ``replacing``: server ids rebuilt in place."""
    checking = CONF.kubernetes_mgmt.host_key_checking
    authority = ConsoleKeys(ConsoleReader(
        heat, timeout=CONF.kubernetes_mgmt.ssh_connect_timeout)) \
        if checking else None
    return HostKeyStore(known=dict(state.host_keys), authority=authority,
                        checking=checking, replacing=set(replacing))


def login_key(instance_id: str, *, first_use: bool = False
              ) -> paramiko.PKey:
    """The driver's key for this cluster (``first_use``: the site key may
    be created, at the first instantiate of a site)."""
    return identity.login_key(instance_id, create_site_key=first_use)


def vm_user_data(instance_id: str, params: ClusterParams, *,
                 first_use: bool = False) -> str:
    """The cloud-init user data that lets the driver's key in, for every
    login user of the request (``first_use``: at instantiate)."""
    key = login_key(instance_id, first_use=first_use)
    users = [params.master.username, params.worker.username]
    if params.storage_server is not None:
        users.append(params.storage_server.username)
    return user_data.cloud_config(users,
                                  identity.public_line(key, instance_id))

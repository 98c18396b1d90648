"""The storage server and its PersistentVolumes within the operations.

instantiate (and a heal of the whole VNF) sets up the NFS server beside
the cluster install and then registers the PVs. A heal of the storage
server's VNFC first makes sure no PV is in use - its data would be gone
with the old volume - and deletes the PVs; after the rebuild the new
server is set up and the PVs are registered again with its address.
These are the actions of steps (``steps.declare``).
"""
from __future__ import annotations

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster import roles
from kubernetes_mgmt.cluster.cluster_plan import ClusterPlan
from kubernetes_mgmt.cluster.script import InstallScript
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.remote.ssh import SshSession
from kubernetes_mgmt.storage import persistent_volumes

LOG = redact.get_logger(__name__)


def setup_server(plan: ClusterPlan, session: SshSession) -> None:
    """Volumes formatted (only when blank), mounted and exported on the
    storage server ``session`` reaches; a second run changes nothing."""
    script = InstallScript(plan.script)
    script.upload(session)
    script.run(session, 'storage', roles.storage_server(plan))


def register_volumes(plan: ClusterPlan, kube: SshSession) -> None:
    persistent_volumes.register(
        kube, plan.persistent_volumes,
        deadline=CONF.kubernetes_mgmt.volume_timeout)


def refuse_if_in_use(plan: ClusterPlan, kube: SshSession) -> None:
    """Before a heal of the storage server: no PV may be Bound."""
    persistent_volumes.refuse_if_bound(
        kube, [m.name for m in plan.persistent_volumes],
        'heal of the storage server')


def release_volumes(plan: ClusterPlan, kube: SshSession) -> None:
    persistent_volumes.delete(
        kube, [m.name for m in plan.persistent_volumes],
        deadline=CONF.kubernetes_mgmt.volume_timeout)

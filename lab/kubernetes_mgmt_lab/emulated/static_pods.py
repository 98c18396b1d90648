"""The kubelet's static pods that the lab really runs on a master: etcd
and kube-apiserver follow /etc/kubernetes/manifests when the kubelet
(re)starts, as the kubelet's sync does (a manifest moved away stops its
pod, one put back starts it). Other pods are recorded objects only."""
from __future__ import annotations

import os
import sys

from kubernetes_mgmt_lab.emulated import cluster, etcd_server, store
from kubernetes_mgmt_lab.emulated import kubeadm_common as common
from kubernetes_mgmt_lab.emulated.host import host_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kubernetes_mgmt_lab.emulated.runner import Context

APISERVER_MANIFEST = f'{common.MANIFESTS}/kube-apiserver.yaml'


def _has(path: str) -> bool:
    return os.path.exists(host_path(path))


def apiserver_running() -> bool:
    from kubernetes_mgmt_lab.emulated import apiserver
    return apiserver.running(host_path(common.APISERVER_PID))


def running(component: str) -> bool | None:
    """Whether the process of a really-run static pod runs; None for
    the other (recorded) pods."""
    if component == 'etcd':
        return etcd_server.running()
    if component == 'kube-apiserver':
        return apiserver_running()
    return None


def sync(ctx: Context) -> None:
    """Start or stop etcd and kube-apiserver after their manifests. A
    pod that fails to start is the kubelet's log's business, not
    systemctl's: it is reported, never raised."""
    try:
        _sync_etcd(ctx)
        _sync_apiserver(ctx)
    except (etcd_server.EtcdStartError, RuntimeError) as e:
        print(f'kubelet: static pod failed: {e}', file=sys.stderr)


def _sync_etcd(ctx: Context) -> None:
    wanted = _has(etcd_server.MANIFEST)
    if wanted and not etcd_server.running():
        # Its peers may be gone (no quorum): running is enough here.
        etcd_server.start(ctx.cluster_dir, ctx.host.name,
                          wait_healthy=False)
    elif not wanted and etcd_server.running():
        etcd_server.stop(ctx.cluster_dir, ctx.host.name)


def _sync_apiserver(ctx: Context) -> None:
    wanted = _has(APISERVER_MANIFEST)
    if wanted == apiserver_running():
        return
    if not wanted:
        common.stop_apiserver()
        return
    state = store.read(ctx.cluster_dir)
    record = cluster.host_record(state, ctx.host.name).get('apiserver')
    if not record:
        return          # not a control plane of this cluster
    version = state['cluster'].get('kubernetes_version', '')
    from kubernetes_mgmt_lab.emulated import apiserver
    apiserver.start(sys.executable, record['address'], record['port'],
                    host_path(common.PKI_DIR),
                    host_path(common.APISERVER_PID),
                    host_path(common.APISERVER_LOG), ctx.cluster_dir,
                    version)

"""A master's static pods as its kubelet keeps them: one running
container per manifest in /etc/kubernetes/manifests, a new one (new id)
whenever the manifest comes back or changes, none while it is away.

The lab really runs two of them, etcd (``etcd_server``) and the
kube-apiserver; the others are listed only. The lab's kubelet is a
recorded unit, not a process, so it syncs when the container runtime is
asked what runs (``crictl ps``) and when the kubelet (re)starts: then,
as the real kubelet would have by that time, a pod whose manifest left
is stopped, and one whose manifest is back is started again (etcd from
the manifest's command; the API server on the address and port the
host's record keeps, at the manifest's version), loading the
certificates the node now has.
"""
from __future__ import annotations

import hashlib
import os
import sys

from kubernetes_mgmt_lab.emulated import etcd_server, store, units, yamlio
from kubernetes_mgmt_lab.emulated import kubeadm_common as common
from kubernetes_mgmt_lab.emulated.host import host_path
from kubernetes_mgmt_lab.emulated.runner import Context


def _manifest(component: str) -> str:
    return host_path(f'{common.MANIFESTS}/{component}.yaml')


def container_id(host: str, component: str) -> str | None:
    """The id of the component's container, None when its manifest is
    away. A manifest put back (rename) or rewritten has a new ctime."""
    try:
        st = os.stat(_manifest(component))
    except FileNotFoundError:
        return None
    seed = f'{host}/{component}/{st.st_ino}/{st.st_ctime_ns}'
    return hashlib.sha256(seed.encode()).hexdigest()


def containers(ctx: Context) -> list[dict]:
    """What runs, after the kubelet's sync, in crictl's JSON shape."""
    sync(ctx)
    found = []
    for component in common.COMPONENTS:
        cid = container_id(ctx.host.name, component)
        if cid is not None and running(component) is not False:
            found.append({'id': cid, 'metadata': {'name': component,
                                                  'attempt': 0},
                          'state': 'CONTAINER_RUNNING',
                          'labels': {'io.kubernetes.container.name':
                                     component}})
    return found


def running(component: str) -> bool | None:
    """Whether the process of a really-run static pod runs; None for
    the other (listed only) pods."""
    if component == 'etcd':
        return etcd_server.running()
    if component == 'kube-apiserver':
        from kubernetes_mgmt_lab.emulated import apiserver
        return apiserver.running(host_path(common.APISERVER_PID))
    return None


def sync(ctx: Context) -> None:
    """etcd, then the kube-apiserver, follow their manifests (kubelet
    running only: a stopped kubelet changes nothing)."""
    if units.active_state('kubelet') != 'active':
        return
    _sync_etcd(ctx)
    _sync_apiserver(ctx)


def _sync_etcd(ctx: Context) -> None:
    """An etcd that fails to start is the kubelet's log's business (it
    would retry), never the caller's: reported, not raised."""
    present = os.path.exists(host_path(etcd_server.MANIFEST))
    try:
        if present and not etcd_server.running():
            # Its peers may be gone (no quorum): running is enough.
            etcd_server.start(ctx.cluster_dir, ctx.host.name,
                              wait_healthy=False)
        elif not present and etcd_server.running():
            etcd_server.stop(ctx.cluster_dir, ctx.host.name)
    except etcd_server.EtcdStartError as e:
        print(f'kubelet: static pod etcd failed: {e}', file=sys.stderr)


def _sync_apiserver(ctx: Context) -> None:
    from kubernetes_mgmt_lab.emulated import apiserver
    pidfile = host_path(common.APISERVER_PID)
    present = os.path.exists(_manifest('kube-apiserver'))
    running = apiserver.running(pidfile)
    if running and not present:
        common.stop_apiserver()
    elif present and not running:
        record = store.read(ctx.cluster_dir).get('hosts', {}).get(
            ctx.host.name, {}).get('apiserver') or {}
        version = _image_tag(_manifest('kube-apiserver'))
        if record and version:
            common.start_apiserver(ctx, record.get('address')
                                   or ctx.host.ip,
                                   int(record.get('port') or 6443), version)


def _image_tag(path: str) -> str | None:
    """The version the manifest runs: its image's tag."""
    with open(path, encoding='utf-8') as f:
        pod = yamlio.load(f) or {}
    for container in (pod.get('spec') or {}).get('containers') or []:
        image = str(container.get('image') or '')
        if ':' in image:
            return image.rsplit(':', 1)[1]
    return None

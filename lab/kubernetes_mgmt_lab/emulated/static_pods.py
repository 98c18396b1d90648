"""A master's static pods as its kubelet keeps them: one running
container per manifest in /etc/kubernetes/manifests, a new one (new id)
whenever the manifest comes back or changes, none while it is away.

The lab's kubelet is a recorded unit, not a process, so it syncs when
the container runtime is asked what runs (``crictl ps``): then, as the
real kubelet would have by that time, a kube-apiserver whose manifest
left is stopped, and one whose manifest is back is started again (on
the address, port and version the host's record keeps), loading the
certificates the node now has.
"""
from __future__ import annotations

import hashlib
import os

from kubernetes_mgmt_lab.emulated import kubeadm_common as common
from kubernetes_mgmt_lab.emulated import store, units, yamlio
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
        if cid is not None:
            found.append({'id': cid, 'metadata': {'name': component,
                                                  'attempt': 0},
                          'state': 'CONTAINER_RUNNING',
                          'labels': {'io.kubernetes.container.name':
                                     component}})
    return found


def sync(ctx: Context) -> None:
    """The kube-apiserver follows its manifest (kubelet running only: a
    stopped kubelet changes nothing)."""
    if units.active_state('kubelet') != 'active':
        return
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

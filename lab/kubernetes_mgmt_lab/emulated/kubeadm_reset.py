"""``kubeadm reset``: undo init/join on this host.  Like the real one it
leaves the Node object in the cluster; on a control-plane node it also
removes the local etcd member."""
from __future__ import annotations

import os
import shutil
import sys

from kubernetes_mgmt_lab.emulated import cluster, kubeadm_etcd, store, units
from kubernetes_mgmt_lab.emulated import kubeadm_cli as kcli
from kubernetes_mgmt_lab.emulated import kubeadm_common as common
from kubernetes_mgmt_lab.emulated.flags import Parsed
from kubernetes_mgmt_lab.emulated.host import host_path
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context


def _confirm(ctx: Context) -> None:
    sys.stdout.write('[reset] Are you sure you want to proceed? [y/N]: ')
    sys.stdout.flush()
    if sys.stdin.readline().strip().lower() not in ('y', 'yes'):
        raise CommandError('error execution phase preflight: won\'t '
                           'proceed; the user didn\'t answer (Y|y) in order '
                           f'to continue\n{kcli.STACK_HINT}')


def _forget_host(ctx: Context) -> None:
    """Remove this host's etcd member (and stop its etcd) and its API
    server record."""
    api = cluster.host_record(store.read(ctx.cluster_dir),
                              ctx.host.name).get('apiserver')
    kubeadm_etcd.leave(ctx, api['address'] if api else ctx.host.ip)
    with store.mutate(ctx.cluster_dir) as state:
        rec = cluster.host_record(state, ctx.host.name)
        rec.pop('apiserver', None)
        rec['kubelet'] = False
        cluster.reconcile(state)


def _clean_files() -> None:
    k8s = host_path(common.K8S_DIR)
    for name in ('admin.conf', 'super-admin.conf', 'kubelet.conf',
                 'bootstrap-kubelet.conf', 'controller-manager.conf',
                 'scheduler.conf'):
        try:
            os.unlink(os.path.join(k8s, name))
        except FileNotFoundError:
            pass
    for path in (common.PKI_DIR, common.MANIFESTS, common.ETCD_DIR):
        shutil.rmtree(host_path(path), ignore_errors=True)
    os.makedirs(host_path(common.MANIFESTS), exist_ok=True)
    kubelet = host_path(common.KUBELET_DIR)
    if os.path.isdir(kubelet):
        for name in os.listdir(kubelet):
            target = os.path.join(kubelet, name)
            if os.path.isdir(target):
                shutil.rmtree(target, ignore_errors=True)
            else:
                os.unlink(target)


def run_reset(ctx: Context, opts: Parsed) -> int:
    if opts.args:
        raise CommandError(f'unknown command "{opts.args[0]}" for '
                           f'"kubeadm reset"\n{kcli.STACK_HINT}')
    if not opts.get('force'):
        _confirm(ctx)
    ctx.out('[preflight] Running pre-flight checks')
    common.stop_apiserver()
    ctx.out('[reset] Stopping the kubelet service')
    units.set_active(ctx, 'kubelet', False)
    _forget_host(ctx)
    ctx.out('[reset] Deleting contents of directories: '
            '[/etc/kubernetes/manifests /var/lib/kubelet /etc/kubernetes/'
            'pki]')
    _clean_files()
    ctx.out('\nThe reset process does not clean CNI configuration, '
            'iptables or IPVS tables, or your $HOME/.kube/config.')
    return 0

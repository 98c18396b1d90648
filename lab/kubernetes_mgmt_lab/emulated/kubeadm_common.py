"""What kubeadm's sub-commands share: the node's files, preflight
checks, versions and the kube-apiserver of this host."""
from __future__ import annotations

import ipaddress
import os
import shutil
import sys
from dataclasses import dataclass, field

from kubernetes_mgmt.remote.retry import wait_until
from kubernetes_mgmt_lab import pki
from kubernetes_mgmt_lab.emulated import (
    kubeconfig,
    labclock,
    packages,
    units,
    yamlio,
)
from kubernetes_mgmt_lab.emulated.host import host_path
from kubernetes_mgmt_lab.emulated.kubeadm_cli import STACK_HINT, fail
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context

K8S_DIR = '/etc/kubernetes'
PKI_DIR = '/etc/kubernetes/pki'
MANIFESTS = '/etc/kubernetes/manifests'
KUBELET_DIR = '/var/lib/kubelet'
ETCD_DIR = '/var/lib/etcd'
APISERVER_PID = '/run/klab/kube-apiserver.pid'
APISERVER_LOG = '/var/log/klab/kube-apiserver.log'
COMPONENTS = ('etcd', 'kube-apiserver', 'kube-controller-manager',
              'kube-scheduler')


@dataclass
class Preflight:
    """Collects ``[ERROR Name]: text`` lines; some may be ignored."""
    ignore: set[str]
    errors: list[tuple[str, str]] = field(default_factory=list)

    def check(self, ok: bool, name: str, text: str) -> None:
        if ok:
            return
        ignored = 'all' in self.ignore or name.lower() in \
            {i.lower() for i in self.ignore}
        if ignored:
            print(f'\t[WARNING {name}]: {text}', file=sys.stderr)
        else:
            self.errors.append((name, text))

    def raise_errors(self) -> None:
        if not self.errors:
            return
        lines = ''.join(f'\n\t[ERROR {n}]: {t}' for n, t in self.errors)
        raise fail('preflight', '[preflight] Some fatal errors occurred:'
                   f'{lines}\n[preflight] If you know what you are doing, '
                   'you can make a check non-fatal with '
                   '`--ignore-preflight-errors=...`')


def image_preflight(ctx: Context, pf: Preflight, version: str,
                    repository: str, control_plane: bool) -> None:
    """The images of ``version`` the node runs, looked for in its real
    containerd when the lab asks for it (``images_from_containerd``): a
    control-plane node all of kubeadm's list, a worker kube-proxy and
    pause. Real kubeadm would pull what is missing; the lab has no
    registry for it, so a missing image fails as that pull would."""
    if not ctx.config.images_from_containerd:
        return
    from kubernetes_mgmt_lab.emulated.kubeadm import image_list
    from kubernetes_mgmt_lab.emulated.node_images import images_of
    present = images_of(ctx)
    for image in image_list(version, repository):
        name = image.rsplit('/', 1)[1].split(':', 1)[0]
        if not control_plane and name not in ('kube-proxy', 'pause'):
            continue
        registry = image.split('/', 1)[0]
        pf.check(image in present, 'ImagePull',
                 f'failed to pull image {image}: rpc error: code = Unknown '
                 f'desc = failed to resolve reference "{image}": dial tcp: '
                 f'lookup {registry}: no such host')


def file_check_name(path: str) -> str:
    return 'FileAvailable-' + path.replace('/', '-')


def common_preflight(ctx: Context, pf: Preflight) -> None:
    pf.check(os.geteuid() == 0, 'IsPrivilegedUser',
             'user is not running as root')
    pf.check(units.active_state('containerd') == 'active', 'CRI',
             'container runtime is not running: output: validate service '
             'connection: CRI v1 runtime API is not implemented for '
             'endpoint "unix:///var/run/containerd/containerd.sock"')
    for tool in ('kubelet', 'crictl'):
        pkg = 'cri-tools' if tool == 'crictl' else tool
        pf.check(pkg in packages.installed(), f'FileExisting-{tool}',
                 f'{tool} not found in system path')


def write_text(path: str, text: str, mode: int = 0o600) -> None:
    real = host_path(path)
    os.makedirs(os.path.dirname(real), exist_ok=True)
    fd = os.open(real, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, 'w', encoding='utf-8') as f:
        f.write(text)


def install_pki(ctx: Context, control_plane: bool, node: str, ip: str,
                endpoint_host: str, service_subnet: str,
                sans: list[str]) -> None:
    """Copy the cluster's CAs to the node (all of them on a control
    plane, only ca.crt on a worker) and issue the node's certificates.
    """
    shared = os.path.join(ctx.cluster_dir, 'pki')
    local = host_path(PKI_DIR)
    os.makedirs(os.path.join(local, 'etcd'), exist_ok=True)
    if not control_plane:
        shutil.copyfile(os.path.join(shared, 'ca.crt'),
                        os.path.join(local, 'ca.crt'))
        return
    for name in ('ca', 'front-proxy-ca', 'etcd/ca'):
        for ext in ('crt', 'key'):
            shutil.copyfile(os.path.join(shared, f'{name}.{ext}'),
                            os.path.join(local, f'{name}.{ext}'))
    for name in ('sa.key', 'sa.pub'):
        shutil.copyfile(os.path.join(shared, name),
                        os.path.join(local, name))
    now = labclock.now(ctx)
    _issue_serving(local, node, ip, endpoint_host, service_subnet, sans,
                   now)
    _issue_etcd(local, node, ip, now)
    _issue_clients(local, now)


def _issue_clients(local: str, now) -> None:
    """The API server's client certificates for the kubelets and for
    the front proxy (aggregated APIs)."""
    for name, ca, cn, org in (
            ('apiserver-kubelet-client', 'ca', 'kube-apiserver-kubelet-'
             'client', 'kubeadm:cluster-admins'),
            ('front-proxy-client', 'front-proxy-ca', 'front-proxy-client',
             None)):
        cert, key = pki.issue(pki.read(os.path.join(local, f'{ca}.crt')),
                              pki.read(os.path.join(local, f'{ca}.key')),
                              cn, org=org, now=now)
        pki.write(os.path.join(local, f'{name}.crt'), cert)
        pki.write(os.path.join(local, f'{name}.key'), key, private=True)


def _issue_serving(local: str, node: str, ip: str, endpoint_host: str,
                   service_subnet: str, sans: list[str], now) -> None:
    first_svc = str(next(ipaddress.ip_network(
        service_subnet.split(',')[0], strict=False).hosts()))
    ips, dns = {ip, '127.0.0.1', first_svc}, {
        'kubernetes', 'kubernetes.default', 'kubernetes.default.svc',
        'kubernetes.default.svc.cluster.local', node, 'localhost'}
    for name in [endpoint_host, *sans]:
        try:
            ips.add(str(ipaddress.ip_address(name)))
        except ValueError:
            dns.add(name)
    ca_crt = pki.read(os.path.join(local, 'ca.crt'))
    ca_key = pki.read(os.path.join(local, 'ca.key'))
    cert, key = pki.issue(ca_crt, ca_key, 'kube-apiserver',
                          ips=tuple(sorted(ips)), dns=tuple(sorted(dns)),
                          now=now)
    pki.write(os.path.join(local, 'apiserver.crt'), cert)
    pki.write(os.path.join(local, 'apiserver.key'), key, private=True)


def _issue_etcd(local: str, node: str, ip: str, now) -> None:
    ca_crt = pki.read(os.path.join(local, 'etcd', 'ca.crt'))
    ca_key = pki.read(os.path.join(local, 'etcd', 'ca.key'))
    cert, key = pki.issue(ca_crt, ca_key, node, ips=(ip, '127.0.0.1'),
                          dns=(node, 'localhost'), now=now)
    for name in ('etcd/server', 'etcd/peer', 'etcd/healthcheck-client',
                 'apiserver-etcd-client'):
        pki.write(os.path.join(local, f'{name}.crt'), cert)
        pki.write(os.path.join(local, f'{name}.key'), key, private=True)


def admin_kubeconfig(ctx: Context, server: str, user: str = 'kubernetes-admin',
                     org: str = 'kubeadm:cluster-admins') -> str:
    local = host_path(PKI_DIR)
    ca_crt = pki.read(os.path.join(local, 'ca.crt'))
    ca_key = pki.read(os.path.join(ctx.cluster_dir, 'pki', 'ca.key'))
    cert, key = pki.issue(ca_crt, ca_key, user, org=org,
                          now=labclock.now(ctx))
    return kubeconfig.render(server, ca_crt, user, cert, key)


def write_node_files(ctx: Context, node: str, server: str,
                     control_plane: bool, kubelet_config: dict | None,
                     version: str) -> None:
    user = f'system:node:{node}'
    write_text(f'{K8S_DIR}/kubelet.conf',
               admin_kubeconfig(ctx, server, user, 'system:nodes'))
    config = dict(kubelet_config or {})
    config.setdefault('apiVersion', 'kubelet.config.k8s.io/v1beta1')
    config.setdefault('kind', 'KubeletConfiguration')
    config.setdefault('cgroupDriver', 'systemd')
    write_text(f'{KUBELET_DIR}/config.yaml',
               yamlio.dump(config, sort_keys=False), 0o644)
    write_text(f'{KUBELET_DIR}/kubeadm-flags.env',
               'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint='
               'unix:///var/run/containerd/containerd.sock"\n', 0o644)
    if not control_plane:
        return
    for conf in ('admin.conf', 'controller-manager.conf',
                 'scheduler.conf'):
        write_text(f'{K8S_DIR}/{conf}', admin_kubeconfig(ctx, server))
    for comp in COMPONENTS:
        write_text(f'{MANIFESTS}/{comp}.yaml', yamlio.dump({
            'apiVersion': 'v1', 'kind': 'Pod',
            'metadata': {'name': comp, 'namespace': 'kube-system'},
            'spec': {'hostNetwork': True, 'containers': [
                {'name': comp, 'image': f'registry.k8s.io/{comp}:'
                 f'{version}'}]}}), 0o600)
    os.makedirs(host_path(ETCD_DIR), exist_ok=True)


def start_apiserver(ctx: Context, address: str, port: int,
                    version: str) -> None:
    # Imported here: the HTTP server and TLS are for control-plane nodes.
    from kubernetes_mgmt_lab.emulated import apiserver
    try:
        apiserver.start(sys.executable, address, port, host_path(PKI_DIR),
                        host_path(APISERVER_PID), host_path(APISERVER_LOG),
                        ctx.cluster_dir, version)
    except RuntimeError as e:
        raise fail('wait-control-plane', str(e)) from None


def start_etcd(ctx: Context, argv: list[str], phase: str = 'etcd/local',
               wait_healthy: bool = True) -> None:
    """Write the etcd manifest and run it, as the kubelet would."""
    from kubernetes_mgmt_lab.emulated import etcd_server
    etcd_server.write_manifest(argv)
    ctx.out('[etcd] Creating static Pod manifest for local etcd in '
            f'"{MANIFESTS}"')
    try:
        etcd_server.start(ctx.cluster_dir, ctx.host.name, wait_healthy)
    except etcd_server.EtcdStartError as e:
        raise fail(phase, str(e)) from None


def stop_apiserver() -> None:
    from kubernetes_mgmt_lab.emulated import apiserver
    apiserver.stop(host_path(APISERVER_PID))


def ca_pem(ctx: Context) -> bytes:
    return pki.read(os.path.join(ctx.cluster_dir, 'pki', 'ca.crt'))


def require_admin(ctx: Context, path: str | None) -> kubeconfig.Kubeconfig:
    """kubeadm token/upload-certs talk to the API with admin.conf."""
    path = path or f'{K8S_DIR}/admin.conf'
    try:
        config = kubeconfig.load(path)
    except OSError as e:
        raise CommandError(f'failed to load admin kubeconfig: open {path}: '
                           f'{e.strerror.lower()}\n{STACK_HINT}') from None
    host, port = config.host_port()
    why = kubeconfig.reachable(host, port, tls=True)
    if why is not None:
        raise CommandError(f'failed to create API client: Get "https://'
                           f'{host}:{port}/api": '
                           f'{dial_error(host, port, why)}\n{STACK_HINT}')
    return config


def dial_error(host: str, port: int, why: str) -> str:
    """Go's wording for a failed connection."""
    if why == 'EOF':
        return 'EOF'
    if why == 'timeout':
        return f'dial tcp {host}:{port}: i/o timeout'
    return f'dial tcp {host}:{port}: connect: connection {why}'


def wait_reachable(host: str, port: int, timeout: float) -> str | None:
    """Poll a TCP endpoint until it accepts or ``timeout`` passes; None
    on success, else why it failed."""
    why: list[str | None] = [None]

    def reachable() -> bool:
        why[0] = kubeconfig.reachable(host, port, 2.0, tls=True)
        return why[0] is None

    wait_until(reachable, deadline=timeout, first=0.1, ceiling=1.0)
    return why[0]

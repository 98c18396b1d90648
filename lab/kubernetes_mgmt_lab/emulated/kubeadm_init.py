"""``kubeadm init``: the first control-plane node of a new cluster."""
from __future__ import annotations

import os
import random
import shutil
import time

from kubernetes_mgmt_lab import pki
from kubernetes_mgmt_lab.emulated import (
    cluster,
    etcd_server,
    kubeadm_clusterconfig,
    kubeconfig,
    labclock,
    objects,
    packages,
    store,
    tokens,
    units,
)
from kubernetes_mgmt_lab.emulated import kubeadm_cli as kcli
from kubernetes_mgmt_lab.emulated import kubeadm_common as common
from kubernetes_mgmt_lab.emulated import kubeadm_config as kconf
from kubernetes_mgmt_lab.emulated.flags import Parsed
from kubernetes_mgmt_lab.emulated.host import host_path
from kubernetes_mgmt_lab.emulated.runner import (
    CommandError,
    Context,
    checkpoint,
)

# Flags kubeadm accepts next to --config.
MIXABLE = {'config', 'ignore-preflight-errors', 'upload-certs',
           'skip-phases', 'skip-token-print', 'skip-certificate-key-print',
           'certificate-key', 'patches', 'dry-run', 'v', 'kubeconfig'}
# What kubeadm prints instead of a secret it was told not to print.
WITHHELD = '<value withheld>'
DNS_TOLERATIONS = [
    {'key': 'CriticalAddonsOnly', 'operator': 'Exists'},
    {'key': objects.CONTROL_PLANE_LABEL, 'effect': 'NoSchedule'}]


def _csv(values: list[str]) -> list[str]:
    return [v.strip() for item in values for v in item.split(',')
            if v.strip()]


def settings_from(ctx: Context, opts: Parsed) -> kconf.InitSettings:
    s = kconf.InitSettings()
    if opts.has('config'):
        mixed = sorted(set(opts.values) - MIXABLE)
        if mixed:
            raise CommandError(f"can not mix '--config' with arguments "
                               f'{mixed}\n{kcli.STACK_HINT}')
        kconf.apply_init_docs(s, kconf.load_docs(opts.get('config')))
    else:
        s.pod_subnet = opts.get('pod-network-cidr')
        s.service_subnet = opts.get('service-cidr') or s.service_subnet
        s.control_plane_endpoint = opts.get('control-plane-endpoint')
        s.advertise_address = opts.get('apiserver-advertise-address')
        s.bind_port = int(opts.get('apiserver-bind-port') or 6443)
        s.node_name = opts.get('node-name')
        s.kubernetes_version = opts.get('kubernetes-version')
        s.token = opts.get('token')
        if opts.has('token-ttl'):
            s.token_ttl = tokens.parse_duration(opts.get('token-ttl'))
        s.cert_sans = _csv([opts.get('apiserver-cert-extra-sans') or ''])
        s.image_repository = opts.get('image-repository') or \
            s.image_repository
        kconf.check_init_flags(s)
    s.upload_certs = bool(opts.get('upload-certs'))
    s.skip_token_print = bool(opts.get('skip-token-print'))
    s.skip_certificate_key_print = bool(
        opts.get('skip-certificate-key-print'))
    s.certificate_key = opts.get('certificate-key') or s.certificate_key
    s.ignore_preflight |= set(_csv(opts.list('ignore-preflight-errors')))
    s.skip_phases += _csv(opts.list('skip-phases'))
    s.node_name = s.node_name or ctx.host.name
    s.advertise_address = s.advertise_address or ctx.host.ip
    return s


def _preflight(ctx: Context, s: kconf.InitSettings, version: str) -> None:
    pf = common.Preflight(s.ignore_preflight)
    common.common_preflight(ctx, pf)
    for comp in common.COMPONENTS:
        path = f'{common.MANIFESTS}/{comp}.yaml'
        pf.check(not os.path.exists(host_path(path)),
                 common.file_check_name(path), f'{path} already exists')
    pf.check(kubeconfig.reachable(s.advertise_address, s.bind_port, 1)
             is not None, f'Port-{s.bind_port}',
             f'Port {s.bind_port} is in use')
    kubelet = packages.kube_version('kubelet', ctx.config.kubernetes_version)
    pf.check(kcli.version_tuple(kubelet)[:2] <=
             kcli.version_tuple(version)[:2], 'KubeletVersion',
             f'the kubelet version is higher than the control plane '
             f'version. This is not a supported version skew and may lead '
             f'to a malfunctional cluster. Kubelet version: "{kubelet}" '
             f'Control plane version: "{version}"')
    common.image_preflight(ctx, pf, version, s.image_repository, True)
    pf.raise_errors()


def _live_control_plane(state: dict) -> str | None:
    """A control-plane host of the current cluster still serving."""
    if not state['cluster'].get('initialized'):
        return None
    for host, rec in state.get('hosts', {}).items():
        api = rec.get('apiserver')
        if api and kubeconfig.reachable(api['address'], api['port'],
                                        1.0) is None:
            return host
    return None


def _refuse_second_cluster(ctx: Context) -> None:
    live = _live_control_plane(store.read(ctx.cluster_dir))
    if live:
        raise kcli.fail(
            'preflight', f'a cluster is already initialized in this lab '
            f'(control plane on {live} is serving); join this node with '
            '"kubeadm join" instead of a second "kubeadm init"')


def _forget_previous_cluster(ctx: Context) -> None:
    """A new cluster starts from nothing: the previous one's objects and
    etcd bookkeeping go before this node's new etcd starts. Left until
    ``_new_cluster_state``, every state save in between (the kubelet
    restarted, another host's command) would mirror the old cluster's
    objects into the new etcd against the old marker, and init's own
    write would then find a marker it did not expect and take that old
    content back instead of the new cluster's."""
    with store.exclusive(ctx.cluster_dir, mirrored=False) as (state, save):
        state['cluster'] = {'initialized': False}
        state['objects'] = {}
        state['timers'] = {}
        state['etcd_mirror'] = {}
        state['node_hosts'] = {}
        for rec in state.get('hosts', {}).values():
            rec.pop('apiserver', None)
            rec.pop('etcd', None)
        save()


def _endpoint(s: kconf.InitSettings) -> str:
    return s.control_plane_endpoint or \
        f'{s.advertise_address}:{s.bind_port}'


def _new_cluster_state(state: dict, s: kconf.InitSettings, version: str,
                       ca: bytes, host: str) -> None:
    state['generation'] = state.get('generation', 0) + 1
    state['objects'] = {}
    state['etcd_mirror'] = {}       # a new etcd holds none of the old
    state['node_hosts'] = {}
    for name, rec in state.get('hosts', {}).items():
        rec.pop('apiserver', None)
        if name != host:
            rec.pop('etcd', None)   # members of a cluster gone before
    state['cluster'] = {
        'initialized': True, 'init_host': host,
        'control_plane_endpoint': s.control_plane_endpoint,
        'endpoint': _endpoint(s), 'pod_subnet': s.pod_subnet,
        'service_subnet': s.service_subnet, 'kubernetes_version': version,
        'cluster_name': s.cluster_name, 'ca_hash': pki.ca_hash(ca),
        # kubeadm keeps it in the kubeadm-config ConfigMap.
        'image_repository': s.image_repository,
        'ca_pem': ca.decode(), 'cni': None, 'tokens': [],
        'etcd_cluster_id': random.getrandbits(64), 'created': time.time()}
    for name in ('default', 'kube-system', 'kube-public',
                 'kube-node-lease'):
        cluster.put(state, objects.namespace(name))
    for obj in objects.bootstrap_rbac():
        cluster.put(state, obj)


def _addons(state: dict, s: kconf.InitSettings, version: str,
            demo: int) -> None:
    skipped = set(s.skip_phases)
    if not skipped & {'addon', 'addon/all', 'addon/kube-proxy'}:
        cluster.put(state, objects.workload(
            'DaemonSet', 'kube-proxy', 'kube-system',
            f'registry.k8s.io/kube-proxy:{version}',
            {'k8s-app': 'kube-proxy'}, host_network=True,
            tolerations=[{'operator': 'Exists'}]))
    if not skipped & {'addon', 'addon/all', 'addon/coredns'}:
        cluster.put(state, objects.workload(
            'Deployment', 'coredns', 'kube-system',
            'registry.k8s.io/coredns/coredns:v1.11.3',
            {'k8s-app': 'kube-dns'}, replicas=2,
            tolerations=DNS_TOLERATIONS))
    if demo > 0:
        cluster.put(state, objects.workload(
            'Deployment', 'klab-demo', 'default',
            'registry.k8s.io/pause:3.10', {'app': 'klab-demo'},
            replicas=demo))


def register_control_plane(state: dict, ctx: Context, name: str,
                           address: str, port: int, version: str,
                           taints: list | None) -> None:
    """Node object and API server record of a master."""
    node = cluster.add_node(state, name, ctx.host.name, address, version,
                            control_plane=True)
    if taints is not None:
        node['spec']['taints'] = list(taints)
    rec = cluster.host_record(state, ctx.host.name)
    # The control plane runs the cluster's version (an upgrade moves it).
    rec['apiserver'] = {'address': address, 'port': port,
                        'version': state['cluster']['kubernetes_version']}
    rec['kubelet'] = True


def _print_joins(ctx: Context, s: kconf.InitSettings, token: str,
                 ca_hash: str, cert_key: str | None) -> None:
    # kubeadm's --skip-token-print / --skip-certificate-key-print.
    if s.skip_token_print:
        token = WITHHELD
    if cert_key and s.skip_certificate_key_print:
        cert_key = WITHHELD
    base = (f'kubeadm join {_endpoint(s)} --token {token} \\\n'
            f'\t--discovery-token-ca-cert-hash {ca_hash}')
    ctx.out('\nYour Kubernetes control-plane has initialized '
            'successfully!\n\nTo start using your cluster, you need to run '
            'the following as a regular user:\n\n  mkdir -p $HOME/.kube\n'
            '  sudo cp -i /etc/kubernetes/admin.conf $HOME/.kube/config\n'
            '  sudo chown $(id -u):$(id -g) $HOME/.kube/config\n')
    if s.control_plane_endpoint:
        extra = f' \\\n\t--control-plane --certificate-key {cert_key}' \
            if cert_key else ' \\\n\t--control-plane'
        ctx.out('You can now join any number of control-plane nodes by '
                'running the following command on each as root:\n\n  '
                + base + extra + '\n')
    ctx.out('Then you can join any number of worker nodes by running the '
            'following on each as root:\n\n' + base + '\n')


def _wait_endpoint(ctx: Context, s: kconf.InitSettings) -> None:
    """kubeadm uploads its configuration through the endpoint: a load
    balancer (HAProxy, VIP) must already forward to this node."""
    host, port = kconf.split_endpoint(_endpoint(s))
    why = common.wait_reachable(host, port, ctx.config.join_timeout)
    if why is not None:
        raise kcli.fail(
            'upload-config/kubeadm', 'error uploading the kubeadm '
            f'ClusterConfiguration: Post "https://{host}:{port}/api/v1/'
            f'namespaces/kube-system/configmaps?timeout=10s": '
            f'{common.dial_error(host, port, why)}')


def run_init(ctx: Context, opts: Parsed) -> int:
    s = settings_from(ctx, opts)
    version = kcli.resolve_k8s_version(ctx, s.kubernetes_version)
    ctx.out(f'[init] Using Kubernetes version: {version}')
    ctx.out('[preflight] Running pre-flight checks')
    _preflight(ctx, s, version)
    _refuse_second_cluster(ctx)
    _forget_previous_cluster(ctx)
    shared = os.path.join(ctx.cluster_dir, 'pki')
    shutil.rmtree(shared, ignore_errors=True)
    pki.create_cluster_pki(shared, now=labclock.now(ctx))
    endpoint_host, _ = kconf.split_endpoint(_endpoint(s))
    common.install_pki(ctx, True, s.node_name, s.advertise_address,
                       endpoint_host, s.service_subnet, s.cert_sans)
    ctx.out('[certs] Using certificateDir folder "/etc/kubernetes/pki"')
    server = f'https://{_endpoint(s)}'
    common.write_node_files(ctx, s.node_name, server, True,
                            s.kubelet_config, version)
    common.write_text(f'{common.K8S_DIR}/super-admin.conf',
                      common.admin_kubeconfig(ctx, server))
    ctx.out('[kubeconfig] Writing "admin.conf" kubeconfig file')
    checkpoint(ctx, 'kubeconfig')
    etcd_server.issue_lab_client(shared)
    common.start_etcd(ctx, etcd_server.command(
        s.node_name, s.advertise_address,
        {s.node_name: etcd_server.peer_url(s.advertise_address)},
        existing=False))
    common.start_apiserver(ctx, s.advertise_address, s.bind_port, version)
    units.set_active(ctx, 'kubelet', True, restarted=True)
    _wait_endpoint(ctx, s)
    ca = common.ca_pem(ctx)
    kubelet = packages.kube_version('kubelet', ctx.config.kubernetes_version)
    with store.mutate(ctx.cluster_dir) as state:
        _new_cluster_state(state, s, version, ca, ctx.host.name)
        register_control_plane(state, ctx, s.node_name, s.advertise_address,
                               s.bind_port, kubelet, s.taints)
        token = tokens.add_token(state['cluster'], s.token, s.token_ttl)
        cert_key = tokens.set_certificate_key(
            state['cluster'], s.certificate_key) if s.upload_certs else None
        _addons(state, s, version, ctx.config.demo_replicas)
        kubeadm_clusterconfig.put(state)
        cluster.reconcile(state)
    if cert_key:
        ctx.out('[upload-certs] Storing the certificates in Secret '
                '"kubeadm-certs" in the "kube-system" Namespace')
        if not s.skip_certificate_key_print:
            ctx.out(f'[upload-certs] Using certificate key:\n{cert_key}')
    _print_joins(ctx, s, token, pki.ca_hash(ca), cert_key)
    return 0

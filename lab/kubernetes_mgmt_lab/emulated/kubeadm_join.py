"""``kubeadm join``: a worker or another control-plane node."""
from __future__ import annotations

import os

from kubernetes_mgmt_lab.emulated import (
    cluster,
    kubeadm_etcd,
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
from kubernetes_mgmt_lab.emulated.kubeadm_init import register_control_plane
from kubernetes_mgmt_lab.emulated.runner import (
    CommandError,
    Context,
    checkpoint,
)

MIXABLE = {'config', 'ignore-preflight-errors', 'skip-phases', 'dry-run',
           'patches', 'v', 'node-name'}
IDENTITY = "couldn't validate the identity of the API Server"


def settings_from(ctx: Context, opts: Parsed) -> kconf.JoinSettings:
    s = kconf.JoinSettings()
    if opts.has('config'):
        mixed = sorted(set(opts.values) - MIXABLE)
        if mixed or opts.args:
            raise CommandError(f"can not mix '--config' with arguments "
                               f'{mixed or opts.args}\n{kcli.STACK_HINT}')
        kconf.apply_join_docs(s, kconf.load_docs(opts.get('config')))
    else:
        if len(opts.args) != 1:
            raise CommandError('[discovery] either --discovery-token or '
                               '--discovery-file must be set with an API '
                               f'server endpoint\n{kcli.STACK_HINT}')
        s.endpoint = opts.args[0]
        s.token = opts.get('discovery-token') or opts.get('token') or ''
        s.ca_hashes = opts.list('discovery-token-ca-cert-hash')
        s.unsafe_skip_ca = bool(
            opts.get('discovery-token-unsafe-skip-ca-verification'))
        s.control_plane = bool(opts.get('control-plane'))
        s.certificate_key = opts.get('certificate-key')
        s.advertise_address = opts.get('apiserver-advertise-address')
        s.bind_port = int(opts.get('apiserver-bind-port') or 6443)
    s.node_name = opts.get('node-name') or s.node_name or ctx.host.name
    s.advertise_address = s.advertise_address or ctx.host.ip
    for item in opts.list('ignore-preflight-errors'):
        s.ignore_preflight |= {i for i in item.split(',') if i}
    if not s.token:
        raise CommandError('discovery: Invalid value: "": using token-based'
                           ' discovery without caCertHashes can be unsafe.'
                           f'\n{kcli.STACK_HINT}')
    if not s.ca_hashes and not s.unsafe_skip_ca:
        raise CommandError(
            'discovery.bootstrapToken: Invalid value: "": using '
            'token-based discovery without caCertHashes can be unsafe. Set '
            'unsafeSkipCAVerification as true in your kubeadm config file '
            'or pass --discovery-token-unsafe-skip-ca-verification flag to '
            f'continue\n{kcli.STACK_HINT}')
    return s


def _preflight(ctx: Context, s: kconf.JoinSettings) -> None:
    pf = common.Preflight(s.ignore_preflight)
    common.common_preflight(ctx, pf)
    for path in (f'{common.K8S_DIR}/kubelet.conf',
                 f'{common.PKI_DIR}/ca.crt'):
        pf.check(not os.path.exists(host_path(path)),
                 common.file_check_name(path), f'{path} already exists')
    if s.control_plane:
        for comp in common.COMPONENTS:
            path = f'{common.MANIFESTS}/{comp}.yaml'
            pf.check(not os.path.exists(host_path(path)),
                     common.file_check_name(path), f'{path} already exists')
    pf.raise_errors()


def _discover(ctx: Context, endpoint: str) -> None:
    """Really reach the endpoint (HAProxy, VIP, ...), retrying until the
    lab's join timeout like kubeadm's discovery does."""
    host, port = kconf.split_endpoint(endpoint)
    why = common.wait_reachable(host, port, ctx.config.join_timeout)
    if why is not None:
        raise kcli.fail(
            'preflight', f'{IDENTITY}: Get "https://{host}:{port}/api/'
            'v1/namespaces/kube-public/configmaps/cluster-info?timeout='
            f'10s": {common.dial_error(host, port, why)}')


def _validate(ctx: Context, s: kconf.JoinSettings, state: dict) -> None:
    info = state['cluster']
    if not info.get('initialized') or not tokens.token_valid(info, s.token):
        token_id = s.token.split('.')[0]
        raise kcli.fail('preflight', f'{IDENTITY}: could not find a JWS '
                          'signature in the cluster-info ConfigMap for '
                          f'token ID "{token_id}"')
    if not s.unsafe_skip_ca and info['ca_hash'] not in s.ca_hashes:
        raise kcli.fail('preflight', f'{IDENTITY}: cluster CA found in '
                          'cluster-info ConfigMap is invalid: none of the '
                          f'public keys "{info["ca_hash"]}" are pinned')
    node = cluster.find(state, 'Node', s.node_name)
    if node is not None and cluster.is_ready(node):
        raise kcli.fail('kubelet-start', f'a Node with name '
                          f'"{s.node_name}" and status "Ready" already '
                          'exists in the cluster. You must delete the '
                          'existing Node or change the name of this new '
                          'joining Node')
    if s.control_plane:
        _validate_control_plane(ctx, s, state)


def _validate_control_plane(ctx: Context, s: kconf.JoinSettings,
                            state: dict) -> None:
    if not state['cluster'].get('control_plane_endpoint'):
        raise kcli.fail(
            'preflight', '\nOne or more conditions for hosting a new '
            'control plane instance is not satisfied.\n\nunable to add a '
            "new control plane instance to a cluster that doesn't have a "
            'stable controlPlaneEndpoint address')
    if not s.certificate_key:
        if not os.path.exists(host_path(f'{common.PKI_DIR}/ca.key')):
            raise kcli.fail(
                'preflight', '\nOne or more conditions for hosting a new '
                'control plane instance is not satisfied.\n\n[failure '
                "loading certificate for CA: couldn't load the certificate "
                'file /etc/kubernetes/pki/ca.crt: open /etc/kubernetes/pki/'
                'ca.crt: no such file or directory]')
    else:
        _check_certificate_key(state, s.certificate_key)
    if kubeadm_etcd.peer_taken(ctx.cluster_dir, s.advertise_address):
        raise kcli.fail('control-plane-join/etcd', 'error creating local '
                          'etcd static pod manifest file: etcdserver: Peer '
                          'URLs already exists')


def _check_certificate_key(state: dict, key: str) -> None:
    verdict = tokens.certificate_key_state(state['cluster'], key)
    if verdict == 'expired':
        raise kcli.fail(
            'control-plane-prepare/download-certs', 'error downloading '
            'certs: error downloading the secret: Secret "kubeadm-certs" '
            'was not found in the "kube-system" Namespace. This Secret '
            'might have expired. Please, run `kubeadm init phase '
            'upload-certs --upload-certs` on a control plane to generate '
            'a new one')
    if verdict == 'wrong':
        raise kcli.fail(
            'control-plane-prepare/download-certs', 'error downloading '
            'certs: error decoding certificate key: cipher: message '
            'authentication failed')


def run_join(ctx: Context, opts: Parsed) -> int:
    s = settings_from(ctx, opts)
    ctx.out('[preflight] Running pre-flight checks')
    _preflight(ctx, s)
    _discover(ctx, s.endpoint)
    state = store.read(ctx.cluster_dir)
    _validate(ctx, s, state)
    info = state['cluster']
    version = info['kubernetes_version']
    images = common.Preflight(s.ignore_preflight)
    common.image_preflight(ctx, images, version,
                           info.get('image_repository') or 'registry.k8s.io',
                           s.control_plane)
    images.raise_errors()
    kubelet = packages.kube_version('kubelet', ctx.config.kubernetes_version)
    if kcli.version_tuple(kubelet)[:2] > kcli.version_tuple(version)[:2]:
        raise kcli.fail('preflight', '[preflight] Some fatal errors '
                          'occurred:\n\t[ERROR KubeletVersion]: the kubelet '
                          'version is higher than the control plane version')
    server = f'https://{info["endpoint"]}'
    endpoint_host, _ = kconf.split_endpoint(info['endpoint'])
    common.install_pki(ctx, s.control_plane, s.node_name,
                       s.advertise_address, endpoint_host,
                       info['service_subnet'], [])
    common.write_node_files(ctx, s.node_name, server, s.control_plane, None,
                            version)
    checkpoint(ctx, 'kubelet-start')
    if s.control_plane:
        kubeadm_etcd.join(ctx, s.node_name, s.advertise_address)
        common.start_apiserver(ctx, s.advertise_address, s.bind_port,
                               version)
    units.set_active(ctx, 'kubelet', True, restarted=True)
    with store.mutate(ctx.cluster_dir) as state:
        if s.control_plane:
            register_control_plane(state, ctx, s.node_name,
                                   s.advertise_address, s.bind_port,
                                   kubelet, s.taints)
        else:
            cluster.add_node(state, s.node_name, ctx.host.name,
                             s.advertise_address, kubelet, False)
            cluster.host_record(state, ctx.host.name)['kubelet'] = True
        cluster.reconcile(state)
    what = 'control-plane node' if s.control_plane else 'node'
    ctx.out(f'\nThis {what} has joined the cluster:\n* Certificate signing '
            'request was sent to apiserver and a response was received.\n'
            "* The Kubelet was informed of the new secure connection "
            "details.\n\nRun 'kubectl get nodes' on the control-plane to "
            'see this node join the cluster.')
    return 0

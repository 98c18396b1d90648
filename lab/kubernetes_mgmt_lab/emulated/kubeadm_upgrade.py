"""``kubeadm upgrade plan``, ``apply`` and ``node``: kubeadm's version
skew policy and wording, static pods moved to the new version one
component at a time and put back as they were if the upgrade fails
half-way (as kubeadm rolls back its static pods), the control-plane
certificates renewed (unless --certificate-renewal=false), the cluster's
kubernetesVersion recorded, and every step in the change log
(``recorder``). The kubelet is not touched: its package and a restart
make its node report the new version (``units``)."""
from __future__ import annotations

import os
import shutil
import sys
import time

from kubernetes_mgmt_lab.emulated import (
    cluster,
    kubeadm_certs,
    kubeadm_clusterconfig,
    recorder,
    store,
    yamlio,
)
from kubernetes_mgmt_lab.emulated import kubeadm_cli as kcli
from kubernetes_mgmt_lab.emulated import kubeadm_common as common
from kubernetes_mgmt_lab.emulated.flags import Parsed
from kubernetes_mgmt_lab.emulated.host import host_path
from kubernetes_mgmt_lab.emulated.runner import (
    CommandError,
    Context,
    checkpoint,
)

# kubeadm's skew policy (phases/upgrade/policy.go).
MAX_UPGRADE_SKEW = 1
MAX_DOWNGRADE_SKEW = 1
MAX_KUBELET_SKEW = 3
READ_CONFIG = ('[upgrade] Reading configuration from the "kubeadm-config" '
               'ConfigMap in namespace "kube-system"...\n[upgrade] Use '
               "'kubeadm init phase upload-config --config your-config-file'"
               ' to re-upload it.')
PREPULL = ('[upgrade/preflight] Pulling images required for setting up a '
           'Kubernetes cluster\n[upgrade/preflight] This might take a '
           'minute or two, depending on the speed of your internet '
           "connection\n[upgrade/preflight] You can also perform this "
           "action beforehand using 'kubeadm config images pull'")
ROLLED_BACK = ("couldn't complete the static pod upgrade: couldn't upgrade "
               'control plane. kubeadm has tried to recover everything '
               'into the earlier state. Errors faced: ')
BACKUP_DIR = '/etc/kubernetes/tmp'


# ---- versions -------------------------------------------------------------

def _normalize(text: str) -> str:
    version = text if text.startswith('v') else f'v{text}'
    parts = version[1:].split('-')[0].split('.')
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise kcli.fail('preflight', f'unable to parse normalized version '
                        f'"{version}" as a semantic version')
    return version


def _minor(version: str) -> int:
    return kcli.version_tuple(version)[1]


def skew_errors(new: str, cluster_version: str, kubeadm: str,
                kubelets: list[str]) -> tuple[list[str], list[str]]:
    """(mandatory, skippable) errors of kubeadm's version skew policy for
    an upgrade of a ``cluster_version`` cluster to ``new`` by a kubeadm
    of version ``kubeadm``."""
    mandatory, skippable = [], []
    nv, cv, kv = (kcli.version_tuple(v) for v in (new, cluster_version,
                                                   kubeadm))
    if nv[1] > cv[1] + MAX_UPGRADE_SKEW:
        mandatory.append(f'Specified version to upgrade to "{new}" is too '
                         'high; kubeadm can upgrade only '
                         f'{MAX_UPGRADE_SKEW} minor version at a time')
    if nv[1] < cv[1] - MAX_DOWNGRADE_SKEW:
        mandatory.append(f'Specified version to downgrade to "{new}" is too '
                         'low; kubeadm can downgrade only '
                         f'{MAX_DOWNGRADE_SKEW} minor version at a time')
    if kv < nv:
        if nv[1] > kv[1]:
            mandatory.append(
                f'Specified version to upgrade to "{new}" is at least one '
                'minor release higher than the kubeadm minor release '
                f'({nv[1]} > {kv[1]}). Such an upgrade is not supported')
        else:
            skippable.append(
                f'Specified version to upgrade to "{new}" is higher than '
                f'the kubeadm version "{kubeadm}". Upgrade kubeadm first '
                'using the tool you used to install kubeadm')
    if kv[0] > nv[0] or kv[1] > nv[1]:
        skippable.append(f'Kubeadm version {kubeadm} can only be used to '
                         f'upgrade to Kubernetes version {kv[0]}.{kv[1]}')
    old = sorted({k for k in kubelets
                  if nv[1] > _minor(k) + MAX_KUBELET_SKEW})
    if old:
        skippable.append('There are kubelets in this cluster that are too '
                         f'old that have these versions [{" ".join(old)}]')
    return mandatory, skippable


def _format(errors: list[str]) -> str:
    return ''.join(f'\t- {e}\n' for e in errors)


def _enforce(ctx: Context, new: str, cluster_version: str, force: bool,
             kubelets: list[str]) -> None:
    kubeadm = kcli.kubeadm_version(ctx)
    ctx.out('[upgrade/preflight] You have chosen to upgrade the cluster '
            f'version to "{new}"')
    ctx.out(f'[upgrade/versions] Cluster version: {cluster_version}')
    ctx.out(f'[upgrade/versions] kubeadm version: {kubeadm}')
    mandatory, skippable = skew_errors(new, cluster_version, kubeadm,
                                       kubelets)
    if mandatory:
        raise kcli.fail('preflight', 'the version argument is invalid due '
                        f'to these fatal errors:\n\n{_format(mandatory)}\n'
                        'Please fix the misalignments highlighted above and '
                        'try upgrading again')
    if skippable and not force:
        raise kcli.fail('preflight', 'the version argument is invalid due '
                        f'to these errors:\n\n{_format(skippable)}\nCan be '
                        'bypassed if you pass the --force flag')
    if skippable:
        ctx.out(f'[upgrade/preflight] Found {len(skippable)} potential '
                'version compatibility errors but skipping since the '
                f'--force flag is set: \n\n{_format(skippable)}')


# ---- the cluster and this node --------------------------------------------

def _manifest(component: str) -> str:
    return f'{common.MANIFESTS}/{component}.yaml'


def is_control_plane() -> bool:
    return os.path.exists(host_path(_manifest('kube-apiserver')))


def node_version() -> str | None:
    """The version this node's kube-apiserver static pod runs."""
    try:
        with open(host_path(_manifest('kube-apiserver')),
                  encoding='utf-8') as f:
            pod = yamlio.load(f)
        image = pod['spec']['containers'][0]['image']
    except (OSError, KeyError, IndexError, TypeError):
        return None
    return image.rpartition(':')[2]


def _kubelet_versions(state: dict) -> list[str]:
    return [n['status'].get('nodeInfo', {}).get('kubeletVersion', '')
            for n in cluster.objects_of(state, 'Node')]


def _control_plane_hosts(state: dict) -> dict[str, dict]:
    return {host: rec for host, rec in state.get('hosts', {}).items()
            if rec.get('apiserver')}


def _not_ready_masters(state: dict) -> list[str]:
    return sorted(n['metadata']['name']
                  for n in cluster.objects_of(state, 'Node')
                  if 'node-role.kubernetes.io/control-plane' in
                  n['metadata'].get('labels', {}) and not
                  cluster.is_ready(n))


def _health(ctx: Context, state: dict, ignore: set[str]) -> None:
    ctx.out('[upgrade] Running cluster health checks')
    pf = common.Preflight(ignore)
    down = _not_ready_masters(state)
    pf.check(not down, 'ControlPlaneNodesReady', 'there are NotReady '
             f'control-planes in the cluster: [{" ".join(down)}]')
    pf.raise_errors()


def _require_root(ignore: set[str]) -> None:
    pf = common.Preflight(ignore)
    pf.check(os.geteuid() == 0, 'IsPrivilegedUser',
             'user is not running as root')
    pf.raise_errors()


def _ignored(opts: Parsed) -> set[str]:
    return {i for item in opts.list('ignore-preflight-errors')
            for i in item.split(',') if i}


# ---- static pods ----------------------------------------------------------

def _image(component: str, version: str) -> str:
    if component == 'etcd':
        # The lab runs one etcd (Debian's) for every minor, under one
        # image: its manifest is equal at each target and skipped, as
        # kubeadm skips an etcd whose version does not change.
        from kubernetes_mgmt_lab.emulated import etcd_server
        return etcd_server.IMAGE
    return f'registry.k8s.io/{component}:{version}'


def _write_manifest(component: str, version: str) -> None:
    path = host_path(_manifest(component))
    with open(path, encoding='utf-8') as f:
        pod = yamlio.load(f)
    pod['spec']['containers'][0]['image'] = _image(component, version)
    common.write_text(_manifest(component), yamlio.dump(pod), 0o600)


def _backup_manifests() -> str:
    stamp = time.strftime('%Y-%m-%d-%H-%M-%S')
    backup = f'{BACKUP_DIR}/kubeadm-backup-manifests-{stamp}'
    os.makedirs(host_path(backup), exist_ok=True)
    for comp in common.COMPONENTS:
        shutil.copy2(host_path(_manifest(comp)),
                     host_path(f'{backup}/{comp}.yaml'))
    return backup


def _restore_manifests(backup: str) -> None:
    """Put back the manifests the upgrade changed; an unchanged one is
    left alone, so its pod (etcd, say) is not restarted."""
    for comp in common.COMPONENTS:
        saved, current = host_path(f'{backup}/{comp}.yaml'), \
            host_path(_manifest(comp))
        if not _same_file(saved, current):
            shutil.copy2(saved, current)


def _same_file(a: str, b: str) -> bool:
    try:
        with open(a, 'rb') as fa, open(b, 'rb') as fb:
            return fa.read() == fb.read()
    except FileNotFoundError:
        return False


def _apiserver_endpoint(ctx: Context) -> tuple[str, int]:
    rec = store.read(ctx.cluster_dir).get('hosts', {}).get(
        ctx.host.name, {}).get('apiserver') or {}
    return rec.get('address') or ctx.host.ip, int(rec.get('port') or 6443)


def _record_node(ctx: Context, version: str) -> None:
    """This master's mirror pods in the API show the new images."""
    with store.mutate(ctx.cluster_dir) as state:
        rec = cluster.host_record(state, ctx.host.name)
        if rec.get('apiserver'):
            rec['apiserver']['version'] = version
        names = {n for n, h in state.get('node_hosts', {}).items()
                 if h == ctx.host.name}
        for pod in list(cluster.objects_of(state, 'Pod')):
            comp = pod['metadata'].get('labels', {}).get('component')
            if pod['spec'].get('nodeName') in names and \
                    comp in common.COMPONENTS:
                pod['spec']['containers'][0]['image'] = _image(comp,
                                                               version)
                cluster.put(state, pod)


def _current_image(component: str) -> str | None:
    try:
        with open(host_path(_manifest(component)), encoding='utf-8') as f:
            return yamlio.load(f)['spec']['containers'][0]['image']
    except (OSError, KeyError, IndexError, TypeError):
        return None


def upgrade_static_pods(ctx: Context, old: str, new: str,
                        renew: bool) -> None:
    """Move this master's control plane from ``old`` to ``new``, one
    component at a time (one already there is left alone, as kubeadm
    skips equal manifests: a retry finishes what a run began); on any
    failure put every manifest and the API server back on ``old`` and
    fail as kubeadm does."""
    changing = [c for c in common.COMPONENTS
                if _current_image(c) != _image(c, new)]
    for comp in common.COMPONENTS:
        if comp not in changing:
            ctx.out(f'[upgrade/staticpods] Current and new manifests of '
                    f'{comp} are equal, skipping upgrade')
    if not changing:
        _record_node(ctx, new)
        return
    backup = _backup_manifests()
    address, port = _apiserver_endpoint(ctx)
    try:
        if renew:
            for line in kubeadm_certs.renew_all(ctx):
                ctx.out(f'[upgrade/staticpods] {line}')
        for comp in changing:
            ctx.out(f'[upgrade/staticpods] Preparing for "{comp}" upgrade')
            _write_manifest(comp, new)
            if comp == 'kube-apiserver':
                common.start_apiserver(ctx, address, port, new)
                # A fault armed for this stage fails the upgrade with
                # the new API server already running.
                checkpoint(ctx, 'control-plane')
            ctx.out(f'[upgrade/staticpods] Component "{comp}" upgraded '
                    'successfully!')
    except CommandError as e:
        _roll_back(ctx, backup, address, port, old)
        raise kcli.fail('control-plane', ROLLED_BACK + e.message) from None
    _record_node(ctx, new)


def _roll_back(ctx: Context, backup: str, address: str, port: int,
               old: str) -> None:
    ctx.err('[upgrade/staticpods] The control plane failed to come up; '
            'rolling back the static Pod manifests')
    _restore_manifests(backup)
    try:
        common.start_apiserver(ctx, address, port, old)
    except CommandError as e:
        print(e.message, file=sys.stderr)
    _record_node(ctx, old)
    recorder.note(ctx.cluster_dir, ctx.host.name, 'upgrade-rollback',
                  version=old)


# ---- addons and cluster configuration -------------------------------------

def _upgrade_addons(ctx: Context, version: str) -> None:
    """kube-proxy and CoreDNS follow once every master runs ``version``
    (kubeadm skips them until then)."""
    from kubernetes_mgmt_lab.emulated.kubeadm import ADDON_TAGS
    with store.mutate(ctx.cluster_dir) as state:
        behind = sorted(h for h, rec in _control_plane_hosts(state).items()
                        if rec['apiserver'].get('version', version)
                        != version)
        if behind:
            ctx.out('[upgrade/addon] Skipping upgrade of addons because '
                    'control plane instances '
                    f'[{" ".join(behind)}] have not been upgraded')
            return
        coredns = ADDON_TAGS[min(max(_minor(version), min(ADDON_TAGS)),
                                 max(ADDON_TAGS))][0]
        images = {'kube-proxy': f'registry.k8s.io/kube-proxy:{version}',
                  'coredns': f'registry.k8s.io/coredns/coredns:{coredns}'}
        for kind in ('DaemonSet', 'Deployment'):
            for obj in list(cluster.objects_of(state, kind)):
                name = obj['metadata']['name']
                if name in images and \
                        obj['metadata'].get('namespace') == 'kube-system':
                    spec = obj['spec']['template']['spec']
                    spec['containers'][0]['image'] = images[name]
                    cluster.put(state, obj)
        cluster.reconcile(state)
    ctx.out('[addons] Applied essential addon: CoreDNS\n'
            '[addons] Applied essential addon: kube-proxy')


def _set_cluster_version(ctx: Context, version: str) -> None:
    with store.mutate(ctx.cluster_dir) as state:
        state['cluster']['kubernetes_version'] = version
        kubeadm_clusterconfig.put(state)
    ctx.out('[upload-config] Storing the configuration used in ConfigMap '
            '"kubeadm-config" in the "kube-system" Namespace')


def _confirm(ctx: Context) -> None:
    sys.stdout.write('[upgrade] Are you sure you want to proceed? [y/N]: ')
    sys.stdout.flush()
    if sys.stdin.readline().strip().lower() not in ('y', 'yes'):
        raise kcli.fail('preflight', "won't proceed; the user didn't answer "
                        '(Y|y) in order to continue')


# ---- the commands ---------------------------------------------------------

def _cluster(ctx: Context, opts: Parsed) -> dict:
    common.require_admin(ctx, opts.get('kubeconfig'))
    state = store.read(ctx.cluster_dir)
    if not state['cluster'].get('initialized'):
        raise kcli.fail('preflight', 'unable to fetch the kubeadm-config '
                        'ConfigMap: configmaps "kubeadm-config" not found')
    return state


def run_apply(ctx: Context, opts: Parsed) -> int:
    if len(opts.args) != 1:
        raise CommandError('missing one or more required arguments: '
                           f'[version]\n{kcli.STACK_HINT}')
    new = _normalize(opts.args[0])
    ignore = _ignored(opts)
    ctx.out(READ_CONFIG)
    ctx.out('[upgrade/preflight] Running preflight checks')
    _require_root(ignore)
    state = _cluster(ctx, opts)
    if not is_control_plane():
        raise kcli.fail('preflight', "couldn't find a control plane on this "
                        'node: /etc/kubernetes/manifests/kube-apiserver.yaml'
                        ' does not exist')
    _health(ctx, state, ignore)
    force = bool(opts.get('force'))
    _enforce(ctx, new, state['cluster']['kubernetes_version'], force,
             _kubelet_versions(state))
    if not (opts.get('yes') or force or opts.get('dry-run')):
        _confirm(ctx)
    if opts.get('dry-run'):
        ctx.out("[dryrun] Would pull the required images (like 'kubeadm "
                "config images pull')\n[dryrun] Finished dryrunning "
                'successfully!')
        return 0
    ctx.out(PREPULL)
    old = node_version() or state['cluster']['kubernetes_version']
    recorder.note(ctx.cluster_dir, ctx.host.name, 'upgrade-apply-start',
                  version=new, previous=old)
    ctx.out('[upgrade/control-plane] Upgrading your static Pod-hosted '
            f'control plane to version "{new}"...')
    upgrade_static_pods(ctx, old, new,
                        opts.get('certificate-renewal', True) is not False)
    _set_cluster_version(ctx, new)
    ctx.out('[upgrade/kubelet-config] The kubelet configuration for this '
            'node was successfully upgraded!')
    _upgrade_addons(ctx, new)
    recorder.note(ctx.cluster_dir, ctx.host.name, 'upgrade-apply-end',
                  version=new)
    ctx.out(f'\n[upgrade] SUCCESS! A control plane node of your cluster was '
            f'upgraded to "{new}".\n\n[upgrade] Now please proceed with '
            'upgrading the rest of the nodes by following the right order.')
    return 0


def run_node(ctx: Context, opts: Parsed) -> int:
    ignore = _ignored(opts)
    ctx.out(READ_CONFIG)
    if not os.path.exists(host_path(f'{common.K8S_DIR}/kubelet.conf')):
        raise kcli.fail('preflight', 'unable to fetch the kubeadm-config '
                        'ConfigMap: failed to load kubeconfig: open '
                        '/etc/kubernetes/kubelet.conf: no such file or '
                        'directory')
    ctx.out('[upgrade/preflight] Running pre-flight checks')
    _require_root(ignore)
    state = store.read(ctx.cluster_dir)
    version = state['cluster']['kubernetes_version']
    control_plane = is_control_plane()
    recorder.note(ctx.cluster_dir, ctx.host.name, 'upgrade-node-start',
                  version=version, control_plane=control_plane)
    if control_plane:
        ctx.out(PREPULL)
        ctx.out('[upgrade/control-plane] Upgrading your Static Pod-hosted '
                f'control plane instance to version "{version}"...')
        upgrade_static_pods(ctx, node_version() or version, version,
                            opts.get('certificate-renewal', True)
                            is not False)
        ctx.out('[upgrade/control-plane] The control plane instance for '
                'this node was successfully upgraded!')
    else:
        ctx.out('[upgrade/preflight] Skipping prepull. Not a control plane '
                'node.\n[upgrade/control-plane] Skipping phase. Not a '
                'control plane node.')
    checkpoint(ctx, 'kubelet-config')
    ctx.out('[upgrade/kubelet-config] The kubelet configuration for this '
            'node was successfully upgraded!')
    if control_plane:
        _upgrade_addons(ctx, version)
    recorder.note(ctx.cluster_dir, ctx.host.name, 'upgrade-node-end',
                  version=version, control_plane=control_plane)
    ctx.out('[upgrade] The configuration for this node was successfully '
            'upgraded!\n[upgrade] Now you should go ahead and upgrade the '
            'kubelet package using your package manager.')
    return 0


def run_plan(ctx: Context, opts: Parsed) -> int:
    ignore = _ignored(opts)
    ctx.out('[preflight] Running pre-flight checks.')
    ctx.out(READ_CONFIG)
    state = _cluster(ctx, opts)
    _health(ctx, state, ignore)
    current = state['cluster']['kubernetes_version']
    kubeadm = kcli.kubeadm_version(ctx)
    ctx.out('[upgrade] Fetching available versions to upgrade to')
    ctx.out(f'[upgrade/versions] Cluster version: {current}')
    ctx.out(f'[upgrade/versions] kubeadm version: {kubeadm}')
    if kcli.version_tuple(kubeadm) <= kcli.version_tuple(current):
        ctx.out("\nAwesome, you're up-to-date! Enjoy!")
        return 0
    ctx.out(f'[upgrade/versions] Target version: {kubeadm}')
    ctx.out(_plan_tables(state, current, kubeadm))
    return 0


def _plan_tables(state: dict, current: str, target: str) -> str:
    hosts = state.get('node_hosts', {})
    kubelets = [['COMPONENT', 'NODE', 'CURRENT', 'TARGET']]
    for node in cluster.objects_of(state, 'Node'):
        kubelets.append(['kubelet', node['metadata']['name'],
                         node['status']['nodeInfo']['kubeletVersion'],
                         target])
    plane = [['COMPONENT', 'NODE', 'CURRENT', 'TARGET']]
    masters = {h: r for h, r in _control_plane_hosts(state).items()}
    for comp in ('kube-apiserver', 'kube-controller-manager',
                 'kube-scheduler'):
        for name, host in sorted(hosts.items()):
            if host in masters:
                plane.append([comp, name, masters[host]['apiserver'].get(
                    'version', current), target])
    plane.append(['kube-proxy', '', current.lstrip('v'), target])
    table = kubeadm_certs._table
    return ('\nComponents that must be upgraded manually after you have '
            "upgraded the control plane with 'kubeadm upgrade apply':\n"
            + '\n'.join(table(kubelets)) +
            '\n\nUpgrade to the latest stable version:\n\n'
            + '\n'.join(table(plane)) +
            '\n\nYou can now apply the upgrade by executing the following '
            f'command:\n\n\tkubeadm upgrade apply {target}\n\n' + '_' * 69)

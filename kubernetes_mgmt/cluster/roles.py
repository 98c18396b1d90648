"""Configuration of each install-script role, from the cluster plan.

Which keys each role takes, and their types, is the contract in
``cluster.contract``; every configuration is checked against it before it
is sent (``InstallScript.run``), and ``check_plan`` checks all of them at
once before any host is touched.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from kubernetes_mgmt.cluster import contract
from kubernetes_mgmt.cluster.cluster_plan import ClusterPlan, Node
from kubernetes_mgmt.cluster.registry_config import (
    apt_key_fingerprints,
    registry_keys,
)
from kubernetes_mgmt.cluster.script import ConfigValue
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.params import image_bundle
from kubernetes_mgmt.remote.ssh import SshSession

REMOTE_CNI_MANIFEST = '/var/lib/kubernetes-mgmt/cni.yaml'
REMOTE_IMAGES = '/var/lib/kubernetes-mgmt/images'

Config = dict[str, ConfigValue]


@dataclass(frozen=True)
class JoinSecrets:
    token: str = field(repr=False)
    certificate_key: str = field(repr=False)
    ca_cert_hash: str = ''


def upload_cni_manifest(session: SshSession, plan: ClusterPlan) -> None:
    """The CNI manifest the package carries, where ``init`` applies it
    from (a CNI fetched by URL needs nothing here)."""
    if plan.cni.package_path:
        session.upload(plan.cni.package_path.read_bytes(),
                       REMOTE_CNI_MANIFEST, step='upload CNI manifest',
                       sudo=True)


def upload_image_bundle(session: SshSession, plan: ClusterPlan,
                        minor: str) -> None:
    """The package's image bundle for ``minor`` where the script imports
    it from: archives a node has already (same SHA-256) are not sent
    again, so a re-run or a retry costs one command."""
    bundle = plan.bundle_for(minor)
    if bundle is None:
        return
    assert plan.package_root is not None
    have = _remote_sha256(session, [i.file for i in bundle.images])
    local = plan.package_root / image_bundle.BUNDLE_DIR
    for image in bundle.images:
        if have.get(image.file) != image.sha256:
            session.upload_file(local / image.file,
                                f'{REMOTE_IMAGES}/{image.file}',
                                step='upload image bundle', sudo=True)
            have[image.file] = image.sha256
    session.upload(bundle.node_list(), f'{REMOTE_IMAGES}/bundle.list',
                   step='upload image bundle', sudo=True)


def _remote_sha256(session: SshSession, files: list[str]) -> dict[str, str]:
    result = session.run(['sha256sum', '--', *(f'{REMOTE_IMAGES}/{f}'
                                               for f in files)],
                         step='read image bundle', sudo=True, check=False)
    found = {}
    for line in result.stdout.splitlines():
        digest, _, path = line.partition('  ')
        found[path.rsplit('/', 1)[-1]] = digest
    return found


def _bundle_keys(plan: ClusterPlan, minor: str) -> Config:
    bundle = plan.bundle_for(minor)
    if bundle is None:
        return {}
    return {'IMAGE_BUNDLE': REMOTE_IMAGES,
            'K8S_PATCH': bundle.kubernetes_version}


def _base(node: Node) -> Config:
    return {'NODE_NAME': node.name, 'NODE_IP': node.ip,
            'DEADLINE': CONF.kubernetes_mgmt.install_timeout}


def _for_minor(url: str | None, minor: str) -> str | None:
    """A configured repository URL for ``minor`` ("{minor}" in it)."""
    return url.replace('{minor}', minor) if url else None


def _packages(plan: ClusterPlan, minor: str) -> Config:
    """Where a node gets the Kubernetes packages of ``minor``."""
    conf, proxy = CONF.kubernetes_mgmt, plan.params.proxy
    return {
        'K8S_VERSION': minor,
        'K8S_APT_REPO': _for_minor(conf.apt_repository_url, minor),
        'K8S_APT_KEY_URL': _for_minor(conf.apt_key_url, minor),
        'K8S_APT_KEY_FINGERPRINTS': apt_key_fingerprints(plan.params),
        'HTTP_PROXY': proxy.http_proxy if proxy else None,
        'HTTPS_PROXY': proxy.https_proxy if proxy else None,
        'NO_PROXY': plan.no_proxy if proxy else None,
    }


def prepare(plan: ClusterPlan, node: Node, minor: str | None = None
            ) -> Config:
    """``node`` made ready to join, with the packages (and image bundle)
    of ``minor``, by default the cluster's."""
    minor = minor or plan.kubernetes_version
    return {
        **_base(node),
        **_packages(plan, minor),
        **registry_keys(plan.params),
        **_bundle_keys(plan, minor),
        # containerd's sandbox image: <repository>/pause:<kubeadm's tag>.
        'IMAGE_REPOSITORY': plan.sandbox_repository,
        'HOSTS': _hosts(plan),
        'NFS_CLIENT': 1 if plan.nfs_client else None,
    }


def storage_server(plan: ClusterPlan) -> Config:
    """The NFS server: volumes to mount ("ID GIB DEVICE MOUNT;...": the
    script finds each by its Cinder id and size, DEVICE is only Nova's
    word for it) and directories to export ("DIR CLIENT;...")."""
    node, params = plan.storage, plan.params.storage_server
    assert node is not None and params is not None
    proxy = plan.params.proxy
    volumes = node.host.volumes
    return {
        **_base(node),
        'VOLUMES': ';'.join(
            f'{volumes[v.volume_resource_id].id} '
            f'{volumes[v.volume_resource_id].size_gib} '
            f'{volumes[v.volume_resource_id].device} {v.mount_to}'
            for v in params.volumes),
        'EXPORTS': ';'.join(f'{e.export_dir} {e.export_to}'
                            for e in params.exports),
        'HTTP_PROXY': proxy.http_proxy if proxy else None,
        'HTTPS_PROXY': proxy.https_proxy if proxy else None,
        'NO_PROXY': plan.no_proxy if proxy else None,
    }


def hosts(plan: ClusterPlan, node: Node) -> Config:
    """A node outside the operation: the /etc/hosts block (every node of
    the plan) and the registries, which a request may have replaced."""
    return {**_base(node), 'HOSTS': _hosts(plan),
            **registry_keys(plan.params)}


def _hosts(plan: ClusterPlan) -> str:
    return ','.join(f'{n.ip}={n.name}' for n in plan.nodes)


def load_balancer(plan: ClusterPlan, node: Node, rank: int,
                  vrrp_password: str,
                  backends: Sequence[Node] | None = None) -> Config:
    """HAProxy and keepalived of ``node``. ``backends`` (default: every
    master) are the API servers HAProxy forwards to; VRRP peers are always
    all other masters, so that a master being rebuilt keeps its place."""
    others = [m.ip for m in plan.masters if m is not node]
    chosen = plan.masters if backends is None else backends
    return {
        **_base(node),
        'LB_PORT': plan.lb_port,
        'LB_BACKENDS': ','.join(f'{m.name}={m.ip}' for m in chosen),
        'VIP': plan.topology.cluster_ip,
        'VIP_PREFIX': plan.topology.cluster_prefixlen or 32,
        'VRRP_ROUTER_ID': plan.vrrp_router_id,
        # One MASTER, then BACKUPs by descending priority.
        'VRRP_PRIORITY': 150 - rank,
        'VRRP_STATE': 'MASTER' if rank == 0 else 'BACKUP',
        'VRRP_PASSWORD': vrrp_password,
        'VRRP_PEERS': ','.join(others),
    }


def init(plan: ClusterPlan, node: Node, secrets: JoinSecrets) -> Config:
    cni = plan.cni
    sans = [plan.topology.cluster_ip, plan.topology.cluster_fip]
    return {
        **_base(node),
        'K8S_VERSION': plan.kubernetes_version,
        'CONTROL_PLANE_ENDPOINT': plan.control_plane_endpoint,
        'POD_CIDR': plan.pod_cidr,
        'SERVICE_CIDR': plan.service_cidr,
        'API_CERT_SANS': ','.join(s for s in sans if s),
        'BOOTSTRAP_TOKEN': secrets.token,
        'CERTIFICATE_KEY': secrets.certificate_key,
        'IMAGE_REPOSITORY': plan.image_repository,
        'CNI': cni.name,
        'CNI_MANIFEST': cni.url or REMOTE_CNI_MANIFEST,
        'CNI_SHA256': cni.sha256,
    }


def refresh_join(node: Node, secrets: JoinSecrets,
                 plan: ClusterPlan | None = None) -> Config:
    """Fresh join credentials; with ``plan`` (the control plane is being
    set up) the CNI is applied too, idempotently."""
    config: Config = {**_base(node), 'BOOTSTRAP_TOKEN': secrets.token,
                      'CERTIFICATE_KEY': secrets.certificate_key}
    if plan is not None:
        config.update(_cni(plan))
    return config


def _cni(plan: ClusterPlan) -> Config:
    cni, proxy = plan.cni, plan.params.proxy
    return {
        'POD_CIDR': plan.pod_cidr,
        'CNI': cni.name,
        'CNI_MANIFEST': cni.url or REMOTE_CNI_MANIFEST,
        'CNI_SHA256': cni.sha256,
        'HTTP_PROXY': proxy.http_proxy if proxy else None,
        'HTTPS_PROXY': proxy.https_proxy if proxy else None,
        'NO_PROXY': plan.no_proxy if proxy else None,
    }


def status(node: Node) -> Config:
    """The read-only facts of a node (``cluster.node_state``)."""
    return _base(node)


def reset(node: Node) -> Config:
    """Undo a half-finished kubeadm init or join on ``node``."""
    return _base(node)


def upgrade(plan: ClusterPlan, node: Node, minor: str,
            command: str) -> Config:
    """``node``'s own part of the upgrade to ``minor`` (``command``:
    apply on the first master upgraded, node on every other)."""
    return {**_base(node), **_packages(plan, minor),
            **_bundle_keys(plan, minor), 'UPGRADE': command}


def join(plan: ClusterPlan, node: Node, secrets: JoinSecrets,
         control_plane: bool) -> Config:
    config = {
        **_base(node),
        'CONTROL_PLANE_ENDPOINT': plan.control_plane_endpoint,
        'BOOTSTRAP_TOKEN': secrets.token,
        'CA_CERT_HASH': secrets.ca_cert_hash,
    }
    if control_plane:
        config['CERTIFICATE_KEY'] = secrets.certificate_key
    return config



# Stand-ins of the secrets the driver generates when it runs a role, of
# the shapes it generates (``credentials``): ``check_plan`` judges what
# comes from the plan.
_SAMPLE_SECRETS = JoinSecrets('abcdef.0123456789abcdef', '0' * 64,
                              'sha256:' + '0' * 64)
_SAMPLE_VRRP_PASSWORD = 'abcd1234'  # noqa: S105 (a stand-in)


def _every_config(plan: ClusterPlan, minor: str
                  ) -> Iterator[tuple[str, Config]]:
    """Each role's configuration for each node it can run on, the
    packages' at ``minor``."""
    secrets = _SAMPLE_SECRETS
    for node in plan.nodes:
        yield 'prepare', prepare(plan, node, minor)
        yield 'hosts', hosts(plan, node)
        yield 'status', status(node)
        yield 'reset', reset(node)
        yield 'upgrade', upgrade(plan, node, minor,
                                 'apply' if node in plan.masters else 'node')
    for rank, node in enumerate(plan.masters):
        if plan.ha:
            yield 'lb', load_balancer(plan, node, rank,
                                      _SAMPLE_VRRP_PASSWORD)
        # Any master may run init's successors when the first is healed.
        yield 'init', init(plan, node, secrets)
        yield 'refresh-join', refresh_join(node, secrets, plan)
        yield 'refresh-join', refresh_join(node, secrets)
        yield 'join-master', join(plan, node, secrets, True)
    for node in plan.workers:
        yield 'join-worker', join(plan, node, secrets, False)
    if plan.storage is not None and plan.params.storage_server is not None:
        yield 'storage', storage_server(plan)


def check_plan(plan: ClusterPlan, minor: str | None = None) -> None:
    """ContractViolation listing every role, key and node whose
    configuration, as built from ``plan``, the install script would
    refuse: checked before any host is touched. Values are not shown.
    ``minor``: the one whose packages (and image bundle) the operation
    installs, by default the cluster's; MgmtDriverError when the
    package's bundle is of another."""
    found: dict[tuple[str, str], list[str]] = {}
    for role, config in _every_config(plan, minor or plan.kubernetes_version):
        node = str(config.get('NODE_NAME'))
        for problem in contract.problems(role, config):
            nodes = found.setdefault((role, problem), [])
            if node not in nodes:
                nodes.append(node)
    if found:
        lines = [f'role {role} ({", ".join(nodes)}): {problem}'
                 for (role, problem), nodes in found.items()]
        raise contract.ContractViolation(
            'the install-script configuration built from this cluster\'s '
            'settings breaks the script contract; no host was touched: '
            + '; '.join(lines))

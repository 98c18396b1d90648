"""kubeadm's configuration: the YAML file (v1beta3 / v1beta4 kinds) and
the equivalent command-line flags, read into plain settings."""
from __future__ import annotations

import ipaddress
import sys
from dataclasses import dataclass, field

import yaml

from kubernetes_mgmt_lab.emulated import tokens, yamlio
from kubernetes_mgmt_lab.emulated.host import host_path
from kubernetes_mgmt_lab.emulated.kubeadm_cli import ConfigError

KUBEADM_VERSIONS = ('kubeadm.k8s.io/v1beta3', 'kubeadm.k8s.io/v1beta4')
OTHER_KINDS = {('kubelet.config.k8s.io/v1beta1', 'KubeletConfiguration'),
               ('kubeproxy.config.k8s.io/v1alpha1',
                'KubeProxyConfiguration')}
FIELDS = {
    'InitConfiguration': {'bootstrapTokens', 'nodeRegistration',
                          'localAPIEndpoint', 'certificateKey',
                          'skipPhases', 'patches', 'dryRun', 'timeouts'},
    'ClusterConfiguration': {
        'etcd', 'networking', 'kubernetesVersion', 'controlPlaneEndpoint',
        'apiServer', 'controllerManager', 'scheduler', 'dns', 'proxy',
        'certificatesDir', 'imageRepository', 'featureGates',
        'clusterName', 'encryptionAlgorithm', 'certificateValidityPeriod',
        'caCertificateValidityPeriod'},
    'JoinConfiguration': {'nodeRegistration', 'caCertPath', 'discovery',
                          'controlPlane', 'skipPhases', 'patches',
                          'dryRun', 'timeouts'},
}


@dataclass
class NodeSettings:
    node_name: str | None = None
    advertise_address: str | None = None
    bind_port: int = 6443
    taints: list | None = None      # None: kubeadm's default
    ignore_preflight: set[str] = field(default_factory=set)
    skip_phases: list[str] = field(default_factory=list)
    certificate_key: str | None = None
    kubelet_config: dict | None = None


@dataclass
class InitSettings(NodeSettings):
    control_plane_endpoint: str | None = None
    pod_subnet: str | None = None
    service_subnet: str = '10.96.0.0/12'
    kubernetes_version: str | None = None
    cluster_name: str = 'kubernetes'
    image_repository: str = 'registry.k8s.io'
    cert_sans: list[str] = field(default_factory=list)
    token: str | None = None
    token_ttl: float = tokens.DEFAULT_TTL
    upload_certs: bool = False
    skip_token_print: bool = False
    skip_certificate_key_print: bool = False


@dataclass
class JoinSettings(NodeSettings):
    endpoint: str = ''
    token: str = ''
    ca_hashes: list[str] = field(default_factory=list)
    unsafe_skip_ca: bool = False
    control_plane: bool = False


def load_docs(path: str) -> list[dict]:
    try:
        with open(host_path(path), encoding='utf-8') as f:
            docs = [d for d in yamlio.load_all(f) if d]
    except OSError as e:
        raise ConfigError(f'unable to read config from "{path}" : '
                          f'open {path}: {e.strerror.lower()}') from None
    except yaml.YAMLError as e:
        raise ConfigError(f'error converting YAML to JSON: {e}') from None
    return docs


def _check_args_type(version: str, where: str, value) -> None:
    """v1beta4 turned extraArgs maps into lists of {name, value}."""
    if value is None:
        return
    if version.endswith('v1beta4') and isinstance(value, dict):
        raise ConfigError(f'json: cannot unmarshal object into Go struct '
                          f'field {where} of type []v1beta4.Arg')
    if version.endswith('v1beta3') and isinstance(value, list):
        raise ConfigError(f'json: cannot unmarshal array into Go struct '
                          f'field {where} of type map[string]string')


def _check_doc(doc: dict) -> str | None:
    """Validate one document; returns its kind if it is kubeadm's."""
    if not isinstance(doc, dict) or not doc.get('apiVersion') or \
            not doc.get('kind'):
        raise ConfigError('invalid configuration: kind and apiVersion is '
                          'mandatory information that must be specified')
    version, kind = doc['apiVersion'], doc['kind']
    if (version, kind) in OTHER_KINDS:
        return None
    if kind not in FIELDS:
        print(f'[config] WARNING: Ignored YAML document with '
              f'GroupVersionKind {version}, Kind={kind}', file=sys.stderr)
        return None
    if version not in KUBEADM_VERSIONS:
        raise ConfigError(f'no kind "{kind}" is registered for version '
                          f'"{version}" in scheme')
    for key in set(doc) - FIELDS[kind] - {'apiVersion', 'kind'}:
        print(f'W0000 strict decoding error: unknown field "{key}"',
              file=sys.stderr)
    reg = doc.get('nodeRegistration') or {}
    _check_args_type(version, 'NodeRegistrationOptions.kubeletExtraArgs',
                     reg.get('kubeletExtraArgs'))
    for part in ('apiServer', 'controllerManager', 'scheduler'):
        _check_args_type(version, f'{part}.extraArgs',
                         (doc.get(part) or {}).get('extraArgs'))
    return kind


def _node_registration(settings: NodeSettings, reg: dict) -> None:
    settings.node_name = reg.get('name') or settings.node_name
    if 'taints' in reg:
        settings.taints = list(reg.get('taints') or [])
    settings.ignore_preflight |= set(reg.get('ignorePreflightErrors') or [])


def _cidr(text: str, what: str) -> str:
    for part in text.split(','):
        try:
            ipaddress.ip_network(part.strip(), strict=False)
        except ValueError:
            raise ConfigError(f'{what}: Invalid value: "{text}": couldn\'t '
                              'parse subnet') from None
    return text


def _ip(text: str, what: str) -> str:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        raise ConfigError(f'{what}: Invalid value: "{text}": must be a '
                          'valid IP address') from None
    return text


def apply_init_docs(settings: InitSettings, docs: list[dict]) -> None:
    for doc in docs:
        kind = _check_doc(doc)
        if doc.get('kind') == 'KubeletConfiguration':
            settings.kubelet_config = doc
        if kind == 'InitConfiguration':
            _node_registration(settings, doc.get('nodeRegistration') or {})
            endpoint = doc.get('localAPIEndpoint') or {}
            if endpoint.get('advertiseAddress'):
                settings.advertise_address = _ip(
                    endpoint['advertiseAddress'],
                    'localAPIEndpoint.advertiseAddress')
            settings.bind_port = int(endpoint.get('bindPort') or 6443)
            settings.certificate_key = doc.get('certificateKey')
            settings.skip_phases += doc.get('skipPhases') or []
            for tok in doc.get('bootstrapTokens') or []:
                settings.token = tok.get('token') or settings.token
                if tok.get('ttl'):
                    settings.token_ttl = tokens.parse_duration(tok['ttl'])
        elif kind == 'ClusterConfiguration':
            _cluster_doc(settings, doc)


def _cluster_doc(settings: InitSettings, doc: dict) -> None:
    net = doc.get('networking') or {}
    if net.get('podSubnet'):
        settings.pod_subnet = _cidr(net['podSubnet'],
                                    'networking.podSubnet')
    if net.get('serviceSubnet'):
        settings.service_subnet = _cidr(net['serviceSubnet'],
                                        'networking.serviceSubnet')
    settings.control_plane_endpoint = doc.get('controlPlaneEndpoint') or \
        settings.control_plane_endpoint
    settings.kubernetes_version = doc.get('kubernetesVersion') or \
        settings.kubernetes_version
    settings.cluster_name = doc.get('clusterName') or 'kubernetes'
    settings.image_repository = doc.get('imageRepository') or \
        settings.image_repository
    settings.cert_sans = list((doc.get('apiServer') or {}).get(
        'certSANs') or [])


def apply_join_docs(settings: JoinSettings, docs: list[dict]) -> None:
    found = False
    for doc in docs:
        kind = _check_doc(doc)
        if kind != 'JoinConfiguration':
            continue
        found = True
        _node_registration(settings, doc.get('nodeRegistration') or {})
        disc = doc.get('discovery') or {}
        boot = disc.get('bootstrapToken') or {}
        settings.endpoint = boot.get('apiServerEndpoint') or ''
        settings.token = boot.get('token') or disc.get('tlsBootstrapToken') \
            or ''
        settings.ca_hashes = list(boot.get('caCertHashes') or [])
        settings.unsafe_skip_ca = bool(boot.get('unsafeSkipCAVerification'))
        settings.skip_phases += doc.get('skipPhases') or []
        cp = doc.get('controlPlane')
        if cp is not None:
            settings.control_plane = True
            settings.certificate_key = (cp or {}).get('certificateKey')
            endpoint = (cp or {}).get('localAPIEndpoint') or {}
            if endpoint.get('advertiseAddress'):
                settings.advertise_address = _ip(
                    endpoint['advertiseAddress'],
                    'controlPlane.localAPIEndpoint.advertiseAddress')
            settings.bind_port = int(endpoint.get('bindPort') or 6443)
    if not found:
        raise ConfigError('no JoinConfiguration kind was found in the '
                          'YAML file')


def check_init_flags(settings: InitSettings) -> None:
    if settings.pod_subnet:
        _cidr(settings.pod_subnet, 'networking.podSubnet')
    _cidr(settings.service_subnet, 'networking.serviceSubnet')
    if settings.advertise_address:
        _ip(settings.advertise_address, 'localAPIEndpoint.advertiseAddress')


def split_endpoint(endpoint: str, default_port: int = 6443
                   ) -> tuple[str, int]:
    host, sep, port = endpoint.rpartition(':')
    if not sep or ']' in port:
        return endpoint.strip('[]'), default_port
    return host.strip('[]'), int(port)


def bootstrap_tokens(docs: list[dict]) -> list[dict]:
    """The ``bootstrapTokens`` of the InitConfiguration in ``docs``, as
    ``kubeadm token create --config`` reads them: one with kubeadm's
    defaults (a random token) when the file names none."""
    found: list[dict] = []
    for doc in docs:
        if _check_doc(doc) == 'InitConfiguration':
            found += [t or {} for t in doc.get('bootstrapTokens') or []]
    return found or [{}]

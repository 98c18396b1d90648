"""Validate requests and turn them into ``ClusterParams``.

Every problem is collected before anything is raised, so a user fixes a
request in one go.  Nothing here touches the network: validation runs
before any VM is contacted.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from kubernetes_mgmt import redact
from kubernetes_mgmt.errors import Problem, ValidationError
from kubernetes_mgmt.params import checks, registries, schema
from kubernetes_mgmt.params import cluster_params as model
from kubernetes_mgmt.params.casing import snake_keys
from kubernetes_mgmt.params.paths import Path, render, select, show, sort_key
from kubernetes_mgmt.params.schema import (
    API_V1,
    API_V2,
    PARAM_KEY,
    USER_DATA_CLASS_KEY,
    USER_DATA_KEY,
    WIDE_EXPORT_KEY,
    Finding,
)

__all__ = ['parse_cluster_params', 'parse_instantiate_request',
           'read_stored_params']

Check = Callable[[str], str | None]

_STORAGE = ('storage_server',)
_VOLUMES = (*_STORAGE, 'cinder_volume_setup_params', '*')
_EXPORTS = (*_STORAGE, 'nfs_server_setup_params', '*')
_PVS = ('pv_registration_params', '*')


def _node_checks(group: str) -> list[tuple[Path, Check]]:
    return [((group, 'aspect_id'), checks.resource_name),
            ((group, 'ssh_cp_name'), checks.resource_name),
            ((group, 'nic_cp_name'), checks.resource_name),
            ((group, 'username'), checks.user_name),
            ((group, 'password'), checks.password)]


# Format checks of single strings, by path inside the cluster parameters
# ('*' = every list entry).  Types were already checked by the schema.
_FIELD_CHECKS: tuple[tuple[Path, Check], ...] = (
    (('script_path',), checks.package_path),
    (('vim_name',), checks.vim_name),
    *_node_checks('master_node'),
    (('master_node', 'cluster_cp_name'), checks.resource_name),
    (('master_node', 'cluster_fip_name'), checks.resource_name),
    (('master_node', 'pod_cidr'), checks.cidr),
    (('master_node', 'cluster_cidr'), checks.cidr),
    *_node_checks('worker_node'),
    (('proxy', 'http_proxy'), checks.proxy_url),
    (('proxy', 'https_proxy'), checks.proxy_url),
    (('proxy', 'no_proxy'), checks.no_proxy),
    (('proxy', 'k8s_node_cidr'), checks.cidr),
    ((*_STORAGE, 'ssh_cp_name'), checks.resource_name),
    ((*_STORAGE, 'username'), checks.user_name),
    ((*_STORAGE, 'password'), checks.password),
    ((*_VOLUMES, 'volume_resource_id'), checks.resource_name),
    ((*_VOLUMES, 'mount_to'), checks.directory),
    ((*_EXPORTS, 'export_dir'), checks.directory),
    ((*_EXPORTS, 'export_to'), checks.network),
    ((*_PVS, 'pv_manifest_file_path'), checks.package_path),
    ((*_PVS, 'nfs_server_cp'), checks.resource_name),
)

_TOP_CHECKS: tuple[tuple[Path, Check], ...] = (
    ((USER_DATA_KEY,), checks.package_path),
    ((USER_DATA_CLASS_KEY,), checks.python_class),
    *(((PARAM_KEY, *path), check) for path, check in _FIELD_CHECKS),
)


# -- public API -------------------------------------------------------------

def parse_cluster_params(additional_params: dict, *,
                         base_path: str = 'additionalParams',
                         api: str = API_V1) -> model.ClusterParams:
    """Validate ``additionalParams`` and return its cluster parameters.

    Raises ValidationError listing every problem, with paths that start
    with ``base_path``.  On success every secret is registered for
    redaction before the parameters are returned. ``api``: the Tacker
    VNF LCM API the request came through (``schema.APIS``).
    """
    findings = _additional_params_findings(additional_params, api=api)
    if findings:
        raise ValidationError(_problems(base_path, findings))
    return _accept(additional_params)


def parse_instantiate_request(body: dict,
                              api: str = API_V1) -> model.ClusterParams:
    """Validate an InstantiateVnfRequest body as a user writes it for
    Tacker's ``api`` (``schema.APIS``)."""
    findings = schema.request_findings(body, api)
    additional = body.get('additionalParams') if isinstance(
        body, dict) else None
    if isinstance(additional, dict):
        findings += [(('additionalParams', *path), message) for path, message
                     in _additional_params_findings(additional, api=api)]
    if findings:
        raise ValidationError(_problems('', findings))
    assert isinstance(additional, dict)  # the schema requires it
    return _accept(additional)


def read_stored_params(additional_params: dict) -> model.ClusterParams:
    """Read ``instantiated_vnf_info.additional_params`` of an instance.

    Accepts the camelCase keys older Tacker releases stored as well as
    snake_case, and validates like a new request, except that a wide NFS
    export without its opt-in passes: it was accepted at instantiate (by
    a plugin version before the opt-in), and refusing it now would block
    every later operation of the instance.
    """
    converted, clashes = snake_keys(additional_params)
    findings = [(path, 'given twice, in camelCase and in snake_case')
                for path in clashes if path[:1] == (PARAM_KEY,)]
    findings += _additional_params_findings(converted, stored=True)
    if findings:
        raise ValidationError(_problems('additionalParams', findings))
    return _accept(converted)


# -- collecting problems ----------------------------------------------------

def _additional_params_findings(additional: Any, *, stored: bool = False,
                                api: str = API_V1) -> list[Finding]:
    findings = schema.additional_params_findings(additional)
    if isinstance(additional, dict):
        # A value the schema refused (too long, say) is not read again.
        refused = {path for path, _ in findings}
        findings += _format_findings(additional, refused)
        findings += _user_data_findings(additional, api)
        param = additional.get(PARAM_KEY)
        if isinstance(param, dict):
            found = _network_findings(param) + _storage_findings(param)
            found += registries.findings(param)
            if not stored:
                found += _wide_export_findings(param)
            findings += [((PARAM_KEY, *path), message)
                         for path, message in found
                         if (PARAM_KEY, *path) not in refused]
    return findings


def _problems(base: str, findings: list[Finding]) -> list[Problem]:
    unique = list(dict.fromkeys(findings))
    unique.sort(key=lambda finding: sort_key(finding[0]))
    return [Problem(render(base, path), message)
            for path, message in unique]


def _format_findings(additional: dict,
                     refused: set[Path]) -> list[Finding]:
    findings: list[Finding] = []
    for pattern, check in _TOP_CHECKS:
        for path, value in select(additional, pattern):
            # Empty strings and wrong types are the schema's to report.
            if isinstance(value, str) and value and path not in refused:
                message = check(value)
                if message:
                    findings.append((path, message))
    return findings


def _user_data_findings(additional: dict, api: str) -> list[Finding]:
    """Tacker's pair rule (both APIs refuse one key without the other)
    and, under v1, aspect ids for the package's user data."""
    findings: list[Finding] = []
    has_data = USER_DATA_KEY in additional
    has_class = USER_DATA_CLASS_KEY in additional
    if has_data and not has_class:
        findings.append(((USER_DATA_CLASS_KEY,),
                         f"is required when '{USER_DATA_KEY}' is given"))
    if has_class and not has_data:
        findings.append(((USER_DATA_KEY,),
                         f"is required when '{USER_DATA_CLASS_KEY}' is "
                         'given'))
    param = additional.get(PARAM_KEY)
    if not has_data or not isinstance(param, dict) or api == API_V2:
        return findings
    # v1: the user data script sizes each node group by its aspect (under
    # v2 each VM is a nested stack Tacker's own user data sizes by VDU).
    for group in ('master_node', 'worker_node'):
        node = param.get(group)
        if isinstance(node, dict) and 'aspect_id' not in node:
            findings.append(((PARAM_KEY, group, 'aspect_id'),
                             f"is required when additionalParams has "
                             f"'{USER_DATA_KEY}' (the VNFD aspect of "
                             'this node group)'))
    return findings


class _Net(NamedTuple):
    path: Path
    value: Any
    given: bool  # False: the default applies


def _network_findings(param: dict) -> list[Finding]:
    """Pod, service and node networks must be disjoint."""
    master = param.get('master_node')
    master = master if isinstance(master, dict) else {}
    nets = [_Net(('master_node', 'pod_cidr'),
                 master.get('pod_cidr', model.DEFAULT_POD_CIDR),
                 'pod_cidr' in master),
            _Net(('master_node', 'cluster_cidr'),
                 master.get('cluster_cidr', model.DEFAULT_SERVICE_CIDR),
                 'cluster_cidr' in master)]
    proxy = param.get('proxy')
    if isinstance(proxy, dict) and 'k8s_node_cidr' in proxy:
        nets.append(_Net(('proxy', 'k8s_node_cidr'),
                         proxy['k8s_node_cidr'], True))
    findings: list[Finding] = []
    for i, first in enumerate(nets):
        for second in nets[i + 1:]:
            if _overlap(first, second):
                # Blame a field the user wrote, naming the other one.
                blamed, other = ((second, first) if second.given
                                 else (first, second))
                findings.append((blamed.path, _overlap_message(blamed,
                                                               other)))
    return findings


_LABELS = {'pod_cidr': 'pod CIDR', 'cluster_cidr': 'service CIDR',
           'k8s_node_cidr': 'node CIDR'}


def _overlap(first: _Net, second: _Net) -> bool:
    if not (first.given or second.given):
        return False
    if not (isinstance(first.value, str) and isinstance(second.value, str)):
        return False  # the schema reports the wrong type
    net_a = checks.parse_cidr(first.value)
    net_b = checks.parse_cidr(second.value)
    if net_a is None or net_b is None or net_a.version != net_b.version:
        return False
    return net_a.overlaps(net_b)


def _overlap_message(blamed: _Net, other: _Net) -> str:
    label = _LABELS[str(other.path[-1])]
    if not other.given:
        label = f'the default {label}'
    return (f'{show(blamed.value)} overlaps {label} {show(other.value)}; '
            'the pod, service and node networks must not overlap')


def _storage_findings(param: dict) -> list[Finding]:
    """Volumes, mounts and manifests given once each; every export on a
    volume (the VM's own disk is lost when the storage server is
    healed)."""
    findings = _duplicates(param, (*_VOLUMES, 'volume_resource_id'))
    findings += _duplicates(param, (*_VOLUMES, 'mount_to'))
    findings += _duplicates(param, (*_PVS, 'pv_manifest_file_path'))
    mounts = [value for _, value in select(param, (*_VOLUMES, 'mount_to'))
              if isinstance(value, str) and value]
    for path, value in select(param, (*_EXPORTS, 'export_dir')):
        if not isinstance(value, str) or checks.directory(value):
            continue    # the format check reports it
        if mounts and not any(
                value == m or value.startswith(m.rstrip('/') + '/')
                for m in mounts):
            findings.append((path, f'{show(value)} is not on a volume of '
                             f'cinder_volume_setup_params (mounted at '
                             f'{", ".join(mounts)}): data there would be '
                             "on the storage server's own disk, which a "
                             'heal of that VM replaces'))
    return findings


def _wide_export_findings(param: dict) -> list[Finding]:
    """An export to a network wider than /8 (IPv6: /32), 0.0.0.0/0 above
    all, lets hosts far outside the cluster mount the directory (with
    no_root_squash): only with ``allow_wide_export: true`` beside it."""
    findings: list[Finding] = []
    for path, entry in select(param, _EXPORTS):
        if not isinstance(entry, dict) or entry.get(WIDE_EXPORT_KEY) is True:
            continue
        value = entry.get('export_to')
        wide = checks.too_wide(value) if isinstance(value, str) else None
        if wide is None:
            continue
        limit = checks.WIDE_PREFIX[wide.version]
        findings.append(((*path, 'export_to'), (
            f'{show(value)} lets any host of a /{wide.prefixlen} network '
            f'mount the directory (wider than /{limit}); name the network '
            f'of the cluster nodes, e.g. 10.10.0.0/24, or add '
            f'"{WIDE_EXPORT_KEY}": true beside export_to to export this '
            'widely on purpose')))
    return findings


def _duplicates(param: dict, pattern: Path) -> list[Finding]:
    seen: dict[str, Path] = {}
    findings: list[Finding] = []
    for path, value in select(param, pattern):
        if not isinstance(value, str):
            continue
        if value in seen:
            findings.append((path, f'{show(value)} is given twice (also at '
                             f'{render("", seen[value])})'))
        else:
            seen[value] = path
    return findings


# -- building the model -----------------------------------------------------

def _accept(additional: dict) -> model.ClusterParams:
    params = _build(additional[PARAM_KEY])
    redact.register(*params.secrets())
    return params


def _build(param: dict) -> model.ClusterParams:
    proxy = param.get('proxy')
    storage = param.get('storage_server')
    private_registries, fingerprints = registries.build(param)
    return model.ClusterParams(
        script_path=param['script_path'],
        master=_master(param['master_node']),
        worker=_worker(param['worker_node']),
        vim_name=param.get('vim_name'),
        kubernetes_version=param.get('kubernetes_version'),
        proxy=model.ProxyParams(**proxy) if proxy is not None else None,
        storage_server=_storage(storage) if storage is not None else None,
        pv_registrations=tuple(model.PvRegistration(**entry) for entry
                               in param.get('pv_registration_params', ())),
        registries=private_registries,
        apt_key_fingerprints=fingerprints,
    )


def _master(node: dict) -> model.MasterParams:
    return model.MasterParams(
        ssh_cp_name=node['ssh_cp_name'],
        nic_cp_name=node['nic_cp_name'],
        username=node['username'],
        password=node.get('password'),
        aspect_id=node.get('aspect_id'),
        cluster_cp_name=node['cluster_cp_name'],
        pod_cidr=node.get('pod_cidr', model.DEFAULT_POD_CIDR),
        cluster_cidr=node.get('cluster_cidr', model.DEFAULT_SERVICE_CIDR),
        cluster_fip_name=node.get('cluster_fip_name'),
        lb_port=node.get('lb_port'),
        virtual_router_id=node.get('virtual_router_id'),
    )


def _worker(node: dict) -> model.NodeGroupParams:
    return model.NodeGroupParams(
        ssh_cp_name=node['ssh_cp_name'],
        nic_cp_name=node['nic_cp_name'],
        username=node['username'],
        password=node.get('password'),
        aspect_id=node.get('aspect_id'),
    )


def _storage(storage: dict) -> model.StorageServerParams:
    return model.StorageServerParams(
        ssh_cp_name=storage['ssh_cp_name'],
        username=storage['username'],
        password=storage.get('password'),
        volumes=tuple(model.VolumeSetup(**entry) for entry
                      in storage['cinder_volume_setup_params']),
        exports=tuple(model.NfsExport(**entry) for entry
                      in storage['nfs_server_setup_params']),
    )

"""PersistentVolume manifests of the VNF package, checked and pointed at
the NFS server.

Every manifest is read and checked before any host is touched: a path that
leads outside the package, a file that is not exactly one PersistentVolume
with an NFS source, or an NFS path the storage server does not export is a
ValidationError naming the request field.
"""
from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from kubernetes_mgmt.errors import MgmtDriverError, Problem, ValidationError
from kubernetes_mgmt.params.cluster_params import ClusterParams, PvRegistration
from kubernetes_mgmt.params.package_file import package_file
from kubernetes_mgmt.params.paths import render, show
from kubernetes_mgmt.params.schema import PARAM_KEY

# A DNS-1123 subdomain, as Kubernetes requires of PV names.
_NAME = re.compile(r'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*'
                   r'[a-z0-9])?)*')


@dataclass(frozen=True)
class PvManifest:
    """One PersistentVolume as it is registered."""

    name: str
    source: str                     # path inside the package
    nfs_server: str
    nfs_path: str
    body: dict = field(repr=False, compare=False)


def load_pv_manifests(package_root: Path, params: ClusterParams,
                      nfs_servers: Mapping[str, str]
                      ) -> tuple[PvManifest, ...]:
    """The manifests of ``pv_registration_params``, each with its NFS
    server set to the IP of its ``nfs_server_cp`` (``nfs_servers``:
    port name -> IP, read from Heat)."""
    manifests, problems = [], []
    names: dict[str, int] = {}
    for index, registration in enumerate(params.pv_registrations):
        at = render('additionalParams', (
            PARAM_KEY, 'pv_registration_params', index,
            'pv_manifest_file_path'))
        try:
            manifest = _load(package_root, registration, params,
                             nfs_servers)
        except InvalidManifest as exc:
            problems.append(Problem(at, str(exc)))
            continue
        if manifest.name in names:
            problems.append(Problem(at, (
                f'PersistentVolume {manifest.name!r} is also defined by '
                f'pv_registration_params[{names[manifest.name]}]')))
        names.setdefault(manifest.name, index)
        manifests.append(manifest)
    if problems:
        raise ValidationError(problems)
    return tuple(manifests)


class InvalidManifest(ValueError):
    """What is wrong with one manifest."""


def parse_pv_manifest(source: str, text: str,
                      exports: Sequence[str] = ()) -> tuple[str, dict]:
    """(name, object) of the one NFS PersistentVolume ``text`` defines;
    with ``exports`` (export_dir values) its path must lie in one.
    Raises InvalidManifest."""
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise InvalidManifest(f'{source!r} is not valid YAML: '
                              f'{str(exc).splitlines()[0]}') from None
    if len(docs) != 1:
        raise InvalidManifest(
            f'{source!r} holds {len(docs)} documents; a PV manifest holds '
            'exactly one PersistentVolume')
    if not isinstance(docs[0], dict):
        raise InvalidManifest(f'{source!r} is not a Kubernetes object')
    name, nfs = _check_shape(docs[0], source)
    _check_exported(nfs['path'], source, exports)
    return name, docs[0]


def _load(root: Path, registration: PvRegistration, params: ClusterParams,
          nfs_servers: Mapping[str, str]) -> PvManifest:
    source = registration.pv_manifest_file_path
    storage = params.storage_server
    name, body = parse_pv_manifest(
        source, _read(root, source),
        [e.export_dir for e in storage.exports] if storage else ())
    server = nfs_servers[registration.nfs_server_cp]
    body = copy.deepcopy(body)
    # The parsed object is edited, never the text: a server written in
    # any YAML style is replaced, and nothing else can change.
    body['spec']['nfs']['server'] = server
    return PvManifest(name=name, source=source, nfs_server=server,
                      nfs_path=body['spec']['nfs']['path'], body=body)


def _read(root: Path, source: str) -> str:
    try:
        return package_file(root, source).read_text('utf-8')
    except MgmtDriverError as exc:
        raise InvalidManifest(str(exc)) from None
    except UnicodeDecodeError:
        raise InvalidManifest(f'{source!r} is not UTF-8 text') from None


def _check_shape(body: dict, source: str) -> tuple[str, dict]:
    kind, version = body.get('kind'), body.get('apiVersion')
    if kind != 'PersistentVolume' or version != 'v1':
        raise InvalidManifest(
            f'{source!r} is a {kind or "(no kind)"} '
            f'({version or "no apiVersion"}), not a v1 PersistentVolume')
    name = (body.get('metadata') or {}).get('name')
    if not isinstance(name, str) or not _NAME.fullmatch(name) \
            or len(name) > 253:
        raise InvalidManifest(
            f'{source!r}: metadata.name must be a DNS-1123 subdomain, got '
            f'{show(str(name))}')
    spec = body.get('spec')
    nfs = spec.get('nfs') if isinstance(spec, dict) else None
    if not isinstance(nfs, dict):
        raise InvalidManifest(
            f'{source!r}: PersistentVolume {name!r} has no NFS source '
            '(spec.nfs with server and path)')
    path = nfs.get('path')
    if not isinstance(path, str) or not path.startswith('/'):
        raise InvalidManifest(
            f'{source!r}: spec.nfs.path of PersistentVolume {name!r} must '
            'be an absolute path')
    return name, nfs


def _check_exported(path: str, source: str, exports: Sequence[str]) -> None:
    """With a storage server, the PV must use one of its exports."""
    inside = any(path == d or path.startswith(d.rstrip('/') + '/')
                 for d in exports)
    if exports and not inside:
        raise InvalidManifest(
            f'{source!r}: spec.nfs.path {show(path)} is not exported by '
            f'the storage server (its nfs_server_setup_params export '
            f'{", ".join(exports)})')

"""Validate an instantiation request offline: before any call to the
cluster, the files, their objects and the namespace must all be right.
"""
from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kubernetes_mgmt.cnf import manifests as manifest_files
from kubernetes_mgmt.cnf import namespaces, scope
from kubernetes_mgmt.cnf.manifests import FILES_FIELD, FILES_KEY, Manifest
from kubernetes_mgmt.cnf.records import ResourceRecord
from kubernetes_mgmt.errors import Problem, ValidationError

_UNSUPPORTED = {
    'use_helm': 'Helm charts are not supported by the kubernetes-namespaced '
                'driver; use lcm-kubernetes-def-files',
    'vdu_mapping': 'vdu_mapping is not supported: VDUs are matched to '
                   'workloads by the VDU property "name"',
}


@dataclass(frozen=True)
class Plan:
    """What to create, where, in which order."""

    namespace: namespaces.Choice
    manifests: tuple[Manifest, ...]      # in creation order

    def records(self) -> list[ResourceRecord]:
        return [ResourceRecord(m.api_version, m.kind, m.name)
                for m in self.manifests]

    def bodies(self, namespaced: Callable[[Manifest], bool]) -> list[dict]:
        """Objects ready to send: namespaced ones carry the namespace."""
        result = []
        for m in self.manifests:
            body = copy.deepcopy(m.body)
            if namespaced(m):
                body['metadata']['namespace'] = self.namespace.namespace
            result.append(body)
        return result


def _unsupported(params: dict, problems: list[Problem]) -> None:
    for key, message in _UNSUPPORTED.items():
        value = params.get(key)
        if value not in (None, False, '', 'false', 'False', {}):
            problems.append(Problem(f'additionalParams.{key}', message))


def build(package_dir: Path | str, params: dict | None,
          namespaced: Callable[[Manifest], bool] | None = None) -> Plan:
    """The plan for ``params`` (a request's additionalParams), or a
    ValidationError listing every problem found."""
    params = params or {}
    namespaced = namespaced or (
        lambda m: scope.namespaced_statically(m.kind))
    problems: list[Problem] = []
    _unsupported(params, problems)
    found = manifest_files.read(Path(package_dir),
                                params.get(FILES_KEY),
                                problems)
    choice = namespaces.choose(params.get('namespace'), found, namespaced,
                               problems)
    if not found and not problems:
        problems.append(Problem(FILES_FIELD, 'the files hold no objects'))
    if problems or choice is None:
        raise ValidationError(problems)
    ordered = sorted(found, key=lambda m: scope.create_rank(m.kind))
    return Plan(choice, tuple(ordered))


def is_cnf_instantiate(body: object) -> bool:
    """An Instantiate request for this driver rather than the Mgmt
    Driver's: it names resource files, or its only VIMs are Kubernetes
    VIMs (v1: a list, v2: a map of vimConnectionInfo)."""
    if not isinstance(body, dict):
        return False
    params = body.get('additionalParams')
    if isinstance(params, dict) and FILES_KEY in params:
        return True
    vims = body.get('vimConnectionInfo')
    vims = list(vims.values()) if isinstance(vims, dict) else vims
    types = [str(v.get('vimType', '')).lower() for v in vims or []
             if isinstance(v, dict)]
    return bool(types) and all('kubernetes' in t for t in types)


def shape_problems(params: object) -> list[Problem]:
    """What can be told of a request's additionalParams without its
    package: the options the driver refuses, the file list's form, the
    namespace's name. The files themselves are read by ``build`` (and by
    ``kubernetes-mgmt package verify PACKAGE --request FILE``)."""
    if not isinstance(params, dict):
        return [Problem('additionalParams', f'required: an object with '
                        f'{FILES_KEY}')]
    problems: list[Problem] = []
    _unsupported(params, problems)
    files = params.get(FILES_KEY)
    listed = manifest_files.list_problem(files)
    if listed:
        problems.append(listed)
    else:
        problems += [p for i, v in enumerate(files) if (
            p := manifest_files.form_problem(v, f'{FILES_FIELD}[{i}]'))]
    if params.get('namespace') not in (None, ''):
        problem = namespaces.label_problem(params['namespace'],
                                           namespaces.NAMESPACE_FIELD)
        problems += [problem] if problem else []
    return problems

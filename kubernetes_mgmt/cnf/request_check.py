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
from kubernetes_mgmt.cnf.manifests import FILES_FIELD, Manifest
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
                                params.get('lcm-kubernetes-def-files'),
                                problems)
    choice = namespaces.choose(params.get('namespace'), found, namespaced,
                               problems)
    if not found and not problems:
        problems.append(Problem(FILES_FIELD, 'the files hold no objects'))
    if problems or choice is None:
        raise ValidationError(problems)
    ordered = sorted(found, key=lambda m: scope.create_rank(m.kind))
    return Plan(choice, tuple(ordered))

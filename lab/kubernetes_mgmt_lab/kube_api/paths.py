"""Parse request paths into what they address."""
from __future__ import annotations

from dataclasses import dataclass

from kubernetes_mgmt_lab.kube_api import catalog
from kubernetes_mgmt_lab.kube_api.catalog import ApiKind
from kubernetes_mgmt_lab.kube_api.status import ApiError

_NAMESPACE_SUBRESOURCES = ('status', 'finalize')


@dataclass(frozen=True)
class Target:
    api_kind: ApiKind
    namespace: str | None
    name: str | None
    subresource: str | None = None

    @property
    def rbac_resource(self) -> str:
        plural = self.api_kind.plural
        return f'{plural}/{self.subresource}' if self.subresource else plural

    @property
    def rbac_namespace(self) -> str | None:
        # A namespace is authorized as an object inside itself.
        if self.api_kind.kind == 'Namespace':
            return self.name
        return self.namespace


def split_group_version(parts: list[str]) -> tuple[str, list[str]] | None:
    if parts[:2] == ['api', 'v1']:
        return 'v1', parts[2:]
    if len(parts) >= 3 and parts[0] == 'apis':
        return f'{parts[1]}/{parts[2]}', parts[3:]
    return None


def parse(path: str) -> Target:
    parts = [p for p in path.split('/') if p]
    split = split_group_version(parts)
    if split is None or not split[1]:
        raise ApiError(404, 'the server could not find the requested '
                       'resource')
    group_version, rest = split
    namespace = None
    if (rest[0] == 'namespaces' and len(rest) >= 3
            and rest[2] not in _NAMESPACE_SUBRESOURCES):
        namespace, rest = rest[1], rest[2:]
    api_kind = catalog.lookup(group_version, rest[0])
    if api_kind is None or len(rest) > 3:
        raise ApiError(404, 'the server could not find the requested '
                       'resource')
    if namespace is not None and not api_kind.namespaced:
        raise ApiError(404, f'{api_kind.plural} is not namespaced')
    name = rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else None
    if (subresource == 'scale' and not api_kind.scale) or (
            subresource in catalog.POD_SUBRESOURCES
            and api_kind.kind != 'Pod'):
        raise ApiError(404, 'the server could not find the requested '
                       'resource')
    return Target(api_kind, namespace, name, subresource)

"""Terminate: delete what instantiation recorded, in the reverse of the
creation order, then wait until every object is gone."""
from __future__ import annotations

from dataclasses import dataclass

from kubernetes.dynamic.resource import Resource

from kubernetes_mgmt import redact
from kubernetes_mgmt.cnf import scope
from kubernetes_mgmt.cnf.kube import KubeSession, where
from kubernetes_mgmt.cnf.records import ResourceRecord
from kubernetes_mgmt.cnf.settings import Timings
from kubernetes_mgmt.cnf.waiting import wait_for

LOG = redact.get_logger(__name__)


@dataclass(frozen=True)
class Target:
    record: ResourceRecord
    resource: Resource
    namespace: str | None

    def describe(self) -> str:
        return f'{self.record.describe()}{where(self.namespace)}'


def deletion_order(records: list[ResourceRecord]) -> list[ResourceRecord]:
    """Reverse creation order: by kind rank, later file entries first."""
    indexed = list(enumerate(records))
    indexed.sort(key=lambda ir: (scope.create_rank(ir[1].kind), ir[0]),
                 reverse=True)
    return [record for _, record in indexed]


def targets(session: KubeSession, records: list[ResourceRecord],
            namespace: str) -> list[Target]:
    found = []
    for record in deletion_order(records):
        res = session.resource(record.api_version, record.kind)
        if res is None:
            # The kind is no longer served (a CRD went away): nothing of
            # it can remain to delete.
            LOG.warning('%s: kind no longer served; nothing to delete',
                        record.describe())
            continue
        found.append(Target(record, res, namespace if res.namespaced
                            else None))
    return found


def delete_all(session: KubeSession, found: list[Target],
               grace_seconds: int | None) -> None:
    for target in found:
        if session.delete(target.resource, target.record.name,
                          target.namespace, grace_seconds):
            LOG.info('deleting %s', target.describe())


def wait_gone(session: KubeSession, found: list[Target], timings: Timings,
              deadline: float) -> None:
    def pending() -> str | None:
        for target in found:
            if session.get(target.resource, target.record.name,
                           target.namespace) is not None:
                return f'{target.describe()} to disappear'
        return None
    wait_for(pending, deadline=deadline,
             what=f'deletion of {len(found)} object(s)', timings=timings)

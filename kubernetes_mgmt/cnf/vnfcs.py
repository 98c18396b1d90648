"""VNFC entries: one per pod of a workload, tied to the VDU whose
``name`` property is the workload's name.

``metadata`` keeps, as Tacker's driver does, JSON strings: under the
workload kind its name and apiVersion (no namespace: that is in
vnf_metadata), under ``Pod`` the pod's labels.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from kubernetes_mgmt.cluster.conditions import is_ready
from kubernetes_mgmt.cnf import pods, scope
from kubernetes_mgmt.cnf.errors import CnfError
from kubernetes_mgmt.cnf.kube import KubeSession
from kubernetes_mgmt.cnf.records import ResourceRecord


@dataclass(frozen=True)
class VnfcSpec:
    vdu_id: str | None
    pod_name: str
    kind: str                 # vim_level_resource_type
    metadata: dict[str, str]


@dataclass(frozen=True)
class WorkloadRef:
    """The workload behind a VNFC entry."""

    api_version: str
    kind: str
    name: str


def _view(pod: dict) -> pods.PodView:
    meta = pod.get('metadata') or {}
    return pods.PodView(name=meta['name'], ready=is_ready(pod),
                        terminating=bool(meta.get('deletionTimestamp')),
                        created=meta.get('creationTimestamp') or '',
                        metadata=meta)


def spec_for(record: ResourceRecord, vdu_id: str | None,
             pod: pods.PodView) -> VnfcSpec:
    workload = json.dumps({'name': record.name,
                           'apiVersion': record.api_version})
    pod_meta = json.dumps({'name': pod.name,
                           'labels': pod.metadata.get('labels') or {}})
    return VnfcSpec(vdu_id, pod.name, record.kind,
                    {record.kind: workload, 'Pod': pod_meta})


def workload_of(vnfc) -> WorkloadRef:
    """Which workload a VNFC entry's pod belongs to."""
    kind = vnfc.compute_resource.vim_level_resource_type
    raw = (vnfc.metadata or {}).get(kind)
    try:
        meta = json.loads(raw)
        return WorkloadRef(meta.get('apiVersion', 'apps/v1'), kind,
                           meta['name'])
    except (TypeError, ValueError, KeyError):
        raise CnfError(f'VNFC {vnfc.id}: metadata[{kind!r}] does not name '
                       'its workload; was it created by the '
                       'kubernetes-namespaced driver?') from None


def workload(session: KubeSession, ref: WorkloadRef | ResourceRecord,
             namespace: str) -> dict:
    res = session.resource(ref.api_version, ref.kind)
    obj = session.get(res, ref.name, namespace) if res else None
    if obj is None:
        raise CnfError(f'{ref.kind}/{ref.name} not found in namespace '
                       f'{namespace!r}')
    return obj


def for_records(session: KubeSession, records: list[ResourceRecord],
                namespace: str, vdu_ids: dict[str, str]) -> list[VnfcSpec]:
    """One entry per pod of every workload in ``records``."""
    specs = []
    for record in records:
        if record.kind == 'Pod' and record.name in vdu_ids:
            obj = workload(session, record, namespace)
            specs.append(spec_for(record, vdu_ids[record.name],
                                  _view(obj)))
            continue
        if record.kind not in scope.WORKLOAD_KINDS:
            continue
        vdu_id = vdu_ids.get(record.name)
        if vdu_id is None:
            # Tacker requires a VDU per VNFC: a helper workload that no
            # VDU describes gets no entries.
            continue
        obj = workload(session, record, namespace)
        for pod in pods.of_workload(session, obj, namespace):
            if not pod.terminating:
                specs.append(spec_for(record, vdu_id, pod))
    return specs

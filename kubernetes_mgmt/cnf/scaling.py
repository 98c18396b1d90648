"""Scale: move a workload's replicas by an aspect's delta through the
scale subresource, then wait for its pods to settle.

The aspect's VDUs come from the VNFD (``VduScalingAspectDeltas``
targets); the workload is the recorded scalable object whose name is
the VDU's ``name`` property, and the VDU's ``vdu_profile`` bounds the
result (as in Tacker's own driver).
"""
from __future__ import annotations

from dataclasses import dataclass

from kubernetes_mgmt.cnf import pods, scope
from kubernetes_mgmt.cnf.errors import CnfError
from kubernetes_mgmt.cnf.kube import KubeSession
from kubernetes_mgmt.cnf.records import ResourceRecord
from kubernetes_mgmt.cnf.settings import Timings
from kubernetes_mgmt.cnf.vnfcs import workload
from kubernetes_mgmt.cnf.waiting import wait_for


@dataclass(frozen=True)
class ScaleTarget:
    aspect_id: str
    vdu_id: str
    record: ResourceRecord
    min_replicas: int | None
    max_replicas: int | None


def find_target(aspect_id: str, vdu_defs: dict[str, dict],
                records: list[ResourceRecord]) -> ScaleTarget:
    by_name = {r.name: r for r in records if r.kind in scope.SCALABLE_KINDS}
    for vdu_id, node in (vdu_defs or {}).items():
        props = (node or {}).get('properties') or {}
        record = by_name.get(props.get('name'))
        if record is not None:
            profile = props.get('vdu_profile') or {}
            return ScaleTarget(aspect_id, vdu_id, record,
                               profile.get('min_number_of_instances'),
                               profile.get('max_number_of_instances'))
    names = sorted((n.get('properties') or {}).get('name') or vdu
                   for vdu, n in (vdu_defs or {}).items())
    raise CnfError(
        f'aspect {aspect_id!r}: no Deployment, StatefulSet or ReplicaSet '
        f'of this VNF is named like its VDUs ({", ".join(names) or "none"}'
        '; the VDU property "name" must be the workload name)')


def new_replicas(target: ScaleTarget, current: int, action: str,
                 delta: int) -> int:
    if action not in ('out', 'in'):
        raise CnfError(f'unknown scale action {action!r}')
    wanted = current + delta if action == 'out' else current - delta
    low = target.min_replicas if target.min_replicas is not None else 0
    high = target.max_replicas
    if wanted < low or (high is not None and wanted > high):
        raise CnfError(
            f'scale {action} of aspect {target.aspect_id!r} would take '
            f'{target.record.describe()} from {current} to {wanted} '
            f'replicas, outside the VDU {target.vdu_id} profile '
            f'[{low}, {high if high is not None else "unbounded"}]')
    return wanted


def scale(session: KubeSession, target: ScaleTarget, namespace: str,
          action: str, delta: int) -> int:
    """Apply one step; returns the new replica count."""
    res = session.resource(target.record.api_version, target.record.kind)
    if res is None:
        raise CnfError(f'{target.record.describe()}: kind not served')
    current = session.read_scale(res, target.record.name, namespace)
    replicas = new_replicas(target, int(current['spec'].get('replicas') or 0),
                            action, delta)
    session.set_replicas(res, target.record.name, namespace, replicas)
    return replicas


def wait_scaled(session: KubeSession, target: ScaleTarget, namespace: str,
                timings: Timings) -> None:
    def pending() -> str | None:
        obj = workload(session, target.record, namespace)
        wanted = int((obj.get('spec') or {}).get('replicas') or 0)
        reason = pods.settled(pods.of_workload(session, obj, namespace),
                              wanted)
        return f'{target.record.describe()}: {reason}' if reason else None
    wait_for(pending, deadline=timings.scale,
             what=f'scaling of aspect {target.aspect_id!r}', timings=timings)

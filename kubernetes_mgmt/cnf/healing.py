"""Heal VNFCs: delete the pod of each; its controller starts a
replacement (a bare Pod is re-created from its own spec). Then wait for
the replacements to be Ready and give the VNFC entries their new pod
names."""
from __future__ import annotations

import copy

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster.conditions import is_ready
from kubernetes_mgmt.cnf import pods, scope
from kubernetes_mgmt.cnf.errors import CnfError
from kubernetes_mgmt.cnf.kube import KubeSession
from kubernetes_mgmt.cnf.settings import Timings
from kubernetes_mgmt.cnf.vnfcs import WorkloadRef, workload, workload_of
from kubernetes_mgmt.cnf.waiting import wait_for

LOG = redact.get_logger(__name__)
POD_NOT_FOUND = 'POD_NOT_FOUND'     # Tacker's marker for a vanished pod
_SERVER_FIELDS = ('uid', 'resourceVersion', 'creationTimestamp',
                  'generation', 'managedFields', 'deletionTimestamp',
                  'deletionGracePeriodSeconds', 'ownerReferences')


def select(vnfcs: list, wanted_ids: list[str] | None) -> list:
    """The VNFC entries a heal request names (all when it names none)."""
    if not wanted_ids:
        return list(vnfcs)
    known = {v.id for v in vnfcs}
    unknown = [i for i in wanted_ids if i not in known]
    if unknown:
        raise CnfError(f'healVnfRequest.vnfcInstanceId: unknown VNFC '
                       f'instance(s) {", ".join(unknown)}')
    return [v for v in vnfcs if v.id in wanted_ids]


def _kind(vnfc) -> str:
    kind = vnfc.compute_resource.vim_level_resource_type
    if kind != 'Pod' and kind not in scope.WORKLOAD_KINDS:
        raise CnfError(f'VNFC {vnfc.id} is a {kind}, which cannot be '
                       'healed (only pods and pods of workloads can)')
    return kind


def _recreate_pod(session: KubeSession, name: str, namespace: str,
                  timings: Timings) -> None:
    res = session.resource('v1', 'Pod')
    pod = session.get(res, name, namespace)
    if pod is None:
        raise CnfError(f'Pod/{name} not found in namespace {namespace!r}')
    session.delete(res, name, namespace)
    wait_for(lambda: None if session.get(res, name, namespace) is None
             else f'Pod/{name} to go', deadline=timings.heal,
             what=f'removal of Pod/{name}', timings=timings)
    body = {'apiVersion': 'v1', 'kind': 'Pod',
            'metadata': {k: v for k, v in copy.deepcopy(
                pod['metadata']).items() if k not in _SERVER_FIELDS},
            'spec': pod['spec']}
    session.create(res, body, namespace)


def heal(session: KubeSession, targets: list, namespace: str,
         timings: Timings) -> None:
    res = session.resource('v1', 'Pod')
    for vnfc in targets:
        kind = _kind(vnfc)
        name = vnfc.compute_resource.resource_id
        if kind == 'Pod':
            _recreate_pod(session, name, namespace, timings)
        elif not session.delete(res, name, namespace):
            LOG.warning('VNFC %s: pod %s was already gone', vnfc.id, name)
            vnfc.compute_resource.resource_id = POD_NOT_FOUND
        else:
            LOG.info('VNFC %s: deleted pod %s in namespace %s', vnfc.id,
                     name, namespace)


def _workloads(targets: list) -> dict[WorkloadRef, list[str]]:
    refs: dict[WorkloadRef, list[str]] = {}
    for vnfc in targets:
        if _kind(vnfc) != 'Pod':
            refs.setdefault(workload_of(vnfc), []).append(
                vnfc.compute_resource.resource_id)
    return refs


def wait_healed(session: KubeSession, targets: list, namespace: str,
                timings: Timings) -> None:
    refs = _workloads(targets)
    bare = [v.compute_resource.resource_id for v in targets
            if _kind(v) == 'Pod']
    pod_res = session.resource('v1', 'Pod')

    def pending() -> str | None:
        for ref, old in refs.items():
            obj = workload(session, ref, namespace)
            views = pods.of_workload(session, obj, namespace)
            # A StatefulSet brings a pod back under its old name; then
            # "settled" (nothing terminating, all ready) is the signal.
            still = [p.name for p in views if p.name in old]
            if still and ref.kind != 'StatefulSet':
                return f'old pod(s) {", ".join(still)} to go'
            wanted = int((obj.get('spec') or {}).get('replicas') or 0) \
                if ref.kind != 'DaemonSet' else len(
                    [p for p in views if not p.terminating])
            reason = pods.settled(views, wanted)
            if reason:
                return f'{ref.kind}/{ref.name}: {reason}'
        for name in bare:
            pod = session.get(pod_res, name, namespace)
            if pod is None or not is_ready(pod):
                return f'Pod/{name} to be ready'
        return None
    wait_for(pending, deadline=timings.heal,
             what=f'healing of {len(targets)} VNFC(s)', timings=timings)


def rename(session: KubeSession, all_vnfcs: list, targets: list,
           namespace: str) -> None:
    """Give each healed VNFC of a workload a pod no entry names yet.

    Idempotent: Tacker 16 calls ``post_heal_vnf`` twice for one heal (its
    VnfLcmDriver, then its conductor); a VNFC already naming a live pod
    of its workload keeps it."""
    for ref in _workloads(targets):
        if ref.kind == 'StatefulSet':
            continue          # its pods keep their names
        obj = workload(session, ref, namespace)
        live = [p.name for p in pods.of_workload(session, obj, namespace)
                if not p.terminating]
        named = {v.compute_resource.resource_id for v in all_vnfcs}
        fresh = [name for name in live if name not in named]
        for vnfc in targets:
            if _kind(vnfc) == 'Pod' or workload_of(vnfc) != ref or \
                    vnfc.compute_resource.resource_id in live:
                continue
            if not fresh:
                raise CnfError(f'VNFC {vnfc.id}: no replacement pod of '
                               f'{ref.kind}/{ref.name} found')
            old, vnfc.compute_resource.resource_id = (
                vnfc.compute_resource.resource_id, fresh.pop(0))
            LOG.info('VNFC %s: pod %s replaced by %s', vnfc.id, old,
                     vnfc.compute_resource.resource_id)

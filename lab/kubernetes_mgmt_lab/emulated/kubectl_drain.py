"""``kubectl drain``: cordon, then evict the node's pods, honouring
DaemonSets, emptyDir data, bare pods and PodDisruptionBudgets."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from kubernetes_mgmt_lab.emulated import cluster, selectors, store, tokens
from kubernetes_mgmt_lab.emulated.flags import Flag
from kubernetes_mgmt_lab.emulated.kubectl_common import KubectlError, Session
from kubernetes_mgmt_lab.emulated.kubectl_nodes import set_unschedulable
from kubernetes_mgmt_lab.emulated.runner import CommandError

FLAGS = [Flag('ignore-daemonsets', value=False),
         Flag('delete-emptydir-data', value=False),
         Flag('force', value=False), Flag('timeout'),
         Flag('grace-period'), Flag('disable-eviction', value=False),
         Flag('pod-selector'), Flag('selector', short='l'),
         Flag('skip-wait-for-delete-timeout'), Flag('chunk-size'),
         Flag('dry-run')]
RETRY_NOTICE = 5.0      # kubectl retries a blocked eviction every 5 s


def go_duration(seconds: float) -> str:
    secs = int(seconds)
    if secs < 60:
        return f'{secs}s'
    mins, secs = divmod(secs, 60)
    if mins < 60:
        return f'{mins}m{secs}s'
    hours, mins = divmod(mins, 60)
    return f'{hours}h{mins}m{secs}s'


@dataclass
class Plan:
    evict: list[dict] = field(default_factory=list)
    warnings: dict[str, list[str]] = field(default_factory=dict)
    errors: dict[str, list[str]] = field(default_factory=dict)


def _ref(pod: dict) -> str:
    return f'{pod["metadata"]["namespace"]}/{pod["metadata"]["name"]}'


def _controller(pod: dict) -> str | None:
    for ref in pod['metadata'].get('ownerReferences', []):
        if ref.get('controller'):
            return ref['kind']
    return None


def _classify(session: Session, pod: dict, plan: Plan) -> None:
    opts = session.opts
    meta = pod['metadata']
    if 'kubernetes.io/config.mirror' in meta.get('annotations', {}):
        return
    finished = pod['status'].get('phase') in ('Succeeded', 'Failed')
    owner = _controller(pod)
    if owner == 'DaemonSet' and not finished:
        bucket = plan.warnings if opts.get('ignore-daemonsets') else \
            plan.errors
        key = 'ignoring DaemonSet-managed Pods' if opts.get(
            'ignore-daemonsets') else 'cannot delete DaemonSet-managed ' \
            'Pods (use --ignore-daemonsets to ignore)'
        bucket.setdefault(key, []).append(_ref(pod))
        return
    if owner is None and not finished:
        if not opts.get('force'):
            plan.errors.setdefault(
                'cannot delete Pods that declare no controller (use '
                '--force to override)', []).append(_ref(pod))
            return
        plan.warnings.setdefault('deleting Pods that declare no '
                                 'controller', []).append(_ref(pod))
    if any('emptyDir' in v for v in pod['spec'].get('volumes', [])):
        if not opts.get('delete-emptydir-data'):
            plan.errors.setdefault(
                'cannot delete Pods with local storage (use '
                '--delete-emptydir-data to override)', []).append(_ref(pod))
            return
        plan.warnings.setdefault('deleting Pods with local storage',
                                 []).append(_ref(pod))
    plan.evict.append(pod)


def _plan(session: Session, node: str) -> Plan:
    plan = Plan()
    chosen = session.opts.get('pod-selector')
    for pod in cluster.objects_of(session.read(), 'Pod'):
        if pod['spec'].get('nodeName') == node and \
                selectors.match_labels(chosen, pod):
            _classify(session, pod, plan)
    return plan


def _blocked(state: dict, pod: dict) -> bool:
    """Would evicting ``pod`` violate a PodDisruptionBudget?"""
    ns = pod['metadata']['namespace']
    for pdb in cluster.objects_of(state, 'PodDisruptionBudget'):
        if pdb['metadata'].get('namespace') != ns:
            continue
        labels = (pdb.get('spec', {}).get('selector') or {}).get(
            'matchLabels') or {}
        pod_labels = pod['metadata'].get('labels') or {}
        if not labels or any(pod_labels.get(k) != v
                             for k, v in labels.items()):
            continue
        if _allowed(state, pdb, labels) <= 0:
            return True
    return False


def _allowed(state: dict, pdb: dict, labels: dict) -> int:
    status = pdb.get('status') or {}
    if 'disruptionsAllowed' in status:
        return int(status['disruptionsAllowed'])
    healthy = sum(
        1 for p in cluster.objects_of(state, 'Pod')
        if p['metadata'].get('namespace') == pdb['metadata']['namespace']
        and p['status'].get('phase') == 'Running'
        and all((p['metadata'].get('labels') or {}).get(k) == v
                for k, v in labels.items()))
    spec = pdb.get('spec', {})
    if 'minAvailable' in spec:
        return healthy - int(str(spec['minAvailable']).rstrip('%'))
    return int(str(spec.get('maxUnavailable', 1)).rstrip('%'))


def _evict_once(session: Session, pod: dict) -> bool:
    """Evict if no budget forbids it; True when the pod is gone."""
    with store.mutate(session.cluster_dir) as state:
        name, ns = pod['metadata']['name'], pod['metadata']['namespace']
        live = cluster.find(state, 'Pod', name, ns)
        if live is None:
            return True
        if not session.opts.get('disable-eviction') and \
                _blocked(state, live):
            return False
        cluster.remove(state, 'Pod', name, ns)
        cluster.reconcile(state)
        return True


def _evict(session: Session, pod: dict, deadline: float | None) -> None:
    name, ns = pod['metadata']['name'], pod['metadata']['namespace']
    session.ctx.out(f'evicting pod {ns}/{name}')
    last_notice = 0.0
    while not _evict_once(session, pod):
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            raise _DrainTimeout(f'error when evicting pods/"{name}" -n '
                                f'"{ns}": global timeout reached: ')
        if now - last_notice >= RETRY_NOTICE:
            session.ctx.err(f'error when evicting pods/"{name}" -n "{ns}" '
                            '(will retry after 5s): Cannot evict pod as it '
                            "would violate the pod's disruption budget.")
            last_notice = now
        time.sleep(0.2 if deadline is None else
                   max(0.0, min(0.2, deadline - now)))
    session.ctx.out(f'pod/{name} evicted')


class _DrainTimeout(Exception):
    pass


def _pending(node: str, reason: str) -> CommandError:
    return CommandError(f'error: unable to drain node "{node}" due to '
                        f'error: {reason}, continuing command...\nThere '
                        f'are pending nodes to be drained:\n {node}\n'
                        f'{reason}', 1)


def _drain_node(session: Session, node: str, timeout: float) -> None:
    session.ctx.out(set_unschedulable(session, node, True))
    plan = _plan(session, node)
    if plan.errors:
        reason = ', '.join(f'{k}: {", ".join(v)}'
                           for k, v in plan.errors.items())
        raise _pending(node, reason)
    for text, refs in plan.warnings.items():
        session.ctx.err(f'Warning: {text}: {", ".join(refs)}')
    deadline = time.monotonic() + timeout if timeout else None
    for pod in plan.evict:
        try:
            _evict(session, pod, deadline)
        except _DrainTimeout as e:
            raise _pending(node, f'[{e}{go_duration(timeout)}]') from None
    session.ctx.out(f'node/{node} drained')


def run(session: Session) -> int:
    opts = session.opts
    names = [a.split('/', 1)[-1] for a in opts.args]
    if not names:
        raise KubectlError('USAGE: drain NODE [flags]')
    try:
        timeout = tokens.parse_duration(opts.get('timeout') or '0s')
    except ValueError as e:
        raise KubectlError(f'invalid argument "{opts.get("timeout")}" for '
                           f'"--timeout" flag: {e}') from None
    for name in names:
        _drain_node(session, name, timeout)
    return 0

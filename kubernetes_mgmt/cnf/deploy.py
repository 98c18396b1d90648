"""Instantiate: put a validated plan into the cluster.

Order: resolve every kind through discovery and re-check the namespace
choice with the served scopes; find out whether the namespace exists
(403 on that GET means "cannot tell": assume it does); create it if
missing; dry-run every object (this checks permissions and admission
before anything is kept); create them; wait until all are ready.
A failure before the last create undoes what this call created, so an
error leaves the cluster as it found it.
"""
from __future__ import annotations

from dataclasses import dataclass

from kubernetes.dynamic.resource import Resource

from kubernetes_mgmt import redact
from kubernetes_mgmt.cnf import namespaces, readiness, scope
from kubernetes_mgmt.cnf.errors import CnfError, KubernetesCallFailed
from kubernetes_mgmt.cnf.kube import KubeSession
from kubernetes_mgmt.cnf.manifests import FILES_FIELD, Manifest
from kubernetes_mgmt.cnf.request_check import Plan
from kubernetes_mgmt.cnf.settings import Timings
from kubernetes_mgmt.cnf.waiting import wait_for
from kubernetes_mgmt.errors import Problem, ValidationError

LOG = redact.get_logger(__name__)
OWNER_LABEL = 'kubernetes-mgmt.tacker.openstack.org/vnf-instance'


@dataclass(frozen=True)
class Item:
    manifest: Manifest
    resource: Resource
    body: dict

    @property
    def namespace(self) -> str | None:
        return self.body['metadata'].get('namespace')

    def describe(self) -> str:
        return self.manifest.describe()


def resolve(session: KubeSession, plan: Plan, owner: str,
            replicas: dict[str, int]) -> list[Item]:
    """Every object with its served resource, ready to send."""
    problems, served = [], {}
    for m in plan.manifests:
        res = session.resource(m.api_version, m.kind)
        if res is None:
            problems.append(Problem(FILES_FIELD, (
                f'{m.describe()}: kind {m.kind!r} of apiVersion '
                f'{m.api_version!r} is not served by the cluster')))
        served[m] = res
    if problems:
        raise ValidationError(problems)
    discovered = namespaces.choose(
        plan.namespace.namespace, list(plan.manifests),
        lambda m: served[m].namespaced, problems)
    if problems or discovered is None:
        raise ValidationError(problems)
    items = []
    for m, body in zip(plan.manifests, plan.bodies(
            lambda m: served[m].namespaced), strict=True):
        body['metadata'].setdefault('labels', {})[OWNER_LABEL] = owner
        if m.kind in scope.SCALABLE_KINDS and m.name in replicas:
            body.setdefault('spec', {})['replicas'] = replicas[m.name]
        items.append(Item(m, served[m], body))
    return items


def namespace_exists(session: KubeSession, namespace: str) -> bool:
    """False only when the API says it is not there. A token bound to a
    Role may not read namespaces: then assume it exists (the Role's
    binding lives in it)."""
    res = session.resource('v1', 'Namespace')
    try:
        return session.get(res, namespace, None) is not None
    except KubernetesCallFailed as exc:
        if exc.status == 403:
            LOG.info('cannot read namespace %s (403); assuming it exists',
                     namespace)
            return True
        raise


def create_namespace(session: KubeSession, namespace: str) -> None:
    res = session.resource('v1', 'Namespace')
    try:
        session.create(res, {'apiVersion': 'v1', 'kind': 'Namespace',
                             'metadata': {'name': namespace}}, None)
    except KubernetesCallFailed as exc:
        raise CnfError(
            f'namespace {namespace!r} does not exist and could not be '
            f'created: {exc}') from None


def _ours(session: KubeSession, item: Item, owner: str) -> bool:
    existing = session.get(item.resource, item.manifest.name, item.namespace)
    labels = ((existing or {}).get('metadata') or {}).get('labels') or {}
    return labels.get(OWNER_LABEL) == owner


def preflight(session: KubeSession, items: list[Item], owner: str
              ) -> list[Item]:
    """Dry-run every create; the items that still need creating (those
    left by an earlier try of this same instantiation are skipped)."""
    failures, todo = [], []
    for item in items:
        try:
            session.create(item.resource, item.body, item.namespace,
                           dry_run=True)
            todo.append(item)
        except KubernetesCallFailed as exc:
            if exc.status == 409 and _ours(session, item, owner):
                continue
            if exc.status == 409:
                failures.append(f'{exc} (it belongs to something else)')
            else:
                failures.append(str(exc))
    if failures:
        raise CnfError('the cluster would refuse this CNF; nothing was '
                       'created:\n  ' + '\n  '.join(failures))
    return todo


def create_all(session: KubeSession, items: list[Item]) -> list[Item]:
    created: list[Item] = []
    for item in items:
        try:
            session.create(item.resource, item.body, item.namespace)
        except KubernetesCallFailed as exc:
            raise _Partial(created, exc) from None
        created.append(item)
        LOG.info('created %s in namespace %s', item.describe(),
                 item.namespace)
    return created


class _Partial(Exception):
    def __init__(self, created: list[Item], cause: KubernetesCallFailed):
        super().__init__(str(cause))
        self.created = created
        self.cause = cause


def undo(session: KubeSession, items: list[Item],
         namespace: str | None) -> list[str]:
    """Delete what this call created; what could not be undone."""
    left = []
    for item in reversed(items):
        try:
            session.delete(item.resource, item.manifest.name, item.namespace)
        except KubernetesCallFailed as exc:
            left.append(str(exc))
    if namespace:
        try:
            session.delete(session.resource('v1', 'Namespace'), namespace,
                           None)
        except KubernetesCallFailed as exc:
            left.append(str(exc))
    return left


def wait_ready(session: KubeSession, items: list[Item], timings: Timings,
               deadline: float | None = None) -> None:
    def pending() -> str | None:
        for item in items:
            obj = session.get(item.resource, item.manifest.name,
                              item.namespace)
            if obj is None:
                return f'{item.describe()} to appear'
            reason = readiness.not_ready(item.manifest.kind, obj)
            if reason:
                return f'{item.describe()}: {reason}'
        return None
    wait_for(pending, deadline=deadline or timings.ready,
             what=f'readiness of {len(items)} object(s)', timings=timings)


def create(session: KubeSession, plan: Plan, owner: str,
           replicas: dict[str, int]) -> list[Item]:
    """Create the plan's objects (not waiting for them); all or none."""
    items = resolve(session, plan, owner, replicas)
    namespace = plan.namespace.namespace
    made_namespace = None
    if not namespace_exists(session, namespace):
        create_namespace(session, namespace)
        made_namespace = namespace
    try:
        todo = preflight(session, items, owner)
        create_all(session, todo)
    except (CnfError, _Partial) as exc:
        created = exc.created if isinstance(exc, _Partial) else []
        left = undo(session, created, made_namespace)
        message = str(exc.cause if isinstance(exc, _Partial) else exc)
        if created or made_namespace:
            message += ('\nwhat this call had created was deleted again'
                        if not left else
                        '\ncould not undo: ' + '; '.join(left))
        raise CnfError(message) from None
    return items

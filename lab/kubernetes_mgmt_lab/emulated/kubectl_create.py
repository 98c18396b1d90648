"""``kubectl create namespace|serviceaccount|secret generic|
clusterrolebinding|rolebinding|role|clusterrole|token`` and
``create -f``."""
from __future__ import annotations

import base64

from kubernetes_mgmt_lab.emulated import (
    cluster,
    controllers,
    kinds,
    objects,
    store,
)
from kubernetes_mgmt_lab.emulated import kubectl_apply as apply
from kubernetes_mgmt_lab.emulated import kubectl_output as output
from kubernetes_mgmt_lab.emulated.flags import Flag
from kubernetes_mgmt_lab.emulated.kubectl_common import (
    KubectlError,
    Session,
    not_found,
)
from kubernetes_mgmt_lab.emulated.runner import CommandError

FLAGS = [
    *apply.FLAGS, Flag('clusterrole'), Flag('role'),
    Flag('serviceaccount', multi=True), Flag('user', multi=True),
    Flag('group', multi=True), Flag('from-literal', multi=True),
    Flag('type'), Flag('duration'), Flag('verb', multi=True),
    Flag('resource', multi=True), Flag('resource-name', multi=True),
    Flag('audience', multi=True), Flag('bound-object-kind'),
    Flag('bound-object-name')]
RBAC = 'rbac.authorization.k8s.io/v1'


def _subjects(session: Session) -> list[dict]:
    subjects = []
    for item in session.opts.list('serviceaccount'):
        ns, sep, name = item.partition(':')
        if not sep:
            raise KubectlError('serviceaccount must be <namespace>:<name>')
        subjects.append({'kind': 'ServiceAccount', 'name': name,
                         'namespace': ns})
    for user in session.opts.list('user'):
        subjects.append({'apiGroup': 'rbac.authorization.k8s.io',
                         'kind': 'User', 'name': user})
    for group in session.opts.list('group'):
        subjects.append({'apiGroup': 'rbac.authorization.k8s.io',
                         'kind': 'Group', 'name': group})
    return subjects


def _binding(session: Session, kind: str, name: str) -> dict:
    role = session.opts.get('clusterrole') or session.opts.get('role')
    if not role:
        raise KubectlError('exactly one of clusterrole or role must be '
                           'specified')
    ref_kind = 'ClusterRole' if session.opts.get('clusterrole') else 'Role'
    ns = session.namespace() if kind == 'RoleBinding' else None
    return {'apiVersion': RBAC, 'kind': kind,
            'metadata': objects.new_meta(name, ns),
            'roleRef': {'apiGroup': 'rbac.authorization.k8s.io',
                        'kind': ref_kind, 'name': role},
            'subjects': _subjects(session)}


def _role(session: Session, kind: str, name: str) -> dict:
    verbs = [v for item in session.opts.list('verb')
             for v in item.split(',')]
    resources = [r for item in session.opts.list('resource')
                 for r in item.split(',')]
    if not verbs or not resources:
        raise KubectlError('at least one verb and resource must be '
                           'specified')
    rule = {'apiGroups': [''], 'resources': resources, 'verbs': verbs}
    ns = session.namespace() if kind == 'Role' else None
    return {'apiVersion': RBAC, 'kind': kind,
            'metadata': objects.new_meta(name, ns), 'rules': [rule]}


def _secret(session: Session, name: str) -> dict:
    data = {}
    for item in session.opts.list('from-literal'):
        key, sep, value = item.partition('=')
        if not sep:
            raise KubectlError(f'invalid literal source {item}, expected '
                               'key=value')
        data[key] = base64.b64encode(value.encode()).decode()
    return {'apiVersion': 'v1', 'kind': 'Secret',
            'metadata': objects.new_meta(name, session.namespace()),
            'type': session.opts.get('type') or 'Opaque', 'data': data}


def _build(session: Session, what: str, name: str) -> dict:
    ns = session.namespace()
    if what in ('namespace', 'ns'):
        return objects.namespace(name)
    if what in ('serviceaccount', 'sa'):
        return objects.service_account(name, ns)
    if what == 'clusterrolebinding':
        return _binding(session, 'ClusterRoleBinding', name)
    if what == 'rolebinding':
        return _binding(session, 'RoleBinding', name)
    if what in ('role', 'clusterrole'):
        return _role(session, 'Role' if what == 'role' else 'ClusterRole',
                     name)
    raise KubectlError(f'unknown command "{what}" for "kubectl create"')


def _store_new(session: Session, obj: dict) -> None:
    kind = kinds.for_object(obj)
    meta = obj['metadata']
    with store.mutate(session.cluster_dir) as state:
        ns = meta.get('namespace')
        if kind.namespaced and cluster.find(state, 'Namespace', ns) is None:
            raise CommandError(f'error: failed to create {kind.ref}: '
                               f'namespaces "{ns}" not found', 1)
        if cluster.find(state, obj['kind'], meta['name'], ns) is not None:
            raise CommandError(f'error: failed to create {kind.ref}: '
                               f'{kind.resource} "{meta["name"]}" already '
                               'exists', 1)
        cluster.put(state, obj)
        cluster.reconcile(state)


def _token(session: Session, sa: str) -> int:
    ns = session.namespace()
    with store.mutate(session.cluster_dir) as state:
        account = cluster.find(state, 'ServiceAccount', sa, ns)
        if account is None:
            raise not_found(kinds.BY_KIND['ServiceAccount'], sa)
        token = controllers.make_token(ns, sa, account['metadata']['uid'])
        state['cluster'].setdefault('issued_tokens', []).append(token)
    session.ctx.out(token)
    return 0


def run(session: Session) -> int:
    args = session.opts.args
    if session.opts.list('filename'):
        return apply.run_guarded(session, create=True)
    if len(args) < 2:
        raise KubectlError('must specify one of -f and -k')
    if args[0] == 'token':
        return _token(session, args[1])
    if args[0] == 'secret':
        if len(args) < 3 or args[1] != 'generic':
            raise KubectlError('only "create secret generic" is emulated')
        obj = _secret(session, args[2])
    else:
        obj = _build(session, args[0], args[1])
    kind = kinds.for_object(obj)
    dry = session.opts.get('dry-run') or 'none'
    if dry != 'none':
        fmt = session.opts.get('output')
        session.ctx.out(output.render(fmt, [obj], True) if fmt else
                        f'{kind.ref}/{obj["metadata"]["name"]} created '
                        '(dry run)')
        return 0
    _store_new(session, obj)
    session.ctx.out(f'{kind.ref}/{obj["metadata"]["name"]} created')
    return 0

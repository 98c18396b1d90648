"""``kubectl cordon|uncordon|taint``."""
from __future__ import annotations

import copy
import re

from kubernetes_mgmt_lab.emulated import cluster, kinds, selectors, store
from kubernetes_mgmt_lab.emulated.flags import Flag
from kubernetes_mgmt_lab.emulated.kubectl_common import (
    KubectlError,
    Session,
    not_found,
)
from kubernetes_mgmt_lab.emulated.runner import CommandError

CORDON_FLAGS = [Flag('selector', short='l'), Flag('dry-run')]
TAINT_FLAGS = [Flag('all', value=False), Flag('overwrite', value=False),
               Flag('selector', short='l'), Flag('dry-run')]
NODE = kinds.BY_KIND['Node']


def _node_names(session: Session, args: list[str]) -> list[str]:
    names = [a.split('/', 1)[1] if a.startswith(('node/', 'nodes/'))
             else a for a in args]
    if session.opts.get('selector'):
        state = session.read()
        names += [n['metadata']['name']
                  for n in cluster.objects_of(state, 'Node')
                  if selectors.match_labels(session.opts.get('selector'),
                                            n)]
    if not names:
        raise KubectlError('USAGE: cordon NODE [flags]')
    return names


def set_unschedulable(session: Session, name: str, value: bool) -> str:
    """Returns kubectl's message, raises NotFound."""
    with store.mutate(session.cluster_dir) as state:
        node = cluster.find(state, 'Node', name)
        if node is None:
            raise not_found(NODE, name)
        was = bool(node['spec'].get('unschedulable'))
        if was == value:
            word = 'cordoned' if value else 'uncordoned'
            return f'node/{name} already {word}'
        if value:
            node['spec']['unschedulable'] = True
            node['spec'].setdefault('taints', []).append(
                {'key': 'node.kubernetes.io/unschedulable',
                 'effect': 'NoSchedule'})
        else:
            node['spec'].pop('unschedulable', None)
            node['spec']['taints'] = [
                t for t in node['spec'].get('taints', [])
                if t['key'] != 'node.kubernetes.io/unschedulable']
            if not node['spec']['taints']:
                node['spec'].pop('taints')
        cluster.put(state, node)
        cluster.reconcile(state)
    return f'node/{name} {"cordoned" if value else "uncordoned"}'


def cordon(session: Session, value: bool) -> int:
    for name in _node_names(session, session.opts.args):
        session.ctx.out(set_unschedulable(session, name, value))
    return 0


def _parse_taint(spec: str) -> tuple[dict, bool]:
    remove = spec.endswith('-')
    spec = spec.rstrip('-')
    m = re.fullmatch(r'([^=:]+)(?:=([^:]*))?(?::(\w+))?', spec)
    if not m or (not remove and not m.group(3)):
        raise KubectlError(f'invalid taint spec: {spec}')
    taint = {'key': m.group(1)}
    if m.group(2):
        taint['value'] = m.group(2)
    if m.group(3):
        if m.group(3) not in ('NoSchedule', 'PreferNoSchedule',
                              'NoExecute'):
            raise KubectlError(f'invalid taint effect: {m.group(3)}, '
                               'unsupported taint effect')
        taint['effect'] = m.group(3)
    return taint, remove


def _apply_taint(node: dict, taint: dict, remove: bool,
                 overwrite: bool) -> bool:
    taints = node['spec'].setdefault('taints', [])
    same = [t for t in taints if t['key'] == taint['key'] and
            (not taint.get('effect') or t['effect'] == taint['effect'])]
    if remove:
        if not same:
            return False
        taints[:] = [t for t in taints if t not in same]
    elif same:
        if not overwrite:
            raise KubectlError(f'node {node["metadata"]["name"]} already '
                               f'has {taint["key"]} taint(s) with same '
                               'effect(s) and --overwrite is false')
        taints[taints.index(same[0])] = taint
    else:
        taints.append(taint)
    if not taints:
        node['spec'].pop('taints')
    return True


def _taint_node(session: Session, state: dict, name: str,
                specs: list[str]) -> str:
    node = cluster.find(state, 'Node', name)
    if node is None:
        raise not_found(NODE, name)
    removed = False
    for spec in specs:
        parsed, remove = _parse_taint(spec)
        if not _apply_taint(node, parsed, remove,
                            bool(session.opts.get('overwrite'))):
            raise KubectlError(f'taint "{spec.rstrip("-")}" not found')
        removed = removed or remove
    cluster.put(state, node)
    return f'node/{name} {"untainted" if removed else "tainted"}'


def taint(session: Session) -> int:
    args = [a for a in session.opts.args if a not in ('node', 'nodes')]
    specs = [a for a in args if ':' in a or a.endswith('-')]
    names = [a.split('/', 1)[-1] for a in args if a not in specs]
    if not specs:
        raise KubectlError('at least one taint update is required')
    failures = []
    with store.mutate(session.cluster_dir) as state:
        if session.opts.get('all'):
            names = [n['metadata']['name']
                     for n in cluster.objects_of(state, 'Node')]
        for name in names:
            snapshot = copy.deepcopy(cluster.find(state, 'Node', name))
            try:
                session.ctx.out(_taint_node(session, state, name, specs))
            except CommandError as e:
                if snapshot is not None:    # undo a partial change
                    cluster.put(state, snapshot)
                failures.append(e.message)
        cluster.reconcile(state)
    for message in failures:
        session.ctx.err(message)
    return 1 if failures else 0

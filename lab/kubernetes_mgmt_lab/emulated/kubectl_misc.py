"""``kubectl wait|rollout status|scale|version|cluster-info|config view
|exec``."""
from __future__ import annotations

import copy
import json
import re
import time

import yaml

from kubernetes_mgmt_lab.emulated import (
    cluster,
    jsonpath,
    kinds,
    packages,
    selectors,
    store,
    tokens,
)
from kubernetes_mgmt_lab.emulated import kubectl_output as output
from kubernetes_mgmt_lab.emulated.flags import Flag
from kubernetes_mgmt_lab.emulated.kubectl_common import (
    KubectlError,
    Session,
    get_one,
    not_found,
    resolve_kind,
    scoped_ns,
    targets,
)
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context

WAIT_FLAGS = [Flag('for'), Flag('timeout'), Flag('all', value=False),
              Flag('selector', short='l'), Flag('all-namespaces',
                                                value=False, short='A'),
              Flag('field-selector'), Flag('output', short='o')]
ROLLOUT_FLAGS = [Flag('timeout'), Flag('watch', value=False, short='w'),
                 Flag('revision')]
SCALE_FLAGS = [Flag('replicas'), Flag('current-replicas'),
               Flag('timeout')]
VERSION_FLAGS = [Flag('client', value=False), Flag('output', short='o'),
                 Flag('short', value=False)]
CONFIG_FLAGS = [Flag('raw', value=False), Flag('minify', value=False),
                Flag('flatten', value=False), Flag('output', short='o')]
EXEC_FLAGS = [Flag('stdin', value=False, short='i'),
              Flag('tty', value=False, short='t'),
              Flag('container', short='c'), Flag('quiet', value=False,
                                                 short='q')]
POLL = 0.2


def _condition_met(obj: dict, spec: str) -> bool:
    if spec.startswith('jsonpath='):
        expr, _, want = spec[len('jsonpath='):].rpartition('=')
        expr = expr.strip('\'"')
        found = jsonpath.values(expr, obj)
        return bool(found) and str(found[0]) == want
    m = re.fullmatch(r'condition=([^=]+)(?:=(.*))?', spec)
    if not m:
        raise KubectlError(f'unrecognized condition: "{spec}"')
    want = (m.group(2) or 'True').lower()
    for cond in (obj.get('status') or {}).get('conditions', []):
        if cond['type'].lower() == m.group(1).lower():
            return cond['status'].lower() == want
    return False


def _wait_targets(session: Session, state: dict) -> list[tuple]:
    opts = session.opts
    if opts.get('all') or opts.get('selector') or \
            (len(opts.args) == 1 and '/' not in opts.args[0]):
        kind = resolve_kind(opts.args[0].split(',')[0], state)
        ns = scoped_ns(kind, session.namespace())
        return [(kind, o['metadata']['name'])
                for o in cluster.objects_of(state, kind.kind)
                if (not kind.namespaced or
                    o['metadata'].get('namespace') == ns) and
                selectors.match_labels(opts.get('selector'), o)]
    return targets(opts.args, state)


def wait(session: Session) -> int:
    spec = session.opts.get('for')
    if not spec:
        raise KubectlError('--for must be specified')
    timeout = tokens.parse_duration(session.opts.get('timeout') or '30s')
    deadline = time.monotonic() + timeout
    wanted = _wait_targets(session, session.read())
    if not wanted:
        raise KubectlError('no matching resources found')
    for kind, name in wanted:
        ns = scoped_ns(kind, session.namespace())
        while True:
            obj = cluster.find(session.read(), kind.kind, name, ns)
            if spec == 'delete' and obj is None:
                break
            if obj is None and spec != 'delete' and \
                    time.monotonic() >= deadline:
                raise not_found(kind, name)
            if obj is not None and spec != 'delete' and \
                    _condition_met(obj, spec):
                break
            if time.monotonic() >= deadline:
                raise KubectlError(f'timed out waiting for the condition '
                                   f'on {kind.plural}/{name}')
            time.sleep(POLL)
        verb = 'deleted' if spec == 'delete' else 'condition met'
        session.ctx.out(f'{kind.ref}/{name} {verb}')
    return 0


def _rolled_out(obj: dict) -> bool:
    st = obj.get('status') or {}
    if obj['kind'] == 'DaemonSet':
        want = st.get('desiredNumberScheduled', 0)
        return st.get('numberAvailable', 0) >= want
    want = obj.get('spec', {}).get('replicas', 1)
    return st.get('availableReplicas', 0) >= want


def rollout(session: Session) -> int:
    args = session.opts.args
    if not args or args[0] != 'status':
        raise KubectlError('only "rollout status" is emulated')
    timeout = tokens.parse_duration(session.opts.get('timeout') or '0s')
    deadline = time.monotonic() + timeout if timeout else None
    [(kind, name)] = targets(args[1:], session.read())
    ns = scoped_ns(kind, session.namespace())
    label = {'DaemonSet': 'daemon set'}.get(kind.kind, kind.kind.lower())
    while True:
        obj = get_one(session.read(), kind, name, ns)
        if _rolled_out(obj):
            session.ctx.out(f'{label} "{name}" successfully rolled out')
            return 0
        if deadline is not None and time.monotonic() >= deadline:
            raise KubectlError('timed out waiting for the condition')
        time.sleep(POLL)


def scale(session: Session) -> int:
    replicas = session.opts.get('replicas')
    if replicas is None:
        raise KubectlError('required flag(s) "replicas" not set')
    with store.mutate(session.cluster_dir) as state:
        for kind, name in targets(session.opts.args, state):
            obj = get_one(state, kind, name,
                          scoped_ns(kind, session.namespace()))
            obj['spec']['replicas'] = int(replicas)
            cluster.put(state, obj)
            session.ctx.out(f'{kind.ref}/{name} scaled')
        cluster.reconcile(state)
    return 0


def version(ctx: Context, session: Session | None, opts) -> int:
    client = packages.kube_version(ctx, 'kubectl')
    info = {'clientVersion': {'gitVersion': client},
            'kustomizeVersion': 'v5.4.2'}
    if session is not None:
        server = session.read()['cluster'].get('kubernetes_version')
        info['serverVersion'] = {'gitVersion': server}
    fmt = opts.get('output')
    if fmt == 'json':
        ctx.out(json.dumps(info, indent=2))
    elif fmt == 'yaml':
        ctx.out(yaml.safe_dump(info).rstrip())
    else:
        ctx.out(f'Client Version: {client}\nKustomize Version: v5.4.2')
        if session is not None:
            ctx.out(f'Server Version: {info["serverVersion"]["gitVersion"]}')
    return 0


def cluster_info(session: Session) -> int:
    server = session.config.server
    session.ctx.out(f'Kubernetes control plane is running at {server}\n'
                    f'CoreDNS is running at {server}/api/v1/namespaces/'
                    'kube-system/services/kube-dns:dns/proxy\n\nTo further '
                    'debug and diagnose cluster problems, use \'kubectl '
                    "cluster-info dump'.")
    return 0


def config_view(ctx: Context, config, opts) -> int:
    doc = copy.deepcopy(config.doc) if config else {
        'apiVersion': 'v1', 'kind': 'Config', 'clusters': None,
        'contexts': None, 'current-context': '', 'users': None}
    if not opts.get('raw'):
        for item in doc.get('clusters') or []:
            if 'certificate-authority-data' in item.get('cluster', {}):
                item['cluster']['certificate-authority-data'] = \
                    'DATA+OMITTED'
        for item in doc.get('users') or []:
            user = item.get('user', {})
            for key in ('client-certificate-data', 'client-key-data'):
                if key in user:
                    user[key] = 'DATA+OMITTED'
            if 'token' in user:
                user['token'] = 'REDACTED'  # noqa: S105
    fmt = opts.get('output') or 'yaml'
    if fmt == 'yaml':
        ctx.out(yaml.safe_dump(doc, sort_keys=False).rstrip())
    else:
        text = output.render(fmt, [doc], True)
        print(text, end='' if fmt.startswith('jsonpath') else '\n',
              flush=True)
    return 0


def exec_(session: Session) -> int:
    args = session.opts.args
    if not args:
        raise KubectlError('expected \'exec POD_NAME COMMAND [ARG1] [ARG2] '
                           '... [ARGN]\'.\nPOD_NAME and COMMAND are '
                           'required arguments for the exec command')
    pod_name = args[0].split('/', 1)[-1]
    pod = cluster.find(session.read(), 'Pod', pod_name,
                       session.namespace())
    if pod is None:
        raise not_found(kinds.BY_KIND['Pod'], pod_name)
    command = args[1:]
    labels = pod['metadata'].get('labels') or {}
    if labels.get('component') == 'etcd' and command[:1] == ['etcdctl']:
        from kubernetes_mgmt_lab.emulated import etcdctl
        return etcdctl.main(session.ctx, command[1:], in_pod=True)
    raise CommandError('error: Internal error occurred: the lab only '
                       'emulates "etcdctl" inside etcd pods', 1)

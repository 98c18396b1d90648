"""A lab cluster's API, as the kube-apiserver of each master serves it:
the objects of the shared cluster state (``store``: the cluster's
"etcd"'s working copy, whose durable copy is in the real etcd:
``etcd_mirror``), the callers its bearer tokens name, the real
``etcdctl`` run in the etcd pods, and an audit log of every request in
the cluster directory.
"""
from __future__ import annotations

import base64
import contextlib
import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass

from kubernetes_mgmt_lab.emulated import (
    cluster,
    controllers,
    etcd_mirror,
    etcd_server,
    recorder,
    store,
    tokens,
)
from kubernetes_mgmt_lab.kube_api import persisted
from kubernetes_mgmt_lab.kube_api.backend import RequestRecord
from kubernetes_mgmt_lab.kube_api.exec_stream import Result
from kubernetes_mgmt_lab.kube_api.rbac import Identity
from kubernetes_mgmt_lab.kube_api.status import ApiError
from kubernetes_mgmt_lab.kube_api.store import Store

AUDIT_LOG = 'audit.jsonl'
SA_GROUPS = ('system:serviceaccounts', 'system:authenticated')


ETCDCTL = '/usr/bin/etcdctl'
EXEC_TIMEOUT = 120.0


def _etcdctl_in(pid: int, args: list[str]) -> Result:
    """Run etcdctl (API v3) in the mount, network and UTS namespaces of
    process ``pid``."""
    argv = ['nsenter', '-t', str(pid), '-m', '-n', '-u', '--', ETCDCTL,
            *args]
    env = {'PATH': '/usr/sbin:/usr/bin:/sbin:/bin', 'ETCDCTL_API': '3'}
    try:
        done = subprocess.run(argv, capture_output=True, env=env,
                              timeout=EXEC_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        return Result(1, stderr=b'Error: context deadline exceeded\n')
    return Result(done.returncode, done.stdout, done.stderr)


def _secret_identity(secret: dict) -> Identity | None:
    annotations = secret['metadata'].get('annotations') or {}
    account = annotations.get(controllers.SA_NAME_KEY)
    namespace = secret['metadata'].get('namespace')
    if secret.get('type') != controllers.SA_TOKEN_TYPE or not account:
        return None
    return Identity(
        user=f'system:serviceaccount:{namespace}:{account}',
        groups=(*SA_GROUPS, f'system:serviceaccounts:{namespace}'))


@dataclass
class ClusterApi:
    """The backend of one master's API server (``kube_api.server``)."""

    cluster_dir: str
    version: str
    apiserver_host: str = ''
    timing = cluster.TIMING

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Store]:
        # Strict: a write etcd does not take (no quorum) fails, and the
        # working copy stays as it was.
        with store.exclusive(self.cluster_dir, strict=True) as (state,
                                                                save):
            api_store = persisted.load(state, list(controllers.HOOKS))
            before = persisted.fingerprint(api_store)
            yield api_store
            if persisted.fingerprint(api_store) != before:
                persisted.dump(api_store, state)
                try:
                    save()
                except etcd_mirror.MirrorError as exc:
                    raise ApiError(500, exc.message) from None

    def live_store(self) -> None:
        return None

    def authenticate(self, token: str) -> Identity | None:
        state = store.read(self.cluster_dir)
        for entry in tokens.live_tokens(state.get('cluster', {})):
            if entry['token'] == token:
                token_id = token.split('.', 1)[0]
                return Identity(user=f'system:bootstrap:{token_id}',
                                groups=tuple(entry.get('groups') or ()))
        wanted = base64.b64encode(token.encode()).decode()
        for secret in cluster.objects_of(state, 'Secret'):
            if (secret.get('data') or {}).get('token') == wanted:
                return _secret_identity(secret)
        return None

    def run_in_pod(self, namespace: str, pod: str, argv: list[str]
                   ) -> Result:
        """``etcdctl`` in an etcd pod: the real one, in the namespaces of
        that node's running etcd (its network, its files)."""
        state = store.read(self.cluster_dir)
        found = cluster.find(state, 'Pod', pod, namespace)
        labels = (found or {}).get('metadata', {}).get('labels') or {}
        if labels.get('component') != 'etcd' or argv[:1] != ['etcdctl']:
            name = argv[0] if argv else '(none)'
            return Result(126, stderr=f'{name}: the lab runs only etcdctl '
                          'in etcd pods\n'.encode())
        host = state.get('node_hosts', {}).get(
            found['spec'].get('nodeName', ''), '')
        member = cluster.host_record(state, host).get('etcd') or {}
        pid = member.get('pid')
        if not pid or not etcd_server.alive(pid):
            return Result(1, stderr=b'error: unable to upgrade connection: '
                          b'container not found ("etcd")\n')
        return _etcdctl_in(pid, argv[1:])

    def record(self, record: RequestRecord) -> None:
        """One line per request; bodies are left out (Secrets)."""
        line = json.dumps({
            'time': time.time(), 'apiserver': self.apiserver_host,
            'method': record.method, 'path': record.path,
            'query': record.query, 'user': record.user,
            'userAgent': record.user_agent, 'code': record.code}) + '\n'
        store.append_line(os.path.join(self.cluster_dir, AUDIT_LOG), line)
        if record.code < 300 and record.method in ('PATCH', 'PUT', 'POST'):
            self._note_change(record)

    def _note_change(self, record: RequestRecord) -> None:
        """Cordons, uncordons and evictions go into the change log under
        the host of the node they are about (whoever asked)."""
        parts = record.path.strip('/').split('/')
        if parts[:3] == ['api', 'v1', 'nodes'] and len(parts) == 4 and \
                isinstance(record.body, dict) and \
                'unschedulable' in (record.body.get('spec') or {}):
            name = parts[3]
            host = store.read(self.cluster_dir).get('node_hosts', {}).get(
                name, '')
            what = 'cordon' if record.body['spec']['unschedulable'] \
                else 'uncordon'
            recorder.note(self.cluster_dir, host, what, node=name,
                          user=record.user)
        elif parts[-1:] == ['eviction'] and len(parts) == 7:
            recorder.note(self.cluster_dir, '', 'eviction',
                          namespace=parts[4], pod=parts[5],
                          user=record.user)


def read_audit_log(cluster_dir: str) -> list[dict]:
    return store.read_lines(os.path.join(cluster_dir, AUDIT_LOG))

"""What a lab cluster adds to the API's own controllers
(``kube_api.controllers``), as hooks of its store:

- each kubelet's node status: Ready when the host's kubelet runs and a
  pod network is installed (a CNI DaemonSet exists), NotReady without
  one, Unknown when the kubelet stopped posting;
- the service-account controller: a ``default`` ServiceAccount in every
  namespace;
- the token controller: it fills ``kubernetes.io/service-account-token``
  Secrets.

They read what the cluster's state keeps beside objects (hosts, which
host runs which node, the CA) from the store's ``context``.
"""
from __future__ import annotations

import base64
import json
import secrets
import time

from kubernetes_mgmt_lab.emulated import objects
from kubernetes_mgmt_lab.kube_api import catalog
from kubernetes_mgmt_lab.kube_api.store import Store, key_of

SA_TOKEN_TYPE = 'kubernetes.io/service-account-token'  # noqa: S105
SA_NAME_KEY = 'kubernetes.io/service-account.name'
SA_UID_KEY = 'kubernetes.io/service-account.uid'
# DaemonSets whose presence means a pod network (CNI) is installed.
CNI_DAEMONSETS = ('calico-node', 'kube-flannel-ds', 'cilium', 'weave-net',
                  'kube-router', 'canal')
NOT_READY_NO_CNI = ('container runtime network not ready: '
                    'NetworkReady=false reason:NetworkPluginNotReady '
                    'message:Network plugin returns error: cni plugin '
                    'not initialized')
_NODE = catalog.by_kind('Node')
_SECRET = catalog.by_kind('Secret')
_SA = catalog.by_kind('ServiceAccount')


def _b64(data: str | bytes) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.b64encode(raw).decode()


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b'=').decode()


def make_token(namespace: str, sa: str, uid: str) -> str:
    """A JWT-shaped bearer token (its signature is random: the lab's API
    server looks tokens up, it does not verify them)."""
    header = {'alg': 'RS256', 'kid': secrets.token_hex(8)}
    claims = {'iss': 'kubernetes/serviceaccount', 'iat': int(time.time()),
              'sub': f'system:serviceaccount:{namespace}:{sa}',
              'kubernetes.io/serviceaccount/namespace': namespace,
              'kubernetes.io/serviceaccount/service-account.name': sa,
              'kubernetes.io/serviceaccount/service-account.uid': uid}
    parts = [json.dumps(header).encode(), json.dumps(claims).encode(),
             secrets.token_bytes(64)]
    return '.'.join(_b64url(p) for p in parts)


def _cni_installed(store: Store) -> bool:
    cluster = store.context.setdefault('cluster', {})
    if not cluster.get('cni'):
        for ds in store.of_kind('DaemonSet'):
            if ds['metadata']['name'] in CNI_DAEMONSETS:
                cluster['cni'] = ds['metadata']['name']
    return bool(cluster.get('cni'))


def ready_status(store: Store, node_name: str) -> tuple[str, str, str]:
    host = (store.context.get('node_hosts') or {}).get(node_name)
    record = (store.context.get('hosts') or {}).get(host) or {}
    if not record.get('kubelet'):
        return ('Unknown', 'NodeStatusUnknown',
                'Kubelet stopped posting node status.')
    if not _cni_installed(store):
        return 'False', 'KubeletNotReady', NOT_READY_NO_CNI
    return 'True', 'KubeletReady', 'kubelet is posting ready status'


def _conditions(old: dict, status: str, reason: str, message: str
                ) -> list[dict]:
    posting = status != 'Unknown'
    wanted = [(kind, 'False' if posting else 'Unknown',
               f'KubeletHasNo{kind}' if posting else 'NodeStatusUnknown',
               '' if posting else message)
              for kind in ('MemoryPressure', 'DiskPressure', 'PIDPressure')]
    wanted.append(('Ready', status, reason, message))
    conditions = []
    for kind, value, why, text in wanted:
        prev = old.get(kind)
        since = prev['lastTransitionTime'] if prev and \
            prev['status'] == value else None
        conditions.append(objects.condition(kind, value, why, text, since))
    return conditions


def node_status(store: Store) -> None:
    for node in store.of_kind('Node'):
        name = node['metadata']['name']
        status, reason, message = ready_status(store, name)
        old = {c['type']: c for c in node['status'].get('conditions', [])}
        if old.get('Ready', {}).get('status') == status and \
                old['Ready'].get('reason') == reason:
            continue
        node['status']['conditions'] = _conditions(old, status, reason,
                                                   message)
        store.touch(key_of(_NODE, None, name))


def service_accounts(store: Store) -> None:
    for ns in store.of_kind('Namespace'):
        name = ns['metadata']['name']
        if store.get(('ServiceAccount', name, 'default')) is None and \
                not ns['metadata'].get('deletionTimestamp'):
            store.put_new(_SA, {'metadata': {'name': 'default',
                                             'namespace': name}})


def token_secrets(store: Store) -> None:
    ca_pem = store.context.get('cluster', {}).get('ca_pem', '')
    for secret in store.of_kind('Secret'):
        if secret.get('type') != SA_TOKEN_TYPE or \
                (secret.get('data') or {}).get('token'):
            continue
        meta = secret['metadata']
        annotations = meta.setdefault('annotations', {})
        sa = store.get(('ServiceAccount', meta.get('namespace', ''),
                        annotations.get(SA_NAME_KEY, '')))
        if sa is None:
            continue
        annotations[SA_UID_KEY] = sa['metadata']['uid']
        token = make_token(meta['namespace'], sa['metadata']['name'],
                           sa['metadata']['uid'])
        secret['data'] = {**(secret.get('data') or {}),
                          'token': _b64(token),
                          'namespace': _b64(meta['namespace']),
                          'ca.crt': _b64(ca_pem)}
        store.touch(key_of(_SECRET, meta['namespace'], meta['name']))


HOOKS = (node_status, service_accounts, token_secrets)

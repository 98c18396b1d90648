"""The controllers ``cluster.reconcile`` runs besides scheduling: one
default ServiceAccount per namespace, the token controller filling
``kubernetes.io/service-account-token`` Secrets, and PV binding."""
from __future__ import annotations

import base64
import json
import secrets
import time

from kubernetes_mgmt_lab.emulated import cluster, objects

SA_TOKEN_TYPE = 'kubernetes.io/service-account-token'  # noqa: S105
SA_NAME_KEY = 'kubernetes.io/service-account.name'
SA_UID_KEY = 'kubernetes.io/service-account.uid'


def _b64(data: str | bytes) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.b64encode(raw).decode()


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b'=').decode()


def make_token(namespace: str, sa: str, uid: str) -> str:
    """A JWT-shaped bearer token (signature is random: nothing checks
    it except the stand-in API server's table of issued tokens)."""
    header = {'alg': 'RS256', 'kid': secrets.token_hex(8)}
    claims = {'iss': 'kubernetes/serviceaccount', 'iat': int(time.time()),
              'sub': f'system:serviceaccount:{namespace}:{sa}',
              'kubernetes.io/serviceaccount/namespace': namespace,
              'kubernetes.io/serviceaccount/service-account.name': sa,
              'kubernetes.io/serviceaccount/service-account.uid': uid}
    parts = [json.dumps(header).encode(), json.dumps(claims).encode(),
             secrets.token_bytes(64)]
    return '.'.join(_b64url(p) for p in parts)


def service_accounts(state: dict) -> None:
    for ns in cluster.objects_of(state, 'Namespace'):
        name = ns['metadata']['name']
        if cluster.find(state, 'ServiceAccount', 'default', name) is None:
            cluster.put(state, objects.service_account('default', name))


def token_secrets(state: dict) -> None:
    ca_pem = state['cluster'].get('ca_pem', '')
    for secret in cluster.objects_of(state, 'Secret'):
        if secret.get('type') != SA_TOKEN_TYPE:
            continue
        meta = secret['metadata']
        annotations = meta.setdefault('annotations', {})
        sa = cluster.find(state, 'ServiceAccount',
                          annotations.get(SA_NAME_KEY, ''),
                          meta.get('namespace'))
        data = secret.setdefault('data', {}) or {}
        secret['data'] = data
        if sa is None or data.get('token'):
            continue
        annotations[SA_UID_KEY] = sa['metadata']['uid']
        token = make_token(meta['namespace'], sa['metadata']['name'],
                           sa['metadata']['uid'])
        data.update(token=_b64(token), namespace=_b64(meta['namespace']),
                    **{'ca.crt': _b64(ca_pem)})


def _quantity(text: str) -> float:
    units = {'Ki': 2**10, 'Mi': 2**20, 'Gi': 2**30, 'Ti': 2**40,
             'K': 1e3, 'M': 1e6, 'G': 1e9, 'T': 1e12}
    text = str(text)
    for unit in sorted(units, key=len, reverse=True):
        if text.endswith(unit):
            return float(text[:-len(unit)]) * units[unit]
    return float(text or 0)


def _fits(pv: dict, pvc: dict) -> bool:
    spec, want = pv.get('spec', {}), pvc.get('spec', {})
    if want.get('volumeName'):
        return want['volumeName'] == pv['metadata']['name']
    if spec.get('storageClassName', '') != want.get('storageClassName', ''):
        return False
    if not set(want.get('accessModes', [])) <= \
            set(spec.get('accessModes', [])):
        return False
    need = (want.get('resources') or {}).get('requests', {}).get(
        'storage', '0')
    return _quantity(spec.get('capacity', {}).get('storage', '0')) >= \
        _quantity(need)


def _bind(pv: dict, pvc: dict) -> None:
    meta = pvc['metadata']
    pv['spec']['claimRef'] = {
        'apiVersion': 'v1', 'kind': 'PersistentVolumeClaim',
        'name': meta['name'], 'namespace': meta['namespace'],
        'uid': meta['uid']}
    pv['status'] = {'phase': 'Bound'}
    pvc['spec']['volumeName'] = pv['metadata']['name']
    pvc['status'] = {'phase': 'Bound',
                     'accessModes': pv['spec'].get('accessModes', []),
                     'capacity': pv['spec'].get('capacity', {})}


def bind_volumes(state: dict) -> None:
    pvs = cluster.objects_of(state, 'PersistentVolume')
    for pv in pvs:
        ref = pv.setdefault('spec', {}).get('claimRef')
        if ref and cluster.find(state, 'PersistentVolumeClaim',
                                ref['name'], ref.get('namespace')) is None:
            pv['status'] = {'phase': 'Released'}
        elif not ref:
            pv['status'] = {'phase': 'Available'}
        else:
            pv['status'] = {'phase': 'Bound'}
    # A terminating PV goes once nothing binds it (pv-protection).
    pvs[:] = [pv for pv in pvs if not (
        pv['metadata'].get('deletionTimestamp') and
        pv['status']['phase'] != 'Bound')]
    for pvc in cluster.objects_of(state, 'PersistentVolumeClaim'):
        if (pvc.get('status') or {}).get('phase') == 'Bound':
            continue
        pvc['status'] = {'phase': 'Pending'}
        for pv in pvs:
            if pv['status']['phase'] == 'Available' and _fits(pv, pvc):
                _bind(pv, pvc)
                break

"""The persistent-volume controller: claims bind to volumes that fit,
or to a volume provisioned for them when their StorageClass exists.

A claim without ``storageClassName`` asks for the default class (the
StorageClass annotated as default), or for volumes without a class when
there is none, as in a kubeadm cluster. A provisioned volume is deleted
with its claim; a volume made by hand is Released (reclaim policy
Retain). A terminating volume goes once no claim binds it
(pv-protection).
"""
from __future__ import annotations

from kubernetes_mgmt_lab.kube_api import catalog
from kubernetes_mgmt_lab.kube_api.store import Store, key_of

_PV = catalog.by_kind('PersistentVolume')
_PVC = catalog.by_kind('PersistentVolumeClaim')
DEFAULT_CLASS = 'storageclass.kubernetes.io/is-default-class'
PROVISIONED_BY = 'pv.kubernetes.io/provisioned-by'
_UNITS = {'Ki': 2**10, 'Mi': 2**20, 'Gi': 2**30, 'Ti': 2**40,
          'K': 1e3, 'M': 1e6, 'G': 1e9, 'T': 1e12}


def quantity(text: object) -> float:
    text = str(text or 0)
    for unit in sorted(_UNITS, key=len, reverse=True):
        if text.endswith(unit):
            return float(text[:-len(unit)]) * _UNITS[unit]
    return float(text)


def _default_class(store: Store) -> str | None:
    for sc in store.of_kind('StorageClass'):
        annotations = sc['metadata'].get('annotations') or {}
        if annotations.get(DEFAULT_CLASS) == 'true':
            return sc['metadata']['name']
    return None


def _wanted_class(store: Store, claim: dict) -> str:
    spec = claim.get('spec') or {}
    if 'storageClassName' in spec and spec['storageClassName'] is not None:
        return spec['storageClassName']
    return _default_class(store) or ''


def _fits(pv: dict, claim: dict, wanted_class: str) -> bool:
    spec, want = pv.get('spec') or {}, claim.get('spec') or {}
    if want.get('volumeName'):
        return want['volumeName'] == pv['metadata']['name']
    if spec.get('storageClassName', '') != wanted_class:
        return False
    if not set(want.get('accessModes') or []) <= \
            set(spec.get('accessModes') or []):
        return False
    need = ((want.get('resources') or {}).get('requests') or {}).get(
        'storage', '0')
    return quantity((spec.get('capacity') or {}).get('storage')) >= \
        quantity(need)


def _bind(store: Store, pv: dict, claim: dict) -> None:
    meta = claim['metadata']
    pv['spec']['claimRef'] = {
        'apiVersion': 'v1', 'kind': 'PersistentVolumeClaim',
        'name': meta['name'], 'namespace': meta['namespace'],
        'uid': meta['uid']}
    pv['status'] = {'phase': 'Bound'}
    claim['spec']['volumeName'] = pv['metadata']['name']
    claim['status'] = {'phase': 'Bound',
                       'accessModes': pv['spec'].get('accessModes', []),
                       'capacity': pv['spec'].get('capacity', {})}
    store.touch(key_of(_PV, None, pv['metadata']['name']))
    store.touch(key_of(_PVC, meta['namespace'], meta['name']))


def _provision(store: Store, claim: dict, storage_class: str) -> None:
    spec = claim.get('spec') or {}
    size = ((spec.get('resources') or {}).get('requests') or {}).get(
        'storage', '1Gi')
    pv = store.put_new(_PV, {
        'metadata': {'name': f'pvc-{claim["metadata"]["uid"]}',
                     'annotations': {PROVISIONED_BY: storage_class}},
        'spec': {'capacity': {'storage': size},
                 'accessModes': list(spec.get('accessModes') or []),
                 'storageClassName': storage_class,
                 'persistentVolumeReclaimPolicy': 'Delete'},
        'status': {'phase': 'Available'}})
    _bind(store, pv, claim)


def _claim_of(store: Store, pv: dict) -> dict | None:
    ref = (pv.get('spec') or {}).get('claimRef')
    if not ref:
        return None
    return store.get(key_of(_PVC, ref.get('namespace'), ref['name']))


def _volume_phases(store: Store) -> None:
    for pv in store.of_kind('PersistentVolume'):
        key = key_of(_PV, None, pv['metadata']['name'])
        ref = (pv.get('spec') or {}).get('claimRef')
        bound = ref is not None and _claim_of(store, pv) is not None
        if ref and not bound and (pv['spec'].get(
                'persistentVolumeReclaimPolicy') == 'Delete'):
            store.remove(key)
            continue
        phase = 'Bound' if bound else 'Released' if ref else 'Available'
        if pv['metadata'].get('deletionTimestamp') and phase != 'Bound':
            store.remove(key)
        elif (pv.get('status') or {}).get('phase') != phase:
            pv['status'] = {'phase': phase}
            store.touch(key)


def bind_claims(store: Store) -> None:
    """One pass of the PV controller."""
    _volume_phases(store)
    for claim in store.of_kind('PersistentVolumeClaim'):
        if (claim.get('status') or {}).get('phase') == 'Bound' or \
                claim['metadata'].get('deletionTimestamp'):
            continue
        claim.setdefault('spec', {})
        wanted = _wanted_class(store, claim)
        volume = next((pv for pv in store.of_kind('PersistentVolume')
                       if (pv.get('status') or {}).get('phase') ==
                       'Available' and _fits(pv, claim, wanted)), None)
        if volume is not None:
            _bind(store, volume, claim)
        elif wanted and store.get(('StorageClass', '', wanted)):
            _provision(store, claim, wanted)
        elif (claim.get('status') or {}).get('phase') != 'Pending':
            claim['status'] = {'phase': 'Pending'}
            store.touch(key_of(_PVC, claim['metadata']['namespace'],
                               claim['metadata']['name']))

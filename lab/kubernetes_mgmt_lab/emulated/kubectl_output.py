"""kubectl's output formats: tables (with wide / show-labels /
no-headers), json, yaml, name, jsonpath and custom-columns."""
from __future__ import annotations

import copy
import json
import time

import yaml

from kubernetes_mgmt_lab.emulated import cluster, jsonpath, kinds, objects
from kubernetes_mgmt_lab.emulated.kubectl_common import KubectlError

MODES = {'ReadWriteOnce': 'RWO', 'ReadOnlyMany': 'ROX',
         'ReadWriteMany': 'RWX', 'ReadWriteOncePod': 'RWOP'}


def age(stamp: str | None) -> str:
    if not stamp:
        return '<unknown>'
    secs = max(0, int(time.time() - objects.parse_iso(stamp)))
    if secs < 120:
        return f'{secs}s'
    mins = secs // 60
    if mins < 10:
        return f'{mins}m{secs % 60}s' if secs % 60 else f'{mins}m'
    if mins < 180:
        return f'{mins}m'
    hours = mins // 60
    if hours < 48:
        return f'{hours}h'
    return f'{hours // 24}d'


def _node_row(state: dict, obj: dict, wide: bool) -> list[str]:
    ready = cluster.is_ready(obj)
    conds = {c['type']: c['status'] for c in obj['status']['conditions']}
    status = 'Ready' if ready else (
        'NotReady' if 'Ready' in conds else 'Unknown')
    if obj['spec'].get('unschedulable'):
        status += ',SchedulingDisabled'
    roles = sorted(k.split('/', 1)[1] for k in obj['metadata'].get(
        'labels', {}) if k.startswith('node-role.kubernetes.io/'))
    info = obj['status']['nodeInfo']
    row = [obj['metadata']['name'], status, ','.join(roles) or '<none>',
           age(obj['metadata'].get('creationTimestamp')),
           info['kubeletVersion']]
    if wide:
        row += [cluster.node_ip(obj), '<none>', info['osImage'],
                info['kernelVersion'], info['containerRuntimeVersion']]
    return row


def _pod_row(state: dict, obj: dict, wide: bool) -> list[str]:
    st = obj['status']
    running = st.get('phase') == 'Running'
    status = 'Terminating' if obj['metadata'].get('deletionTimestamp') \
        else st.get('phase', 'Pending')
    n = len(obj['spec'].get('containers', [])) or 1
    row = [obj['metadata']['name'], f'{n if running else 0}/{n}', status,
           '0', age(obj['metadata'].get('creationTimestamp'))]
    if wide:
        row += [st.get('podIP') or '<none>',
                obj['spec'].get('nodeName') or '<none>', '<none>',
                '<none>']
    return row


def _pv_row(state: dict, obj: dict, wide: bool) -> list[str]:
    spec = obj.get('spec', {})
    ref = spec.get('claimRef')
    status = 'Terminating' if obj['metadata'].get('deletionTimestamp') \
        else obj.get('status', {}).get('phase', '')
    return [obj['metadata']['name'],
            spec.get('capacity', {}).get('storage', ''),
            ','.join(MODES.get(m, m) for m in spec.get('accessModes', [])),
            spec.get('persistentVolumeReclaimPolicy', 'Retain'), status,
            f'{ref["namespace"]}/{ref["name"]}' if ref else '',
            spec.get('storageClassName', ''), '<unset>', '',
            age(obj['metadata'].get('creationTimestamp'))]


def _pvc_row(state: dict, obj: dict, wide: bool) -> list[str]:
    spec, st = obj.get('spec', {}), obj.get('status', {})
    return [obj['metadata']['name'], st.get('phase', 'Pending'),
            spec.get('volumeName', ''),
            st.get('capacity', {}).get('storage', ''),
            ','.join(MODES.get(m, m) for m in st.get('accessModes', [])),
            spec.get('storageClassName', ''), '<unset>',
            age(obj['metadata'].get('creationTimestamp'))]


def _simple(*fields):
    def row(state: dict, obj: dict, wide: bool) -> list[str]:
        out = [obj['metadata']['name']]
        for field in fields:
            out.append(str(field(obj)))
        return [*out, age(obj['metadata'].get('creationTimestamp'))]
    return row


def _role(obj: dict) -> str:
    ref = obj.get('roleRef', {})
    return f'{ref.get("kind", "")}/{ref.get("name", "")}'


TABLES = {
    'Node': (['NAME', 'STATUS', 'ROLES', 'AGE', 'VERSION'],
             ['INTERNAL-IP', 'EXTERNAL-IP', 'OS-IMAGE', 'KERNEL-VERSION',
              'CONTAINER-RUNTIME'], _node_row),
    'Pod': (['NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE'],
            ['IP', 'NODE', 'NOMINATED NODE', 'READINESS GATES'], _pod_row),
    'PersistentVolume': (['NAME', 'CAPACITY', 'ACCESS MODES',
                          'RECLAIM POLICY', 'STATUS', 'CLAIM',
                          'STORAGECLASS', 'VOLUMEATTRIBUTESCLASS',
                          'REASON', 'AGE'], [], _pv_row),
    'PersistentVolumeClaim': (['NAME', 'STATUS', 'VOLUME', 'CAPACITY',
                               'ACCESS MODES', 'STORAGECLASS',
                               'VOLUMEATTRIBUTESCLASS', 'AGE'], [],
                              _pvc_row),
    'Namespace': (['NAME', 'STATUS', 'AGE'], [], _simple(
        lambda o: o.get('status', {}).get('phase', 'Active'))),
    'Secret': (['NAME', 'TYPE', 'DATA', 'AGE'], [], _simple(
        lambda o: o.get('type', 'Opaque'), lambda o: len(o.get('data')
                                                         or {}))),
    'ServiceAccount': (['NAME', 'SECRETS', 'AGE'], [], _simple(
        lambda o: len(o.get('secrets') or []))),
    'Deployment': (['NAME', 'READY', 'UP-TO-DATE', 'AVAILABLE', 'AGE'], [],
                   _simple(lambda o: f'{o["status"].get("readyReplicas", 0)}'
                           f'/{o["spec"].get("replicas", 1)}',
                           lambda o: o['status'].get('updatedReplicas', 0),
                           lambda o: o['status'].get('availableReplicas',
                                                     0))),
    'DaemonSet': (['NAME', 'DESIRED', 'CURRENT', 'READY', 'UP-TO-DATE',
                   'AVAILABLE', 'NODE SELECTOR', 'AGE'], [], _simple(
        *[(lambda key: lambda o: o['status'].get(key, 0))(k) for k in (
            'desiredNumberScheduled', 'currentNumberScheduled',
            'numberReady', 'updatedNumberScheduled', 'numberAvailable')],
        lambda o: '<none>')),
    'ClusterRoleBinding': (['NAME', 'ROLE', 'AGE'], [], _simple(_role)),
    'RoleBinding': (['NAME', 'ROLE', 'AGE'], [], _simple(_role)),
}


def _labels(obj: dict) -> str:
    labels = obj['metadata'].get('labels') or {}
    return ','.join(f'{k}={v}' for k, v in sorted(labels.items())) or \
        '<none>'


def _align(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return '\n'.join('   '.join(c.ljust(w) for c, w in
                                zip(row, widths, strict=False)).rstrip()
                     for row in rows)


def table(state: dict, kind: kinds.Kind, items: list[dict], wide: bool,
          all_ns: bool, show_labels: bool, headers: bool) -> str:
    base, extra, rowfn = TABLES.get(kind.kind, (['NAME', 'AGE'], [],
                                                _simple()))
    head = base + (extra if wide else [])
    rows = []
    for obj in items:
        row = rowfn(state, obj, wide)
        if all_ns and kind.namespaced:
            row = [obj['metadata'].get('namespace', ''), *row]
        if show_labels:
            row.append(_labels(obj))
        rows.append(row)
    if all_ns and kind.namespaced:
        head = ['NAMESPACE', *head]
    if show_labels:
        head = [*head, 'LABELS']
    return _align(([head] if headers else []) + rows) if rows else ''


def as_list(items: list[dict]) -> dict:
    return {'apiVersion': 'v1', 'kind': 'List', 'items': items,
            'metadata': {'resourceVersion': ''}}


def render(fmt: str, items: list[dict], single: bool) -> str:
    """Formats that don't depend on the kind's table."""
    data = items[0] if single and len(items) == 1 else as_list(items)
    data = copy.deepcopy(data)
    if fmt == 'json':
        return json.dumps(data, indent=4)
    if fmt == 'yaml':
        return yaml.safe_dump(data, sort_keys=True).rstrip('\n')
    if fmt == 'name':
        return '\n'.join(f'{kinds.for_object(o).ref}/'
                         f'{o["metadata"]["name"]}' for o in items)
    if fmt.startswith(('jsonpath=', 'jsonpath-as-json=')):
        template = fmt.split('=', 1)[1]
        try:
            return jsonpath.evaluate(template, data)
        except (jsonpath.JSONPathError, ValueError) as e:
            raise KubectlError(f'error parsing jsonpath {template}, '
                               f'{e}') from None
    if fmt.startswith('custom-columns='):
        return _columns(fmt.split('=', 1)[1], items)
    raise KubectlError(f'unable to match a printer suitable for the output '
                       f'format "{fmt}", allowed formats are: custom-'
                       'columns,go-template,json,jsonpath,name,wide,yaml')


def _columns(spec: str, items: list[dict]) -> str:
    cols = []
    for part in spec.split(','):
        header, sep, path = part.partition(':')
        if not sep:
            raise KubectlError('custom-columns format specified but no '
                               'custom columns given')
        cols.append((header, path))
    rows = [[h for h, _ in cols]]
    for obj in items:
        row = []
        for _, path in cols:
            found = jsonpath.values(path, obj)
            row.append(','.join(
                v if isinstance(v, str) else json.dumps(v)
                for v in found) or '<none>')
        rows.append(row)
    return _align(rows)

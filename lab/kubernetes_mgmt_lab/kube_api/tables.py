"""The Table form of what a GET returns (``meta.k8s.io/v1`` Table).

kubectl's human-readable ``get`` asks for it (``Accept:
application/json;as=Table;v=v1;g=meta.k8s.io, ...``) and prints the
server's columns; without it, kubectl falls back to NAME and AGE. The
columns here are those kube-apiserver's printers give the kinds
``kubectl get`` is used on in the lab (nodes, pods, namespaces, volumes
and claims, workloads, services, secrets, config maps, service
accounts); ``priority`` 1 marks what ``-o wide`` adds. Other kinds get
NAME and AGE. Cells are computed when the request is served, as the
real server does (AGE included).
"""
from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

NONE = '<none>'
GROUP = 'meta.k8s.io'
_VERSIONS = ('v1', 'v1beta1')
_ACCESS_MODES = {'ReadWriteOnce': 'RWO', 'ReadOnlyMany': 'ROX',
                 'ReadWriteMany': 'RWX', 'ReadWriteOncePod': 'RWOP'}
_ROLE_PREFIX = 'node-role.kubernetes.io/'
_ROLE_LABEL = 'kubernetes.io/role'

Cell = Callable[[dict, datetime.datetime], object]


@dataclass(frozen=True)
class Column:
    name: str
    cell: Cell
    type: str = 'string'
    priority: int = 0
    format: str = ''

    def definition(self) -> dict:
        return {'name': self.name, 'type': self.type, 'format': self.format,
                'description': f'{self.name} of the object',
                'priority': self.priority}


# -- negotiation --------------------------------------------------------------

def wanted(accept: str) -> str | None:
    """The Table version (v1, v1beta1) the Accept header asks for before
    any other form; None: not a Table."""
    for media in accept.split(','):
        kind, *params = [p.strip() for p in media.split(';')]
        values = dict(p.partition('=')[::2] for p in params)
        if values.get('as') != 'Table':
            return None
        if (kind in ('application/json', '*/*') and values.get('g') == GROUP
                and values.get('v') in _VERSIONS):
            return values['v']
    return None


def table(kind: str, reply: dict, version: str, include: str | None,
          now: datetime.datetime | None = None) -> dict:
    """``reply`` (a list or one object of ``kind``) as a Table;
    ``include``: the request's includeObject (None, Metadata, Object)."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    columns = COLUMNS.get(kind, DEFAULT)
    items = reply['items'] if 'items' in reply else [reply]
    return {'kind': 'Table', 'apiVersion': f'{GROUP}/{version}',
            'metadata': {'resourceVersion': reply.get('metadata', {}).get(
                'resourceVersion', '')},
            'columnDefinitions': [c.definition() for c in columns],
            'rows': [_row(obj, columns, version, include, now)
                     for obj in items]}


def watch_events(events: Iterable[dict], kind: str, version: str,
                 include: str | None) -> Iterator[dict]:
    """A watch's events with each object as a one-row Table (``kubectl
    get -w``); as kube-apiserver does, only the first carries the column
    definitions."""
    first = True
    for event in events:
        if event.get('type') in ('ADDED', 'MODIFIED', 'DELETED'):
            shown = table(kind, event['object'], version, include)
            if not first:
                shown['columnDefinitions'] = []
            first = False
            event = {'type': event['type'], 'object': shown}
        yield event


def _row(obj: dict, columns: tuple[Column, ...], version: str,
         include: str | None, now: datetime.datetime) -> dict:
    row: dict = {'cells': [c.cell(obj, now) for c in columns]}
    if include == 'Object':
        row['object'] = obj
    elif include != 'None':     # Metadata, the default
        row['object'] = {'kind': 'PartialObjectMetadata',
                         'apiVersion': f'{GROUP}/{version}',
                         'metadata': obj.get('metadata', {})}
    return row


# -- cells shared by every kind ----------------------------------------------

def age(seconds: float) -> str:
    """A duration as kubectl shows ages: two units while they say
    something (1m30s, 5h20m, 3d4h), one after."""
    s = int(seconds)
    if s < -1:
        return '<invalid>'
    if s < 120:
        return f'{max(s, 0)}s'
    minutes, hours, days = s // 60, s // 3600, s // 86400
    if minutes < 10:
        return _two(minutes, 'm', s % 60, 's')
    if minutes < 180:
        return f'{minutes}m'
    if hours < 8:
        return _two(hours, 'h', minutes % 60, 'm')
    if hours < 48:
        return f'{hours}h'
    if hours < 192:
        return _two(days, 'd', hours % 24, 'h')
    if days < 730:
        return f'{days}d'
    if days < 2920:
        return _two(days // 365, 'y', days % 365, 'd')
    return f'{days // 365}y'


def _two(big: int, big_unit: str, small: int, small_unit: str) -> str:
    return f'{big}{big_unit}' + (f'{small}{small_unit}' if small else '')


def _age(obj: dict, now: datetime.datetime) -> str:
    created = obj.get('metadata', {}).get('creationTimestamp')
    if not created:
        return '<unknown>'
    when = datetime.datetime.fromisoformat(created.replace('Z', '+00:00'))
    return age((now - when).total_seconds())


def _name(obj: dict, now: datetime.datetime) -> str:
    return obj.get('metadata', {}).get('name', '')


def _path(*keys: str, default: object = '') -> Cell:
    def cell(obj: dict, now: datetime.datetime) -> object:
        value: object = obj
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        return default if value in (None, '') else value
    return cell


NAME = Column('Name', _name, format='name')
AGE = Column('Age', _age)
DEFAULT = (NAME, AGE)


# -- nodes and namespaces ----------------------------------------------------

def _node_status(node: dict, now: datetime.datetime) -> str:
    ready = [c['status'] for c in node.get('status', {}).get('conditions')
             or [] if c.get('type') == 'Ready']
    states = [{'True': 'Ready', 'False': 'NotReady'}.get(ready[0], 'Unknown')
              if ready else 'Unknown']
    if node.get('spec', {}).get('unschedulable'):
        states.append('SchedulingDisabled')
    return ','.join(states)


def _node_roles(node: dict, now: datetime.datetime) -> str:
    labels = node.get('metadata', {}).get('labels') or {}
    roles = {key[len(_ROLE_PREFIX):] for key in labels
             if key.startswith(_ROLE_PREFIX) and key != _ROLE_PREFIX}
    roles |= {labels[_ROLE_LABEL]} if labels.get(_ROLE_LABEL) else set()
    return ','.join(sorted(roles)) or NONE


def _address(kind: str) -> Cell:
    def cell(node: dict, now: datetime.datetime) -> str:
        return next((a['address'] for a in node.get('status', {}).get(
            'addresses') or [] if a.get('type') == kind), NONE)
    return cell


def _node_info(key: str) -> Cell:
    return _path('status', 'nodeInfo', key, default='<unknown>')


NODE = (NAME, Column('Status', _node_status), Column('Roles', _node_roles),
        AGE, Column('Version', _path('status', 'nodeInfo', 'kubeletVersion')),
        Column('Internal-IP', _address('InternalIP'), priority=1),
        Column('External-IP', _address('ExternalIP'), priority=1),
        Column('OS-Image', _node_info('osImage'), priority=1),
        Column('Kernel-Version', _node_info('kernelVersion'), priority=1),
        Column('Container-Runtime', _node_info('containerRuntimeVersion'),
               priority=1))
NAMESPACE = (NAME, Column('Status', _path('status', 'phase')), AGE)


# -- pods -----------------------------------------------------------------

def _pod_ready(pod: dict, now: datetime.datetime) -> str:
    total = len(pod.get('spec', {}).get('containers') or [])
    statuses = pod.get('status', {}).get('containerStatuses')
    if statuses is not None:
        ready = sum(1 for s in statuses if s.get('ready'))
    else:
        # The lab's pods keep no container statuses: a Ready pod's
        # containers are all ready.
        ready = total if _condition(pod, 'Ready') else 0
    return f'{ready}/{total}'


def _condition(obj: dict, kind: str) -> bool:
    return any(c.get('type') == kind and c.get('status') == 'True'
               for c in obj.get('status', {}).get('conditions') or [])


def _pod_status(pod: dict, now: datetime.datetime) -> str:
    status = pod.get('status', {})
    if pod.get('metadata', {}).get('deletionTimestamp'):
        return 'Terminating'
    waiting = [s['state']['waiting'].get('reason') for s in
               status.get('containerStatuses') or []
               if (s.get('state') or {}).get('waiting', {}).get('reason')]
    if status.get('reason'):
        return status['reason']
    if waiting:
        return waiting[0]
    phase = status.get('phase') or 'Pending'
    return 'Completed' if phase == 'Succeeded' else phase


def _restarts(pod: dict, now: datetime.datetime) -> str:
    return str(sum(s.get('restartCount', 0) for s in
                   pod.get('status', {}).get('containerStatuses') or []))


def _gates(pod: dict, now: datetime.datetime) -> str:
    gates = pod.get('spec', {}).get('readinessGates') or []
    if not gates:
        return NONE
    met = sum(1 for g in gates if _condition(pod, g.get('conditionType')))
    return f'{met}/{len(gates)}'


POD = (NAME, Column('Ready', _pod_ready), Column('Status', _pod_status),
       Column('Restarts', _restarts), AGE,
       Column('IP', _path('status', 'podIP', default=NONE), priority=1),
       Column('Node', _path('spec', 'nodeName', default=NONE), priority=1),
       Column('Nominated Node', _path('status', 'nominatedNodeName',
                                      default=NONE), priority=1),
       Column('Readiness Gates', _gates, priority=1))


# -- volumes and claims ------------------------------------------------------

def _modes(*keys: str) -> Cell:
    def cell(obj: dict, now: datetime.datetime) -> str:
        modes = _path(*keys, default=[])(obj, now)
        return ','.join(_ACCESS_MODES.get(m, m) for m in modes)
    return cell


def _claim(pv: dict, now: datetime.datetime) -> str:
    ref = pv.get('spec', {}).get('claimRef')
    return f'{ref.get("namespace", "")}/{ref.get("name", "")}' if ref else ''


def _claim_capacity(pvc: dict, now: datetime.datetime) -> str:
    if pvc.get('status', {}).get('phase') != 'Bound':
        return ''
    return _path('status', 'capacity', 'storage')(pvc, now)


UNSET = '<unset>'
PERSISTENT_VOLUME = (
    NAME, Column('Capacity', _path('spec', 'capacity', 'storage')),
    Column('Access Modes', _modes('spec', 'accessModes')),
    Column('Reclaim Policy', _path('spec', 'persistentVolumeReclaimPolicy')),
    Column('Status', _path('status', 'phase')), Column('Claim', _claim),
    Column('StorageClass', _path('spec', 'storageClassName')),
    Column('VolumeAttributesClass', _path(
        'spec', 'volumeAttributesClassName', default=UNSET)),
    Column('Reason', _path('status', 'reason')), AGE,
    Column('VolumeMode', _path('spec', 'volumeMode', default=UNSET),
           priority=1))
PERSISTENT_VOLUME_CLAIM = (
    NAME, Column('Status', _path('status', 'phase')),
    Column('Volume', _path('spec', 'volumeName')),
    Column('Capacity', _claim_capacity),
    Column('Access Modes', _modes('status', 'accessModes')),
    Column('StorageClass', _path('spec', 'storageClassName')),
    Column('VolumeAttributesClass', _path(
        'spec', 'volumeAttributesClassName', default=UNSET)),
    AGE,
    Column('VolumeMode', _path('spec', 'volumeMode', default=UNSET),
           priority=1))


# -- workloads ------------------------------------------------------------

def _count(*keys: str) -> Cell:
    return _path(*keys, default=0)


def _ready_replicas(obj: dict, now: datetime.datetime) -> str:
    ready = obj.get('status', {}).get('readyReplicas', 0)
    return f'{ready}/{obj.get("spec", {}).get("replicas", 1)}'


def _containers(field_name: str) -> Cell:
    def cell(obj: dict, now: datetime.datetime) -> str:
        containers = _path('spec', 'template', 'spec', 'containers',
                           default=[])(obj, now)
        return ','.join(c.get(field_name, '') for c in containers)
    return cell


def _selector(*keys: str) -> Cell:
    def cell(obj: dict, now: datetime.datetime) -> str:
        selector = _path(*keys, default={})(obj, now)
        labels = selector.get('matchLabels', selector) \
            if isinstance(selector, dict) else {}
        return ','.join(f'{k}={v}' for k, v in labels.items()) or NONE
    return cell


_WIDE = (Column('Containers', _containers('name'), priority=1),
         Column('Images', _containers('image'), priority=1))
_SELECTOR = Column('Selector', _selector('spec', 'selector'), priority=1)
DEPLOYMENT = (NAME, Column('Ready', _ready_replicas),
              Column('Up-to-date', _count('status', 'updatedReplicas'),
                     'integer'),
              Column('Available', _count('status', 'availableReplicas'),
                     'integer'), AGE, *_WIDE, _SELECTOR)
REPLICA_SET = (NAME,
               Column('Desired', _count('spec', 'replicas'), 'integer'),
               Column('Current', _count('status', 'replicas'), 'integer'),
               Column('Ready', _count('status', 'readyReplicas'), 'integer'),
               AGE, *_WIDE, _SELECTOR)
STATEFUL_SET = (NAME, Column('Ready', _ready_replicas), AGE,
                *_WIDE)
DAEMON_SET = (
    NAME,
    Column('Desired', _count('status', 'desiredNumberScheduled'), 'integer'),
    Column('Current', _count('status', 'currentNumberScheduled'), 'integer'),
    Column('Ready', _count('status', 'numberReady'), 'integer'),
    Column('Up-to-date', _count('status', 'updatedNumberScheduled'),
           'integer'),
    Column('Available', _count('status', 'numberAvailable'), 'integer'),
    Column('Node Selector', _selector('spec', 'template', 'spec',
                                      'nodeSelector')),
    AGE, *_WIDE, _SELECTOR)


# -- services and configuration -----------------------------------------------

def _external_ip(service: dict, now: datetime.datetime) -> str:
    spec = service.get('spec', {})
    ingress = [i.get('ip') or i.get('hostname', '') for i in
               service.get('status', {}).get('loadBalancer', {}).get(
                   'ingress') or []]
    external = list(spec.get('externalIPs') or [])
    if spec.get('type') == 'LoadBalancer':
        return ','.join(ingress + external) or '<pending>'
    if spec.get('type') == 'ExternalName':
        return spec.get('externalName', '')
    return ','.join(external) or NONE


def _ports(service: dict, now: datetime.datetime) -> str:
    return ','.join(
        f'{p.get("port")}' + (f':{p["nodePort"]}' if p.get('nodePort')
                              else '') + f'/{p.get("protocol", "TCP")}'
        for p in service.get('spec', {}).get('ports') or []) or NONE


def _entries(*keys: str) -> Cell:
    def cell(obj: dict, now: datetime.datetime) -> int:
        return sum(len(obj.get(key) or {}) for key in keys)
    return cell


SERVICE = (NAME, Column('Type', _path('spec', 'type', default='ClusterIP')),
           Column('Cluster-IP', _path('spec', 'clusterIP', default=NONE)),
           Column('External-IP', _external_ip),
           Column('Port(s)', _ports), AGE,
           Column('Selector', _selector('spec', 'selector'), priority=1))
SECRET = (NAME, Column('Type', _path('type')),
          Column('Data', _entries('data'), 'integer'), AGE)
CONFIG_MAP = (NAME, Column('Data', _entries('data', 'binaryData'),
                           'integer'), AGE)
SERVICE_ACCOUNT = (NAME, Column('Secrets', _entries('secrets'), 'integer'),
                   AGE)

COLUMNS: dict[str, tuple[Column, ...]] = {
    'Node': NODE, 'Namespace': NAMESPACE, 'Pod': POD,
    'PersistentVolume': PERSISTENT_VOLUME,
    'PersistentVolumeClaim': PERSISTENT_VOLUME_CLAIM,
    'Deployment': DEPLOYMENT, 'ReplicaSet': REPLICA_SET,
    'StatefulSet': STATEFUL_SET, 'DaemonSet': DAEMON_SET,
    'Service': SERVICE, 'Secret': SECRET, 'ConfigMap': CONFIG_MAP,
    'ServiceAccount': SERVICE_ACCOUNT,
}

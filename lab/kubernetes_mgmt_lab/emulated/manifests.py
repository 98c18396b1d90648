"""Reading manifests for ``kubectl apply|create|delete -f``: files,
directories, ``-`` (stdin) and URLs; YAML multi-doc, JSON, Lists."""
from __future__ import annotations

import base64
import copy
import os
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass

import yaml

from kubernetes_mgmt_lab.emulated import cluster, kinds
from kubernetes_mgmt_lab.emulated.host import host_path
from kubernetes_mgmt_lab.emulated.kubectl_common import KubectlError

# Built-in kinds the API server knows besides those in ``kinds``.
BUILTIN = {k.kind for k in kinds.KINDS} | {
    'Job', 'CronJob', 'Ingress', 'IngressClass', 'NetworkPolicy',
    'LimitRange', 'ResourceQuota', 'HorizontalPodAutoscaler', 'Endpoints',
    'EndpointSlice', 'APIService', 'MutatingWebhookConfiguration',
    'ValidatingWebhookConfiguration', 'CSIDriver', 'CSINode',
    'RuntimeClass', 'Lease', 'ControllerRevision', 'PodTemplate',
    'ReplicationController', 'VolumeAttachment', 'FlowSchema',
    'PriorityLevelConfiguration', 'ValidatingAdmissionPolicy',
    'ValidatingAdmissionPolicyBinding', 'CertificateSigningRequest'}


@dataclass
class Doc:
    source: str                 # file name for messages
    obj: dict


def _read_source(path: str) -> str:
    if path == '-':
        return sys.stdin.read()
    if path.startswith(('http://', 'https://')):
        try:
            with urllib.request.urlopen(path, timeout=30) as resp:  # noqa: S310
                return resp.read().decode()
        except (urllib.error.URLError, OSError) as e:
            raise KubectlError(f'unable to read URL "{path}", server '
                               f'reported {e}') from None
    try:
        with open(host_path(path), encoding='utf-8') as f:
            return f.read()
    except OSError:
        raise KubectlError(f'the path "{path}" does not exist') from None


def _files(path: str, recursive: bool) -> list[str]:
    real = host_path(path)
    if path == '-' or '://' in path or not os.path.isdir(real):
        return [path]
    found = []
    for root, dirs, names in os.walk(real):
        for name in sorted(names):
            if name.endswith(('.yaml', '.yml', '.json')):
                rel = os.path.relpath(os.path.join(root, name), real)
                found.append(os.path.join(path, rel))
        if not recursive:
            dirs.clear()
    return found


def load(paths: list[str], recursive: bool = False) -> list[Doc]:
    docs = []
    for given in paths:
        for path in _files(given, recursive):
            try:
                parsed = list(yaml.safe_load_all(_read_source(path)))
            except yaml.YAMLError as e:
                raise KubectlError(f'error parsing {path}: {e}') from None
            for obj in parsed:
                docs += _expand(path, obj)
    if not docs:
        raise KubectlError('no objects passed to apply')
    return docs


def _expand(source: str, obj) -> list[Doc]:
    if not obj:
        return []
    if not isinstance(obj, dict) or not obj.get('kind') or \
            not obj.get('apiVersion'):
        raise KubectlError(f'error validating "{source}": error validating '
                           'data: [apiVersion not set, kind not set]')
    if obj['kind'].endswith('List') and 'items' in obj:
        return [d for item in obj['items'] for d in _expand(source, item)]
    return [Doc(source, obj)]


def known_kind(state: dict, obj: dict) -> bool:
    if obj['kind'] in BUILTIN:
        return True
    for crd in cluster.objects_of(state, 'CustomResourceDefinition'):
        names = crd.get('spec', {}).get('names', {})
        if names.get('kind') == obj['kind']:
            return True
    return False


def normalize(obj: dict, namespace: str) -> dict:
    """What the API server does to a submitted object."""
    obj = copy.deepcopy(obj)
    meta = obj.setdefault('metadata', {})
    if kinds.for_object(obj).namespaced:
        meta.setdefault('namespace', namespace)
    else:
        meta.pop('namespace', None)
    if obj['kind'] == 'Secret':
        data = obj.setdefault('data', {}) or {}
        for key, value in (obj.pop('stringData', None) or {}).items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj['data'] = data
        obj.setdefault('type', 'Opaque')
    elif obj['kind'] == 'Namespace':
        obj.setdefault('status', {'phase': 'Active'})
        meta.setdefault('labels', {})['kubernetes.io/metadata.name'] = \
            meta['name']
    elif obj['kind'] == 'Pod':
        obj.setdefault('spec', {}).setdefault('tolerations', [])
        obj['status'] = {'phase': 'Pending', 'conditions': []}
    elif obj['kind'] in ('Deployment', 'DaemonSet', 'StatefulSet'):
        obj.setdefault('status', {})
    return obj

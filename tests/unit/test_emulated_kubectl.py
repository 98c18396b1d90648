"""kubectl stand-in: node maintenance, volumes, accounts and readiness
on a small emulated cluster (one master, two workers)."""
from __future__ import annotations

import base64
import json
import ssl
import urllib.request

import pytest

from kubernetes_mgmt_lab.emulated import testing

PVS = """\
apiVersion: v1
kind: PersistentVolume
metadata:
  name: nfs-pv1
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ''
  nfs: {server: 10.0.0.50, path: /volume/nfs/pv1}
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: nfs-pv2
spec:
  capacity: {storage: 2Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: ''
  nfs: {server: 10.0.0.50, path: /volume/nfs/pv2}
"""
PVC = """\
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ''
  resources: {requests: {storage: 2Gi}}
"""
PDB = """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: demo, namespace: default}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: klab-demo}}
"""
SA_SECRET = """\
apiVersion: v1
kind: Secret
metadata:
  name: cnf-admin-token
  namespace: cnf
  annotations: {kubernetes.io/service-account.name: cnf-admin}
type: kubernetes.io/service-account-token
"""


@pytest.fixture
def sim(tmp_path):
    cluster = testing.init_cluster(str(tmp_path), workers=2)
    yield cluster
    cluster.cleanup()


def _apply(sim, text: str, *extra: str):
    return sim.masters[0].run('kubectl', '--kubeconfig',
                              '/etc/kubernetes/admin.conf', 'apply', '-f',
                              '-', *extra, stdin=text)


def _pods_on(sim, node: str) -> list[dict]:
    return sim.view().pods(node=node)


def test_cordon_drain_delete_in_order(sim):
    assert any(p['metadata']['namespace'] == 'default'
               for p in _pods_on(sim, 'worker-0'))
    assert sim.kubectl('cordon', 'worker-0').stdout.strip() == \
        'node/worker-0 cordoned'
    out = sim.kubectl('drain', 'worker-0', '--ignore-daemonsets',
                      '--delete-emptydir-data', '--timeout=30s')
    assert 'node/worker-0 drained' in out.stdout
    assert 'ignoring DaemonSet-managed Pods' in out.stderr
    left = _pods_on(sim, 'worker-0')
    assert left and all(p['metadata']['ownerReferences'][0]['kind'] ==
                        'DaemonSet' for p in left)
    # evicted ReplicaSet pods were recreated on the other worker
    assert len([p for p in _pods_on(sim, 'worker-1')
                if p['metadata']['namespace'] == 'default']) == 2
    assert sim.kubectl('delete', 'node', 'worker-0').stdout.strip() == \
        'node "worker-0" deleted'
    assert 'worker-0' not in sim.view().node_names()
    assert not _pods_on(sim, 'worker-0')
    order = [e['argv'][3] for e in sim.view().events(command='kubectl')
             if e['argv'][3] in ('cordon', 'drain', 'delete')]
    assert order == ['cordon', 'drain', 'delete']
    gone = sim.kubectl('delete', 'node', 'worker-0', check=False)
    assert gone.returncode == 1
    assert 'nodes "worker-0" not found' in gone.stderr


def test_drain_refuses_daemonset_pods_without_flag(sim):
    proc = sim.kubectl('drain', 'worker-1', check=False)
    assert proc.returncode == 1
    assert 'cannot delete DaemonSet-managed Pods (use --ignore-daemonsets' \
        in proc.stderr
    assert sim.view().node('worker-1')['spec']['unschedulable'] is True
    assert 'SchedulingDisabled' in sim.kubectl('get', 'nodes').stdout


def test_drain_waits_for_pdb_until_timeout(sim):
    assert _apply(sim, PDB).returncode == 0
    node = next(p['spec']['nodeName'] for p in sim.view().pods('default'))
    proc = sim.kubectl('drain', node, '--ignore-daemonsets',
                       '--timeout=1s', check=False)
    assert proc.returncode == 1
    assert 'global timeout reached: 1s' in proc.stderr
    assert 'There are pending nodes to be drained' in proc.stderr
    sim.kubectl('delete', 'pdb', 'demo')
    sim.kubectl('drain', node, '--ignore-daemonsets', '--timeout=5s')


def test_drain_bare_pod_needs_force(sim):
    pod = ('apiVersion: v1\nkind: Pod\nmetadata: {name: bare}\nspec:\n'
           '  nodeSelector: {}\n  containers: [{name: c, image: busybox}]\n'
           '  volumes: [{name: scratch, emptyDir: {}}]\n')
    assert _apply(sim, pod).returncode == 0
    node = sim.view().pods('default')
    node = next(p['spec']['nodeName'] for p in node
                if p['metadata']['name'] == 'bare')
    proc = sim.kubectl('drain', node, '--ignore-daemonsets', check=False)
    assert 'declare no controller (use --force' in proc.stderr
    proc = sim.kubectl('drain', node, '--ignore-daemonsets', '--force',
                       check=False)
    assert 'local storage (use --delete-emptydir-data' in proc.stderr
    sim.kubectl('drain', node, '--ignore-daemonsets', '--force',
                '--delete-emptydir-data')
    assert 'bare' not in [p['metadata']['name']
                          for p in sim.view().pods('default')]


def test_persistent_volumes(sim):
    out = _apply(sim, PVS)
    assert out.stdout.split('\n')[:2] == [
        'persistentvolume/nfs-pv1 created',
        'persistentvolume/nfs-pv2 created']
    assert _apply(sim, PVS).stdout.count('unchanged') == 2
    pvs = json.loads(sim.kubectl('get', 'pv', '-o', 'json').stdout)
    assert [p['status']['phase'] for p in pvs['items']] == ['Available'] * 2
    assert pvs['items'][0]['spec']['nfs']['server'] == '10.0.0.50'
    table = sim.kubectl('get', 'pv').stdout.splitlines()
    assert table[0].split()[:3] == ['NAME', 'CAPACITY', 'ACCESS']
    assert _apply(sim, PVC).returncode == 0
    assert sim.view().pv('nfs-pv2')['status']['phase'] == 'Bound'
    sim.kubectl('delete', 'pv', 'nfs-pv1')
    assert sim.view().pv('nfs-pv1') is None
    # a bound volume is held by its protection finalizer
    sim.kubectl('delete', 'pv', 'nfs-pv2', '--wait=false')
    assert 'Terminating' in sim.kubectl('get', 'pv', 'nfs-pv2').stdout
    sim.kubectl('delete', 'pvc', 'data')
    assert sim.view().pvs() == []


def test_service_account_token_secret(sim):
    sim.kubectl('create', 'namespace', 'cnf')
    sim.kubectl('create', 'serviceaccount', 'cnf-admin', '-n', 'cnf')
    out = sim.kubectl('create', 'clusterrolebinding', 'cnf-admin',
                      '--clusterrole=cluster-admin',
                      '--serviceaccount=cnf:cnf-admin').stdout
    assert out.strip() == ('clusterrolebinding.rbac.authorization.k8s.io/'
                           'cnf-admin created')
    assert _apply(sim, SA_SECRET).returncode == 0
    data = sim.kubectl('get', 'secret', 'cnf-admin-token', '-n', 'cnf',
                       '-o', 'jsonpath={.data.token}').stdout
    token = base64.b64decode(data).decode()
    assert token.count('.') == 2
    ca = sim.kubectl('get', 'secret', 'cnf-admin-token', '-n', 'cnf',
                     '-o', 'jsonpath={.data.ca\\.crt}').stdout
    master = sim.masters[0]
    with open(master.path('/etc/kubernetes/pki/ca.crt'), 'rb') as f:
        assert base64.b64decode(ca) == f.read()
    binding = sim.view().cluster_role_bindings()[0]
    assert binding['subjects'] == [{'kind': 'ServiceAccount',
                                    'name': 'cnf-admin', 'namespace': 'cnf'}]
    # the stand-in API server accepts the token
    ctx = ssl.create_default_context(cadata=base64.b64decode(ca).decode())
    req = urllib.request.Request(
        f'https://{master.ip}:6443/api/v1/namespaces',
        headers={'Authorization': f'Bearer {token}'})
    with urllib.request.urlopen(req, context=ctx) as resp:  # noqa: S310
        names = [n['metadata']['name'] for n in json.load(resp)['items']]
    assert 'cnf' in names
    dup = sim.kubectl('create', 'serviceaccount', 'cnf-admin', '-n', 'cnf',
                      check=False)
    assert dup.returncode == 1 and 'already exists' in dup.stderr


def test_labels_and_selectors(sim):
    out = sim.kubectl('label', 'node', 'worker-0', 'CIS-node=compute-1')
    assert out.stdout.strip() == 'node/worker-0 labeled'
    clash = sim.kubectl('label', 'node', 'worker-0', 'CIS-node=compute-2',
                        check=False)
    assert clash.returncode == 1
    assert "'CIS-node' already has a value (compute-1)" in clash.stderr
    sim.kubectl('label', 'node', 'worker-0', 'CIS-node=compute-2',
                '--overwrite')
    bad = sim.kubectl('label', 'node', 'worker-1', 'zone=a b', check=False)
    assert bad.returncode == 1 and 'invalid label value' in bad.stderr
    names = sim.kubectl('get', 'nodes', '-l', 'CIS-node=compute-2', '-o',
                        'jsonpath={.items[*].metadata.name}').stdout
    assert names == 'worker-0'
    assert sim.view().node('worker-0')['metadata']['labels'][
        'CIS-node'] == 'compute-2'


def test_readiness_follows_kubelet_and_cni(tmp_path):
    sim = testing.init_cluster(str(tmp_path), workers=1, cni=False)
    try:
        proc = sim.kubectl('wait', '--for=condition=Ready',
                           'node/worker-0', '--timeout=1s', check=False)
        assert proc.returncode == 1
        assert 'timed out waiting for the condition on nodes/worker-0' in \
            proc.stderr
        assert _apply(sim, testing.CNI_MANIFEST).returncode == 0
        out = sim.kubectl('wait', '--for=condition=Ready', 'nodes', '--all',
                          '--timeout=10s').stdout
        assert 'node/worker-0 condition met' in out
        sim.workers[0].run('systemctl', 'stop', 'kubelet', check=True)
        assert not sim.view().node_ready('worker-0')
        assert 'NotReady' in sim.kubectl('get', 'node', 'worker-0').stdout
        sim.workers[0].run('systemctl', 'start', 'kubelet', check=True)
        assert sim.view().node_ready('worker-0')
    finally:
        sim.cleanup()


def test_apply_errors_like_kubectl(sim):
    unknown = _apply(sim, 'apiVersion: x.io/v1\nkind: Gadget\n'
                          'metadata: {name: g}\n')
    assert unknown.returncode == 1
    assert 'no matches for kind "Gadget"' in unknown.stderr
    no_ns = _apply(sim, 'apiVersion: v1\nkind: ServiceAccount\n'
                        'metadata: {name: s, namespace: nowhere}\n')
    assert no_ns.returncode == 1
    assert 'namespaces "nowhere" not found' in no_ns.stderr
    flag = sim.kubectl('get', 'nodes', '--bogus', check=False)
    assert flag.returncode == 1
    assert flag.stderr.startswith('error: unknown flag: --bogus')
    kind = sim.kubectl('get', 'gizmos', check=False)
    assert "doesn't have a resource type \"gizmos\"" in kind.stderr

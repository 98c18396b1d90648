"""The whole story through Tacker: the Mgmt Driver builds an HA cluster
and registers it as a VIM; an administrator gives namespace ns-a its
access and registers a second VIM whose token only works there; a CNF
lives its life in ns-a on that VIM (instantiate, scale, heal of a pod)
while a master of the cluster is healed; the cluster cannot be
terminated while the CNF exists; then both go.

Real: Tacker 16, Heat, Keystone, Glance, Barbican, the openstack CLI,
kubectl (the Go binary, run on a master), HAProxy and keepalived, the
plugin's Mgmt Driver and kubernetes-namespaced infra driver. Emulated:
Kubernetes' server side (the lab's API on each master) and the VMs.
The tests run in file order and share the VNFs they create.
"""
from __future__ import annotations

import base64
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from kubernetes_mgmt.vnf_package.layout import cnf_package_dir
from kubernetes_mgmt_lab.emulated.cluster_api import read_audit_log
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.openstack import inspect, tacker
from kubernetes_mgmt_lab.openstack.layout import Root
from kubernetes_mgmt_lab.openstack.operator import OperationFailed, Operator

pytestmark = pytest.mark.lab

REPO = Path(__file__).resolve().parents[2]
REQUESTS = REPO / 'samples' / 'requests'
CNF_REQUESTS = REPO / 'samples' / 'cnf_requests'
NS = 'ns-a'
CNF_USER = f'system:serviceaccount:{NS}:tacker-cnf'
ADMIN_CONF = '/etc/kubernetes/admin.conf'
MASTER = 'masterNode'


@dataclass
class Story:
    root: Root
    op: Operator
    cluster: str                   # the cluster VNF's id
    cluster_vim: str
    ns_vim: str = ''
    token: str = ''
    ca_pem: str = ''
    auth_url: str = ''
    cnf_vnfd: str = ''
    cnf: str = ''
    refused_op: str = ''


def _build(root: Root, name: str, *args: str) -> str:
    csar = root.of(name)
    subprocess.run([tacker.VENV.bin('kubernetes-mgmt'), 'package', 'build',
                    '-o', csar, *args], check=True, capture_output=True)
    return csar


@pytest.fixture(scope='module')
def story(tacker_site) -> Iterator[Story]:
    root = Root(tacker_site.root)
    op = Operator(root, echo=print)
    os_vim = op.register_vim()
    _, vnfd_id = op.onboard(_build(root, 'k8s_cluster_story.zip'))
    cluster = op.create(vnfd_id, name='story-cluster')
    s = Story(root, op, cluster, '')
    try:
        request = op.request_file(
            str(REQUESTS / 'complex_kubernetes_param_file.json'), os_vim,
            'story-cluster')
        op.instantiate(cluster, request)
        shown = op.show(cluster)
        s.cluster_vim, = [c['vimId'] for c in shown['VIM Connection Info']
                          if c['vimType'] == 'kubernetes']
        yield s
    finally:
        _clean_up(s)


def _clean_up(s: Story) -> None:
    """Whatever the tests left: the VNFs (the CNF first) and the
    namespace's VIM. The packages
    stay onboarded for later modules (Tacker 16 takes a VNFD id once per
    database, even after its package is deleted)."""
    for vnf in (s.cnf, s.cluster):
        if not vnf:
            continue
        try:
            if s.op.show(vnf)['Instantiation State'] == 'INSTANTIATED':
                if vnf == s.cluster and s.refused_op:
                    s.op.retry(s.refused_op)    # it holds the VNF
                else:
                    s.op.terminate(vnf)
            s.op.run('vnflcm', 'delete', vnf, parse=False)
        except LabError as exc:
            print(f'clean-up of VNF {vnf}: {exc}')
    if s.ns_vim:
        try:
            s.op.run('vim', 'delete', s.ns_vim, parse=False)
        except LabError as exc:
            print(f'clean-up of VIM {s.ns_vim}: {exc}')


def _masters(s: Story) -> list[inspect.Vnfc]:
    return [v for v in inspect.vnfcs(s.root, s.op.show(s.cluster))
            if v.vdu == MASTER]


def kubectl(s: Story, *args: str, input: str | None = None,
            check: bool = True) -> subprocess.CompletedProcess:
    """The real kubectl on a master, as root with the admin kubeconfig
    (the first master that answers: one may be being healed)."""
    last = None
    for master in _masters(s):
        done = inspect.run_in_vm(s.root, master,
                                 ['kubectl', '--kubeconfig', ADMIN_CONF,
                                  *args], input=input)
        if done.returncode == 0 or not check:
            return done
        last = done
    raise AssertionError(f'kubectl {" ".join(args)}: {last.stderr}')


def get_json(s: Story, *args: str) -> dict:
    return json.loads(kubectl(s, 'get', *args, '-o', 'json').stdout)


def ready_nodes(s: Story) -> list[str]:
    return sorted(
        n['metadata']['name'] for n in get_json(s, 'nodes')['items']
        if any(c['type'] == 'Ready' and c['status'] == 'True'
               for c in n['status']['conditions']))


def web_pods(s: Story) -> list[str]:
    return sorted(p['metadata']['name']
                  for p in get_json(s, 'pods', '-n', NS)['items']
                  if p['metadata']['name'].startswith('web-')
                  and p['status'].get('phase') == 'Running'
                  and not p['metadata'].get('deletionTimestamp'))


def web_replicas(s: Story) -> tuple[int, int]:
    deployment = get_json(s, 'deployment', 'web', '-n', NS)
    return (deployment['spec']['replicas'],
            deployment['status'].get('readyReplicas', 0))


def cnf_shown(s: Story) -> dict:
    shown = s.op.show(s.cnf)
    assert shown['Instantiation State'] == 'INSTANTIATED'
    return shown


def cnf_vnfcs(s: Story) -> dict[str, str]:
    """VNFC id -> pod name, as Tacker records them."""
    info = cnf_shown(s)['Instantiated Vnf Info']
    return {v['id']: v['computeResource']['resourceId']
            for v in info['vnfcResourceInfo']}


# -- the cluster and its VIM -------------------------------------------------

def test_the_cluster_vnf_registers_its_vim(story):
    assert len(ready_nodes(story)) == 5
    vims = {v['ID']: v for v in story.op.run('vim', 'list')}
    assert vims[story.cluster_vim]['Type'] == 'kubernetes'


def test_a_namespace_vim_holds_a_token_that_works_there_only(story):
    access = (cnf_package_dir() / 'Files' / 'kubernetes' /
              'tacker-cnf-access.yaml').read_text(encoding='utf-8')
    kubectl(story, 'apply', '-f', '-', input=access)
    secret = get_json(story, 'secret', 'tacker-cnf-token', '-n', NS)
    story.token = base64.b64decode(secret['data']['token']).decode()
    story.ca_pem = base64.b64decode(secret['data']['ca.crt']).decode()
    shown = story.op.run('vim', 'show', story.cluster_vim)
    story.auth_url = shown['auth_url']
    story.ns_vim = story.op.register_kubernetes_vim(
        'story-ns-a', story.auth_url, story.token, story.ca_pem, NS)
    vims = {v['ID']: v for v in story.op.run('vim', 'list')}
    assert vims[story.ns_vim]['Type'] == 'kubernetes'
    as_cnf = ['--token', story.token, '--kubeconfig', '/dev/null',
              '--server', story.auth_url, '--certificate-authority',
              '/etc/kubernetes/pki/ca.crt']
    master = _masters(story)[0]
    inside = inspect.run_in_vm(story.root, master,
                               ['kubectl', *as_cnf, 'get', 'pods', '-n', NS])
    assert inside.returncode == 0, inside.stderr
    for where in ('default', 'kube-system'):
        outside = inspect.run_in_vm(story.root, master, [
            'kubectl', *as_cnf, 'get', 'pods', '-n', where])
        assert outside.returncode != 0
        assert f'User "{CNF_USER}" cannot list resource "pods"' in \
            outside.stderr


# -- the CNF on that VIM ----------------------------------------------------

def test_instantiate_the_cnf_in_its_namespace(story):
    _, story.cnf_vnfd = story.op.onboard(
        _build(story.root, 'web_cnf.zip', '--cnf'))
    story.cnf = story.op.create(story.cnf_vnfd, name='story-web')
    with open(CNF_REQUESTS / 'instantiate_cnf_request.json',
              encoding='utf-8') as f:
        body = json.load(f)
    body['vimConnectionInfo'][0].update(id=story.ns_vim,
                                        vimId=story.ns_vim)
    path = story.root.of('requests', 'story-web.json')
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as f:
        json.dump(body, f)
    story.op.instantiate(story.cnf, path)

    assert web_replicas(story) == (2, 2)
    pods = web_pods(story)
    assert sorted(cnf_vnfcs(story).values()) == pods
    assert all(',' not in name for name in pods)
    assert get_json(story, 'service', 'web', '-n', NS)['spec']['ports'][0][
        'port'] == 80
    assert get_json(story, 'configmap', 'web-config', '-n', NS)['data']


def test_the_cnf_metadata_names_its_namespace(story):
    shown = story.op.run('vnflcm', 'show', story.cnf)
    metadata = {k: v for k, v in shown.items() if 'etadata' in k}
    assert any(isinstance(v, dict) and v.get('namespace') == NS
               for v in metadata.values()), shown


def test_scale_the_cnf_out_and_in(story):
    story.op.scale(story.cnf, 'SCALE_OUT', 'web_aspect')
    assert web_replicas(story) == (3, 3)
    assert len(cnf_vnfcs(story)) == 3 == len(web_pods(story))
    story.op.scale(story.cnf, 'SCALE_IN', 'web_aspect')
    assert web_replicas(story) == (2, 2)
    assert sorted(cnf_vnfcs(story).values()) == web_pods(story)


def test_heal_one_pod_of_the_cnf(story):
    before = cnf_vnfcs(story)
    vnfc, pod = sorted(before.items())[0]
    story.op.heal(story.cnf, (vnfc,))
    after = web_pods(story)
    assert pod not in after and len(after) == 2
    assert sorted(cnf_vnfcs(story).values()) == after


def _vip_holder(s: Story) -> str | None:
    vip = s.auth_url.split('//', 1)[1].rsplit(':', 1)[0]
    for master in _masters(s):
        addrs = inspect.run_in_vm(s.root, master, ['ip', '-br', 'addr'])
        if f' {vip}/' in addrs.stdout:
            return master.id
    return None


def test_heal_a_master_while_the_cnf_is_served_through_the_vip(story):
    """The namespace's VIM keeps answering through the VIP while a
    master that does not hold the VIP is rebuilt."""
    holder = _vip_holder(story)
    target = next(m for m in _masters(story) if m.id != holder)
    ca = story.root.of('story-ca.crt')
    with open(ca, 'w', encoding='utf-8') as f:
        f.write(story.ca_pem)
    url = (f'{story.auth_url}/apis/apps/v1/namespaces/{NS}/deployments/'
           'web')
    answers: list[int | str] = []    # a status code, or what failed
    retried: list[int] = []           # reads the client sent again
    stop = threading.Event()

    def watch_the_cnf() -> None:
        with requests.Session() as http:
            # Retries as the kubernetes client's (Tacker's, the CNF
            # driver's): urllib3's default, up to 3 on a lost connection,
            # e.g. a kept-alive one the removed API server closed.
            http.mount('https://', HTTPAdapter(max_retries=Retry(3)))
            http.headers['Authorization'] = f'Bearer {story.token}'
            while not stop.is_set():
                try:
                    answer = http.get(url, verify=ca, timeout=5)
                    answers.append(answer.status_code)
                    if answer.raw.retries and answer.raw.retries.history:
                        retried.append(len(answers) - 1)
                except requests.RequestException as exc:
                    answers.append(f'{type(exc).__name__}: {exc}')
                stop.wait(0.2)

    worker = threading.Thread(target=watch_the_cnf)
    worker.start()
    try:
        story.op.heal(story.cluster, (target.id,))
    finally:
        stop.set()
        worker.join()
    failed = [(i, a) for i, a in enumerate(answers) if a != 200]
    print(f'\n{len(answers)} reads of the CNF through the VIP during the '
          f'heal, {len(failed)} failed, {len(retried)} retried {retried}')
    assert answers and not failed, \
        f'(read, answer) of {len(answers)} reads: {failed}'

    assert len(ready_nodes(story)) == 5
    assert web_replicas(story) == (2, 2)


def test_terminating_the_cluster_is_refused_while_the_cnf_exists(story):
    with pytest.raises(OperationFailed) as failed:
        story.op.terminate(story.cluster)
    story.refused_op = failed.value.op['ID']
    assert 'CNF instance(s)' in json.dumps(failed.value.op)
    assert story.cnf in json.dumps(failed.value.op)
    assert len(ready_nodes(story)) == 5
    assert story.cluster_vim in {v['ID'] for v in story.op.run('vim',
                                                               'list')}


def test_the_cnf_driver_stayed_in_its_namespace(story):
    """What Tacker and the CNF driver asked with the namespace's token
    (the Python client; kubectl is this test's): its namespace, discovery,
    and the namespace list Tacker reads when it registers the VIM."""
    view = inspect.cluster_dir(story.root, _masters(story)[0].lab)
    paths = {r['path'] for r in read_audit_log(view)
             if r['user'] == CNF_USER
             and not r['userAgent'].startswith('kubectl/')}
    assert any(p.startswith(f'/apis/apps/v1/namespaces/{NS}/') for p in
               paths)
    others = [p for p in paths if '/namespaces/' in p
              and not p.split('/namespaces/', 1)[1].startswith(
                  (f'{NS}/', NS))]
    assert others == []


def test_terminate_the_cnf_then_the_cluster(story):
    story.op.terminate(story.cnf)
    assert story.op.show(story.cnf)['Instantiation State'] == \
        'NOT_INSTANTIATED'
    assert web_pods(story) == []
    assert get_json(story, 'namespace', NS)['metadata']['name'] == NS
    story.op.retry(story.refused_op)
    assert story.op.show(story.cluster)['Instantiation State'] == \
        'NOT_INSTANTIATED'
    vims = {v['ID'] for v in story.op.run('vim', 'list')}
    assert story.cluster_vim not in vims

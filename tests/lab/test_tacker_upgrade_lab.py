"""An in-place Kubernetes upgrade through Tacker v2's ChangeCurrentVnfPackage
(``openstack vnflcm change-vnfpkg``), as the README's "Upgrades" section
shows it: an HA cluster (3 masters, 3 workers) instantiated from a
package naming 1.36 moves to the package naming 1.37, with a Deployment
behind a PodDisruptionBudget and a client reading through the VIP all
along. Real: Tacker 16 and the OpenStack services, the openstack CLI,
HAProxy and keepalived, kubectl, SSH, the install script. Emulated:
kubeadm (upgrade, certificates), kubelet and the API server, VMs.

The tests run in file order and share the one VNF they create."""
from __future__ import annotations

import json
import os
import subprocess
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

import pytest

from kubernetes_mgmt.cluster import admin_account, etcd_snapshot
from kubernetes_mgmt.operations.upgrade import NODE_VERSIONS_KEY, VERSION_KEY
from kubernetes_mgmt.shim.v2.instance import VIM_KEY
from kubernetes_mgmt.state.instance_state import EXPIRY_KEY, METADATA_KEY
from kubernetes_mgmt_lab.emulated.config import set_clock_offset
from kubernetes_mgmt_lab.emulated.faults import (
    clear_faults,
    fail_upgrade_node,
)
from kubernetes_mgmt_lab.emulated.view import half_upgraded
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.openstack import inspect, tacker, vip_reader
from kubernetes_mgmt_lab.openstack.layout import Root
from kubernetes_mgmt_lab.openstack.operator import OperationFailed, Operator
from kubernetes_mgmt_lab.openstack.vip_reader import VipReader

pytestmark = pytest.mark.lab

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
REQUESTS = os.path.join(REPO, 'samples', 'requests_v2')
USER_DATA = os.path.join(REQUESTS, 'user_data_params.json')
MASTER, WORKER = 'masterNode', 'workerNode'
ADMIN_CONF = '/etc/kubernetes/admin.conf'
OLD, NEW = '1.36', '1.37'
APP = {'app': 'guarded'}
BUDGET_MIN_AVAILABLE = 2
REPLICAS = 3
# Seconds a drain may take (the request's): a drain the budget blocks
# fails after it; one it allows takes a few seconds in the lab.
DRAIN_TIMEOUT = 30


@dataclass
class Site:
    root: Root
    op: Operator
    vim_id: str
    vnfds: dict[str, str]           # minor -> VNFD id
    vnf_id: str = ''
    failed_op: str = ''
    watch: Watch | None = None


@dataclass
class Watch:
    """What a client sees while the upgrade runs: reads through the VIP
    (``VipReader``), and every second the workers cordoned and the
    guarded pods Ready."""

    reader: VipReader
    workers: set[str]
    cordoned_max: int = 0
    ready_min: int = REPLICAS
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None


def _build(root: Root, minor: str) -> str:
    csar = root.of(f'k8s_cluster_v2_{minor}.zip')
    vnfd_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f'kubernetes-mgmt/{minor}'))
    subprocess.run([tacker.VENV.bin('kubernetes-mgmt'), 'package', 'build',
                    '--v2', '--kubernetes-version', minor,
                    '--descriptor-id', vnfd_id, '-o', csar],
                   check=True, capture_output=True)
    return csar


@pytest.fixture(scope='module')
def site(tacker_site) -> Iterator[Site]:
    root = Root(tacker_site.root)
    op = Operator(root, echo=print, api_version=2)
    vim_id = op.register_vim()
    vnfds = {minor: op.onboard(_build(root, minor))[1]
             for minor in (OLD, NEW, '1.38')}
    the_site = Site(root, op, vim_id, vnfds)
    yield the_site
    if the_site.watch is not None:
        _stop_watch(the_site.watch)
    _clean_up(the_site)
    print('\nseconds through Tacker (CLI call to op COMPLETED):')
    for name, seconds in op.timings.items():
        print(f'  {name:<24} {seconds:6.1f}')


def _clean_up(s: Site) -> None:
    """Best effort, for a site that outlives the session (a developer's
    KMGMT_LAB_SERVICES): the VNF and its VMs go."""
    if not s.vnf_id:
        return
    try:
        if s.op.show(s.vnf_id)['Instantiation State'] == 'INSTANTIATED':
            s.op.terminate(s.vnf_id)
        s.op.run('vnflcm', 'delete', s.vnf_id, parse=False)
    except LabError as exc:     # the tests' outcome stays
        print(f'clean-up of VNF {s.vnf_id}: {exc}')


def _change_request(s: Site, minor: str, **params) -> str:
    def changes(body: dict) -> None:
        body['vnfdId'] = s.vnfds[minor]
        body['additionalParams'].update(params)
    return s.op.request_file(os.path.join(REQUESTS,
                                          'change_vnfpkg_request.json'),
                             s.vim_id, f'change-to-{minor}', changes)


# -- the cluster as its nodes and Tacker report it -------------------------

def _vnfcs(s: Site) -> list[inspect.Vnfc]:
    return inspect.vnfcs(s.root, s.op.show(s.vnf_id))


def kubectl(s: Site, *args: str, input: str | None = None
            ) -> subprocess.CompletedProcess:
    """The real kubectl on the first master that answers."""
    last = None
    for vnfc in _vnfcs(s):
        if vnfc.vdu != MASTER:
            continue
        done = inspect.run_in_vm(s.root, vnfc, ['kubectl', '--kubeconfig',
                                                ADMIN_CONF, *args],
                                 input=input)
        if done.returncode == 0:
            return done
        last = done
    raise AssertionError(f'kubectl {" ".join(args)}: {last and last.stderr}')


def get_json(s: Site, *args: str) -> dict:
    return json.loads(kubectl(s, 'get', *args, '-o', 'json').stdout)


def node_versions(s: Site) -> dict[str, tuple[str, bool]]:
    """Node name -> (kubelet version, cordoned)."""
    return {n['metadata']['name']: (
        n['status']['nodeInfo']['kubeletVersion'],
        bool(n['spec'].get('unschedulable')))
        for n in get_json(s, 'nodes')['items']}


def server_version(s: Site) -> str:
    return json.loads(kubectl(s, 'version', '-o', 'json').stdout)[
        'serverVersion']['gitVersion']


def minor_of(version: str) -> str:
    return '.'.join(version.lstrip('v').split('.')[:2])


def half_upgraded_nodes(s: Site) -> list[str]:
    return half_upgraded(inspect.cluster_dir(s.root))


# -- the client reading through the VIP -------------------------------------

def _start_watch(s: Site) -> Watch:
    secret = get_json(s, 'secret', '-n', admin_account.NAMESPACE,
                      admin_account.SECRET)
    endpoint = s.op.show(s.vnf_id)['metadata'][VIM_KEY]['endpoint']
    workers = {n for n, _ in node_versions(s).items()
               if n not in _master_names(s)}
    reader = vip_reader.from_admin_secret(
        f'{endpoint}/apis/apps/v1/namespaces/default/deployments/guarded',
        secret, s.root.of('upgrade-ca.crt')).start()
    watch = Watch(reader, workers)
    watch.thread = threading.Thread(target=_count_disruption,
                                    args=(s, watch))
    watch.thread.start()
    return watch


def _stop_watch(watch: Watch) -> None:
    watch.reader.stop()
    watch.stop.set()
    if watch.thread is not None:
        watch.thread.join()


def _count_disruption(s: Site, watch: Watch) -> None:
    view = inspect.cluster(s.root)
    while not watch.stop.is_set():
        cordoned = [n['metadata']['name'] for n in view.nodes()
                    if n['metadata']['name'] in watch.workers
                    and n.get('spec', {}).get('unschedulable')]
        ready = [p for p in view.pods('default')
                 if p['metadata'].get('labels', {}).get('app') == 'guarded'
                 and not p['metadata'].get('deletionTimestamp')
                 and any(c.get('type') == 'Ready' and c.get('status') ==
                         'True' for c in p.get('status', {}).get(
                             'conditions', []))]
        watch.cordoned_max = max(watch.cordoned_max, len(cordoned))
        watch.ready_min = min(watch.ready_min, len(ready))
        watch.stop.wait(1.0)


def _master_names(s: Site) -> set[str]:
    ips = {v.ip for v in _vnfcs(s) if v.vdu == MASTER}
    return {name for name, ip in inspect.node_ips(
        inspect.cluster(s.root)).items() if ip in ips}


# -- the tests -------------------------------------------------------------

def test_instantiate_at_the_older_minor(site):
    site.vnf_id = site.op.create(site.vnfds[OLD], name='upgraded')
    site.op.instantiate(site.vnf_id, site.op.request_file(
        os.path.join(REQUESTS, 'instantiate_complex_request.json'),
        site.vim_id, 'upgraded'))
    site.op.scale(site.vnf_id, 'SCALE_OUT', 'worker_instance',
                  params=USER_DATA)
    versions = node_versions(site)
    assert len(versions) == 6
    assert {minor_of(v) for v, _ in versions.values()} == {OLD}
    assert minor_of(server_version(site)) == OLD
    shown = site.op.show(site.vnf_id)
    assert shown['Instantiated Vnf Info'] is not None
    labels = {'app': 'guarded'}
    kubectl(site, 'apply', '-f', '-', input=json.dumps({
        'apiVersion': 'v1', 'kind': 'List', 'items': [
            {'apiVersion': 'apps/v1', 'kind': 'Deployment',
             'metadata': {'name': 'guarded', 'namespace': 'default'},
             'spec': {'replicas': REPLICAS,
                      'selector': {'matchLabels': labels},
                      'template': {'metadata': {'labels': labels},
                                   'spec': {'containers': [{
                                       'name': 'pause',
                                       'image': 'registry.k8s.io/pause:3.10'}
                                   ]}}}},
            {'apiVersion': 'policy/v1', 'kind': 'PodDisruptionBudget',
             'metadata': {'name': 'guarded', 'namespace': 'default'},
             'spec': {'minAvailable': BUDGET_MIN_AVAILABLE,
                      'selector': {'matchLabels': labels}}}]}))


def test_a_skipped_minor_is_refused_before_any_change(site):
    before = node_versions(site)
    with pytest.raises(OperationFailed) as failed:
        site.op.change_vnfpkg(site.vnf_id, _change_request(site, '1.38'))
    error = json.dumps(failed.value.op['Error'])
    assert '1.36 to 1.38 skips 1 minor version(s)' in error, error
    assert 'to 1.37 first' in error
    # Given up: nothing changed, the instance keeps its package.
    site.op.fail(failed.value.op['ID'])
    assert node_versions(site) == before
    assert site.op.show(site.vnf_id)['VNFD ID'] == site.vnfds[OLD]


def test_a_failure_in_the_second_master_stops_the_upgrade(site):
    cluster_dir = inspect.cluster_dir(site.root)
    site.watch = _start_watch(site)
    # The first master runs "kubeadm upgrade apply"; the next one's
    # "kubeadm upgrade node" fails with its new API server started.
    for vnfc in _vnfcs(site):
        if vnfc.vdu == MASTER:
            fail_upgrade_node(cluster_dir, vnfc.lab_host, midway=True)
    try:
        with pytest.raises(OperationFailed) as failed:
            site.op.change_vnfpkg(site.vnf_id, _change_request(
                site, NEW, drain_timeout=DRAIN_TIMEOUT))
    finally:
        clear_faults(cluster_dir)
    site.failed_op = failed.value.op['ID']
    assert failed.value.op['Operation State'] == 'FAILED_TEMP'
    assert 'injected fault' in json.dumps(failed.value.op['Error'])
    versions = node_versions(site)
    upgraded = {n for n, (v, _) in versions.items() if minor_of(v) == NEW}
    assert len(upgraded) == 1       # the first master only
    assert not half_upgraded_nodes(site)


def test_rollback_is_refused_once_a_master_runs_the_new_minor(site):
    failed = site.op.rollback(site.failed_op)
    assert failed['Operation State'] == 'FAILED_TEMP'
    error = json.dumps(failed['Error'])
    assert 'rollback refused: the control plane is already upgraded' in \
        error, error
    assert 'op retry' in error


def test_a_drain_blocked_by_the_budget_stops_the_retry_naming_both(site):
    # The budget now allows no disruption at all.
    kubectl(site, 'patch', 'pdb', 'guarded', '--type', 'merge', '-p',
            json.dumps({'spec': {'minAvailable': REPLICAS}}))
    with pytest.raises(OperationFailed) as caught:
        site.op.retry(site.failed_op)
    failed = caught.value.op
    assert failed['Operation State'] == 'FAILED_TEMP'
    error = json.dumps(failed['Error'])
    assert 'PodDisruptionBudget default/guarded' in error, error
    versions = node_versions(site)
    cordoned = [n for n, (v, c) in versions.items() if c]
    assert len(cordoned) == 1
    assert minor_of(versions[cordoned[0]][0]) == OLD
    assert f'node {cordoned[0]} could not be drained' in error
    assert not half_upgraded_nodes(site)


def test_the_retry_completes_once_the_budget_is_relaxed(site):
    kubectl(site, 'patch', 'pdb', 'guarded', '--type', 'merge', '-p',
            json.dumps({'spec': {'minAvailable': BUDGET_MIN_AVAILABLE}}))
    try:
        done = site.op.retry(site.failed_op)
    finally:
        _stop_watch(site.watch)
    assert done['Operation State'] == 'COMPLETED'
    watch = site.watch
    reads, failed = watch.reader.reads, watch.reader.failed
    print(f'\n{len(reads)} reads through the VIP during the upgrade, '
          f'{len(failed)} failed; at most {watch.cordoned_max} worker(s) '
          f'cordoned, at least {watch.ready_min} guarded pod(s) Ready')
    assert reads and not failed, failed
    assert watch.cordoned_max <= 1
    assert watch.ready_min >= BUDGET_MIN_AVAILABLE
    versions = node_versions(site)
    assert {minor_of(v) for v, _ in versions.values()} == {NEW}
    assert not any(c for _, c in versions.values())
    assert minor_of(server_version(site)) == NEW
    shown = site.op.show(site.vnf_id)
    assert shown['VNFD ID'] == site.vnfds[NEW]
    metadata = shown['metadata']
    assert minor_of(metadata[VERSION_KEY]) == NEW
    assert {minor_of(v) for v in json.loads(
        metadata[NODE_VERSIONS_KEY]).values()} == {NEW}
    assert set(json.loads(metadata[NODE_VERSIONS_KEY])) == set(versions)
    assert not half_upgraded_nodes(site)
    # An etcd snapshot before each attempt that changed the control
    # plane (the last retry found every master on 1.37 and took none):
    # the latest is kept on each master with its checksum.
    snapshot = json.loads(metadata[METADATA_KEY])['state']['etcd_snapshot']
    assert snapshot['name'].endswith('-upgrade.db'), snapshot
    for vnfc in _vnfcs(site):
        if vnfc.vdu == MASTER:
            listed = inspect.run_in_vm(site.root, vnfc, [
                'ls', etcd_snapshot.MASTER_DIR]).stdout.split()
            assert snapshot['name'] in listed, (vnfc.lab_host, listed)
            assert f'{snapshot["name"]}.sha256' in listed


def test_a_downgrade_is_refused_before_any_change(site):
    before = node_versions(site)
    with pytest.raises(OperationFailed) as failed:
        site.op.change_vnfpkg(site.vnf_id, _change_request(site, OLD))
    error = json.dumps(failed.value.op['Error'])
    assert '1.36 is older than the cluster\'s 1.37' in error, error
    site.op.fail(failed.value.op['ID'])
    assert node_versions(site) == before


def test_a_scale_out_after_the_upgrade_joins_at_the_new_minor(site):
    """... and renews the certificates, aged to 20 days left by the lab's
    clock, on every master: the metadata shows the new expiry."""
    cluster_dir = inspect.cluster_dir(site.root)
    before = _expiry(site)
    set_clock_offset(cluster_dir, days=345)
    try:
        site.op.scale(site.vnf_id, 'SCALE_OUT', 'worker_instance',
                      params=USER_DATA)
    finally:
        set_clock_offset(cluster_dir, days=0)
    versions = node_versions(site)
    assert len(versions) == 7
    assert {minor_of(v) for v, _ in versions.values()} == {NEW}
    after = _expiry(site)
    assert (after - before).days >= 344, (before, after)
    renewed = [c for c in inspect.cluster(site.root).changes()
               if c['what'] == 'certs-renewed']
    assert {c['host'] for c in renewed} >= {
        v.lab_host for v in _vnfcs(site) if v.vdu == MASTER}, renewed


def _expiry(s: Site) -> datetime:
    text = s.op.show(s.vnf_id)['metadata'][EXPIRY_KEY]
    return datetime.fromisoformat(text.replace('Z', '+00:00'))

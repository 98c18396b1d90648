"""Automatic heal through Tacker v2's own Prometheus plugin, as the
README's "Automatic heal" section sets it up: the site's real Prometheus
and Alertmanager (the product's rule file, with the lab's 20 s
durations), Tacker's /alert/auto_healing with isAutohealEnabled, and the
driver's guards. Real: Tacker 16 and the OpenStack services, Prometheus,
Alertmanager, the node exporters, SSH, the install script. Emulated:
kubelet and the API server (whose node series a kube-state-metrics
stand-in serves), VMs.

After a fault the test sends no command: what happens is Tacker's doing.
The tests run in file order and share the one VNF they create."""
from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from kubernetes_mgmt.remote.retry import wait_until
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.openstack import inspect
from kubernetes_mgmt_lab.openstack.layout import Root
from kubernetes_mgmt_lab.openstack.operator import Operator

pytestmark = pytest.mark.lab

REQUESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'samples', 'requests_v2')
MASTER, WORKER = 'masterNode', 'workerNode'
# Rule duration (20 s), scrapes, Alertmanager, Tacker's 5 s timer, then
# the heal itself (a worker rebuilt and joined: about a minute here).
HEAL_DEADLINE = 300.0


@dataclass
class Site:
    root: Root
    op: Operator
    vim_id: str
    vnfd_id: str
    vnf_id: str = ''


@pytest.fixture(scope='module')
def site(tacker_site) -> Iterator[Site]:
    import subprocess

    from kubernetes_mgmt_lab.openstack import tacker

    root = Root(tacker_site.root)
    op = Operator(root, echo=print, api_version=2)
    vim_id = op.register_vim()
    csar = root.of('k8s_cluster_v2_autoheal.zip')
    subprocess.run([tacker.VENV.bin('kubernetes-mgmt'), 'package', 'build',
                    '--v2', '-o', csar], check=True, capture_output=True)
    _, vnfd_id = op.onboard(csar)
    the_site = Site(root, op, vim_id, vnfd_id)
    yield the_site
    if the_site.vnf_id:
        try:
            if op.show(the_site.vnf_id)['Instantiation State'] == \
                    'INSTANTIATED':
                op.terminate(the_site.vnf_id)
            op.run('vnflcm', 'delete', the_site.vnf_id, parse=False)
        except LabError as exc:
            print(f'clean-up of VNF {the_site.vnf_id}: {exc}')


def _vnfcs(s: Site) -> list[inspect.Vnfc]:
    return inspect.vnfcs(s.root, s.op.show(s.vnf_id))


def _vnfc_info_ids(s: Site) -> dict[str, str]:
    """vnfcResourceInfo id -> vnfcInfo id (what alerts and heals name)."""
    info = s.op.api.vnf_instance(s.vnf_id)['instantiatedVnfInfo']
    return {v['vnfcResourceInfoId']: v['id'] for v in info['vnfcInfo']}


def _heals(s: Site) -> list[dict]:
    return [o for o in s.op.api.op_occurrences(s.vnf_id)
            if o['operation'] == 'HEAL']


def _ready(s: Site) -> dict[str, bool]:
    view = inspect.cluster(s.root)
    return {n: view.node_ready(n) for n in view.node_names()}


def _stop_kubelet(s: Site, vnfc: inspect.Vnfc) -> None:
    done = inspect.run_in_vm(s.root, vnfc, ['systemctl', 'stop', 'kubelet'])
    assert done.returncode == 0, done.stderr


def test_instantiate_with_autoheal_enabled(site):
    def autoheal(body: dict) -> None:
        body['vnfConfigurableProperties'] = {'isAutohealEnabled': True}
    site.vnf_id = site.op.create(site.vnfd_id, name='autoheal')
    request = site.op.request_file(
        os.path.join(REQUESTS, 'instantiate_simple_request.json'),
        site.vim_id, 'autoheal', autoheal)
    site.op.instantiate(site.vnf_id, request)
    site.op.scale(site.vnf_id, 'SCALE_OUT', 'worker_instance')
    props = site.op.api.vnf_instance(site.vnf_id)[
        'vnfConfigurableProperties']
    assert props == {'isAutohealEnabled': True}
    workers = [v for v in _vnfcs(site) if v.vdu == WORKER]
    assert len(workers) >= 2
    # Every node names its VNFC for the alerts.
    nodes = inspect.cluster(site.root).nodes()
    named = {n['metadata']['labels'].get(
        'kubernetes-mgmt.openstack.org/vnfc-info-id') for n in nodes}
    assert set(_vnfc_info_ids(site).values()) <= named


def test_a_worker_whose_kubelet_stopped_is_healed_by_tacker(site):
    worker = next(v for v in _vnfcs(site) if v.vdu == WORKER)
    before = len(_heals(site))
    started = time.monotonic()
    _stop_kubelet(site, worker)
    # No command from here on: Prometheus, Alertmanager and Tacker act.
    assert wait_until(lambda: len(_heals(site)) > before,
                      deadline=HEAL_DEADLINE, ceiling=2.0), \
        'no heal started'
    heal = _heals(site)[-1]
    assert heal['isAutomaticInvocation'] is True
    assert heal['operationParams']['vnfcInstanceId'] == [
        _vnfc_info_ids(site)[worker.id]]
    site.op.wait(heal['id'])
    assert wait_until(lambda: all(_ready(site).values()),
                      deadline=120, ceiling=2.0), _ready(site)
    took = time.monotonic() - started
    assert worker.id not in {v.id for v in _vnfcs(site)}   # rebuilt
    print(f'\nkubelet stopped to every node Ready again: {took:.0f} s')


def test_more_unhealthy_workers_than_the_cap_are_not_healed(site):
    workers = [v for v in _vnfcs(site) if v.vdu == WORKER][:2]
    servers = {v.server_id for v in _vnfcs(site)}
    before = len(_heals(site))
    for worker in workers:
        _stop_kubelet(site, worker)
    assert wait_until(lambda: len(_heals(site)) > before,
                      deadline=HEAL_DEADLINE, ceiling=2.0), \
        'no heal started'
    heal = _heals(site)[-1]
    ended = site.op.wait(heal['id'], check=False)
    error = json.dumps(ended.get('Error'))
    assert ended['Operation State'] == 'FAILED_TEMP', ended
    assert 'max_unhealthy' in error, error
    for worker in workers:
        assert worker.lab_host is not None
    assert {v.server_id for v in _vnfcs(site)} == servers   # none rebuilt
    site.op.fail(heal['id'])

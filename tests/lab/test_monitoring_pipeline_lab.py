"""The automatic heal's alert path with the real Debian daemons: the
lab site's Prometheus and Alertmanager (configured as ``lab tacker up``
configures them), a real node exporter named in the driver's targets
file, and the lab's kube-state-metrics stand-in. A VM that stops
answering and a node that stops being Ready each reach the webhook
Tacker serves (here a recorder in its place) as one alert naming the
VNF instance and the VNFC, after the lab's rule durations."""
from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kubernetes_mgmt.cluster.placement import VNF_INSTANCE_LABEL, VNFC_LABEL
from kubernetes_mgmt.monitoring import alerts, rules, targets
from kubernetes_mgmt.remote.retry import wait_until
from kubernetes_mgmt_lab.emulated import state_metrics
from kubernetes_mgmt_lab.net import free_port
from kubernetes_mgmt_lab.openstack import monitoring, processes
from kubernetes_mgmt_lab.openstack.layout import Root

pytestmark = pytest.mark.lab
INSTANCE = 'b7e1c0de-0000-4000-8000-00000000a11e'
VM_VNFC = 'workerNode-vm-gone'
NODE_VNFC = 'workerNode-not-ready'
# The rule's duration, a scrape or two and Alertmanager's group wait.
ALERT_DEADLINE = 120.0


class Recorder:
    """Tacker's /alert/auto_healing, recording what Alertmanager posts."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get('Content-Length') or 0)
                if self.path == rules.HEAL_PATH:
                    recorder.bodies.append(json.loads(self.rfile.read(
                        length)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        threading.Thread(target=self.server.serve_forever,
                         daemon=True).start()

    @property
    def url(self) -> str:
        return f'http://127.0.0.1:{self.server.server_address[1]}'

    def firing(self) -> dict[str, dict]:
        """alertname -> the labels of its firing alert."""
        return {a['labels']['alertname']: a['labels']
                for body in self.bodies for a in body['alerts']
                if a['status'] == 'firing'}


@pytest.fixture
def stack(tmp_path):
    root = Root(str(tmp_path))
    os.makedirs(root.log_dir())
    recorder = Recorder()
    ports = monitoring.ports()
    monitoring.configure(root, ports, recorder.url)
    pids = [monitoring.start_alertmanager(root, ports['alertmanager']),
            monitoring.start_prometheus(root, ports['prometheus'])]
    yield root, recorder, monitoring.url(ports['prometheus']), \
        monitoring.url(ports['alertmanager'])
    processes.stop(*pids)
    recorder.server.shutdown()


def _exporter(port: int) -> subprocess.Popen:
    return subprocess.Popen(
        ['/usr/bin/prometheus-node-exporter', '--collector.disable-defaults',
         '--collector.time', f'--web.listen-address=127.0.0.1:{port}'],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _healthy_jobs(prometheus: str) -> set[str]:
    with urllib.request.urlopen(f'{prometheus}/api/v1/targets',  # noqa: S310
                                timeout=5) as reply:
        active = json.load(reply)['data']['activeTargets']
    return {t['labels']['job'] for t in active if t['health'] == 'up'}


def _node(name: str, ready: str, vnfc: str) -> dict:
    return {'metadata': {'name': name, 'labels': {
        VNF_INSTANCE_LABEL: INSTANCE, VNFC_LABEL: vnfc}},
        'status': {'conditions': [{'type': 'Ready', 'status': ready}]}}


def test_a_silent_vm_and_a_not_ready_node_reach_tacker(stack, monkeypatch):
    root, recorder, prometheus, alertmanager = stack
    port = free_port('127.0.0.1', 19100)
    exporter = _exporter(port)
    try:
        targets.write(monitoring.targets_dir(root), INSTANCE,
                      targets.entries(INSTANCE, [targets.Member(
                          's-1', 'worker-1', 'worker', '127.0.0.1')],
                          {'s-1': VM_VNFC}, port))
        nodes = [_node('worker-1', 'True', VM_VNFC),
                 _node('worker-2', 'True', NODE_VNFC)]
        monkeypatch.setattr(state_metrics.ClusterView, 'nodes',
                            lambda self: nodes)
        ksm = state_metrics.serve('127.0.0.1', 0, str(root.path),
                                  [VNF_INSTANCE_LABEL, VNFC_LABEL])
        threading.Thread(target=ksm.serve_forever, daemon=True).start()
        monitoring.publish_ksm(root, 'lab', '127.0.0.1',
                               ksm.server_address[1])
        # Both jobs scraped and healthy before anything breaks.
        assert wait_until(lambda: _healthy_jobs(prometheus) == {
            rules.NODE_JOB, monitoring.KSM_JOB}, deadline=60, ceiling=1.0)
        started = time.monotonic()
        exporter.terminate()
        exporter.wait(10)
        nodes[1] = _node('worker-2', 'Unknown', NODE_VNFC)
        assert wait_until(lambda: len(recorder.firing()) == 2,
                          deadline=ALERT_DEADLINE, ceiling=1.0), \
            recorder.bodies
        took = time.monotonic() - started
        ksm.shutdown()
    finally:
        if exporter.poll() is None:
            exporter.kill()
    firing = recorder.firing()
    # Only what broke: worker-1's node stayed Ready, worker-2's VM up.
    assert set(firing) == {rules.VM_ALERT, rules.NODE_ALERT}
    heal = {'receiver_type': 'tacker', 'function_type': 'auto_heal',
            'vnf_instance_id': INSTANCE}
    assert firing[rules.VM_ALERT].items() >= {
        **heal, 'vnfc_info_id': VM_VNFC}.items()
    assert firing[rules.NODE_ALERT].items() >= {
        **heal, 'vnfc_info_id': NODE_VNFC, 'node': 'worker-2'}.items()
    # What a heal of the node's VNFC logs as its cause (alerts.firing).
    cause = alerts.firing(alertmanager, INSTANCE, [NODE_VNFC, 'other'])
    assert [(a.name, a.vnfc_info_id) for a in cause] == [
        (rules.NODE_ALERT, NODE_VNFC)]
    assert 'worker-2' in cause[0].summary
    assert alerts.firing(alertmanager, 'another-instance', [NODE_VNFC]) == []
    print(f'\nboth alerts at the webhook {took:.0f} s after the faults '
          f'(rules: {monitoring.LAB_TIMING.vm_silent_for}, '
          f'{monitoring.LAB_TIMING.not_ready_for})')

"""The lab's kube-state-metrics stand-in speaks kube-state-metrics' series
(names, labels, one series per condition status), which the automatic
heal's rule file reads: promtool checks the rule against its output in
tests/unit/test_monitoring_rules.py's terms."""
from __future__ import annotations

import threading
import urllib.request

from kubernetes_mgmt.cluster.placement import VNF_INSTANCE_LABEL, VNFC_LABEL
from kubernetes_mgmt.monitoring.rules import ksm_label
from kubernetes_mgmt_lab.emulated import state_metrics


def node(name, ready, labels):
    return {'metadata': {'name': name, 'labels': labels},
            'status': {'conditions': [
                {'type': 'Ready', 'status': ready},
                {'type': 'MemoryPressure', 'status': 'False'}]}}


NODES = [node('worker-1', 'Unknown', {VNF_INSTANCE_LABEL: 'i-1',
                                      VNFC_LABEL: 'workerNode-a',
                                      'other': 'x'}),
         node('master-0', 'True', {})]


def test_series_as_kube_state_metrics_names_them():
    text = state_metrics.render(NODES, [VNF_INSTANCE_LABEL, VNFC_LABEL])
    lines = set(text.splitlines())
    for status, value in (('true', 0), ('false', 0), ('unknown', 1)):
        assert ('kube_node_status_condition{node="worker-1",'
                f'condition="Ready",status="{status}"}} {value}') in lines
    assert ('kube_node_status_condition{node="master-0",condition="Ready",'
            'status="true"} 1') in lines
    assert (f'kube_node_labels{{node="worker-1",'
            f'{ksm_label(VNF_INSTANCE_LABEL)}="i-1",'
            f'{ksm_label(VNFC_LABEL)}="workerNode-a"}} 1') in lines
    assert 'kube_node_labels{node="master-0"} 1' in lines
    assert 'other' not in text       # not in the allowlist


def test_the_series_label_is_the_rules_one():
    for key in (VNF_INSTANCE_LABEL, VNFC_LABEL):
        assert state_metrics.series_label(key) == ksm_label(key)


def test_served_over_http_from_the_cluster_state(monkeypatch):
    monkeypatch.setattr(state_metrics.ClusterView, 'nodes',
                        lambda self: NODES)
    server = state_metrics.serve('127.0.0.1', 0, '/nonexistent',
                                 [VNFC_LABEL])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(
                f'http://127.0.0.1:{port}/metrics', timeout=10) as reply:
            body = reply.read().decode()
            assert reply.headers['Content-Type'].startswith('text/plain')
        assert 'workerNode-a' in body
    finally:
        server.shutdown()
        server.server_close()

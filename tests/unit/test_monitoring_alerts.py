"""The alerts a heal logs as its cause when Alertmanager cannot be read
(the reading itself is checked against the real Alertmanager in
tests/lab/test_monitoring_pipeline_lab.py)."""
import socket

import pytest

from kubernetes_mgmt.monitoring import alerts


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def test_an_alertmanager_that_does_not_answer_is_named_without_its_password():
    url = f'http://watcher:s3cret-pw@127.0.0.1:{_closed_port()}'
    with pytest.raises(alerts.AlertsUnreadable) as caught:
        alerts.firing(url, 'instance', ['workerNode-1'], timeout=2.0)
    text = str(caught.value)
    assert 's3cret-pw' not in text and 'watcher' not in text
    assert '127.0.0.1' in text


def test_describe_names_alert_vnfc_and_start():
    alert = alerts.Alert('KubernetesMgmtNodeNotReady', 'i', 'workerNode-1',
                         '2026-11-27T18:00:00Z', 'node w-1 not Ready')
    assert alert.describe() == ('KubernetesMgmtNodeNotReady on workerNode-1 '
                                'since 2026-11-27T18:00:00Z (node w-1 not '
                                'Ready)')

"""The automatic heal's Prometheus rules and Alertmanager route: the
shipped samples are the generator's output, Prometheus' own promtool and
Alertmanager's amtool accept them, and promtool's rule tests show which
alerts fire, when, and with which labels."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from kubernetes_mgmt.cli import main
from kubernetes_mgmt.monitoring import rules

SAMPLES = Path(__file__).resolve().parents[2] / 'samples' / 'monitoring'
RULES = SAMPLES / 'auto_heal_rules.yml'
ROUTE = SAMPLES / 'alertmanager.yml'
INSTANCE = '3f1c2a9e-5b7d-4e0a-9c1b-2d4e6f8a0b1c'
WORKER_VNFC = 'workerNode-8e2d0c4a-1f3b-4a5c-9d7e-6b0a2c4e8f10'


def tool(name: str) -> str:
    """A Debian binary the CI installs (tools/bootstrap.sh)."""
    found = shutil.which(name)
    if found is None:
        message = f'{name} is not installed (Debian: prometheus, ' \
                  'prometheus-alertmanager)'
        if os.environ.get('KMGMT_REQUIRE_LAB') == '1':
            pytest.fail(message)
        pytest.skip(message)
    return found


def test_the_samples_are_the_generators_defaults(capsys):
    assert main(['monitoring', 'rules']) == 0
    assert capsys.readouterr().out == RULES.read_text()
    assert main(['monitoring', 'alertmanager', '--tacker-url',
                 'http://tacker.example:9890']) == 0
    assert capsys.readouterr().out == ROUTE.read_text()


def test_promtool_accepts_the_rules():
    out = subprocess.run([tool('promtool'), 'check', 'rules', str(RULES)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert 'SUCCESS: 2 rules found' in out.stdout


def test_amtool_accepts_the_route():
    out = subprocess.run([tool('amtool'), 'check-config', str(ROUTE)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_route_sends_auto_heal_alerts_to_tacker():
    config = yaml.safe_load(ROUTE.read_text())
    route = config['route']['routes'][0]
    assert route['matchers'] == ['receiver_type="tacker"',
                                 'function_type="auto_heal"']
    hook = config['receivers'][1]['webhook_configs'][0]
    assert hook['url'] == 'http://tacker.example:9890/alert/auto_healing'


def _series(node: str, ready: bool, vnfc: str) -> list[dict]:
    """kube-state-metrics' series of one node for 10 minutes (one sample a
    minute); ``ready`` False from minute 1 on."""
    after = '1x9' if ready else '0x9'
    found = [{'series': f'kube_node_status_condition{{node="{node}",'
                        f'condition="Ready",status="{status}"}}',
              'values': f'{int(status == "true")} {value}'}
             for status, value in (
                 ('true', after),
                 ('false', '0x9' if ready else '1x9'),
                 ('unknown', '0x9'))]
    labels = (f'{rules.ksm_label(rules.VNF_INSTANCE_LABEL)}="{INSTANCE}",'
              f'{rules.ksm_label(rules.VNFC_LABEL)}="{vnfc}"')
    found.append({'series': f'kube_node_labels{{node="{node}",{labels}}}',
                  'values': '1x10'})
    return found


def _node_exporter(vnfc: str, up: str) -> dict:
    return {'series': f'up{{job="{rules.NODE_JOB}",instance="10.0.0.7:9100",'
                      f'vnf_instance_id="{INSTANCE}",'
                      f'vnfc_info_id="{vnfc}"}}',
            'values': up}


def test_alerts_fire_after_their_durations_naming_the_vnfc(tmp_path):
    heal = {'receiver_type': 'tacker', 'function_type': 'auto_heal',
            'vnf_instance_id': INSTANCE, 'vnfc_info_id': WORKER_VNFC}
    test = {
        'rule_files': [str(RULES)],
        'evaluation_interval': '30s',
        'tests': [{
            'interval': '1m',
            'input_series': [
                *_series('worker-1', False, WORKER_VNFC),
                *_series('worker-2', True, 'workerNode-healthy'),
                # The VM stops answering at minute 1.
                _node_exporter(WORKER_VNFC, '1 0x9'),
                _node_exporter('workerNode-healthy', '1x10')],
            'alert_rule_test': [
                {'eval_time': '2m30s', 'alertname': rules.VM_ALERT,
                 'exp_alerts': []},
                {'eval_time': '3m', 'alertname': rules.VM_ALERT,
                 'exp_alerts': [{
                     'exp_labels': {**heal, 'job': rules.NODE_JOB,
                                    'instance': '10.0.0.7:9100'},
                     'exp_annotations': {
                         'summary': f'VM of VNFC {WORKER_VNFC} has not '
                                    'answered for 2m',
                         'fault_details': 'node exporter 10.0.0.7:9100 '
                                          'not scraped'}}]},
                {'eval_time': '5m30s', 'alertname': rules.NODE_ALERT,
                 'exp_alerts': []},
                {'eval_time': '6m', 'alertname': rules.NODE_ALERT,
                 'exp_alerts': [{
                     'exp_labels': {**heal, 'node': 'worker-1'},
                     'exp_annotations': {
                         'summary': f'node worker-1 (VNFC {WORKER_VNFC}) '
                                    'not Ready for 5m',
                         'fault_details': 'Ready condition False or '
                                          'Unknown'}}]},
            ]}]}
    path = tmp_path / 'auto_heal_test.yml'
    path.write_text(yaml.safe_dump(test))
    out = subprocess.run([tool('promtool'), 'test', 'rules', str(path)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize('argv', [
    ['rules', '--vm-silent-for', '2 minutes'],
    ['rules', '--not-ready-for', '5'],
    ['alertmanager', '--tacker-url', 'tacker:9890'],
    ['alertmanager', '--tacker-url', 'http://tacker:9890/?x=1']])
def test_bad_arguments_are_refused(argv, capsys):
    assert main(['monitoring', *argv]) == 1
    err = capsys.readouterr().err
    assert argv[-1] in err or repr(argv[-1]) in err

"""The automatic heal's alerts, as Alertmanager posts them, through
Tacker 16's own Prometheus plugin (``PrometheusPluginAutoHealing``): its
schema accepts them and it asks the conductor to heal the VNFC they
name. Only the database read of the instance is replaced (it returns the
instance Tacker would hold), and the conductor's RPC is the plugin's own
callback hook, captured."""
from __future__ import annotations

from pathlib import Path
from unittest import mock

import pytest
import yaml

from kubernetes_mgmt.monitoring import rules

SAMPLES = Path(__file__).resolve().parents[2] / 'samples' / 'monitoring'
INSTANCE = '3f1c2a9e-5b7d-4e0a-9c1b-2d4e6f8a0b1c'
VNFC = 'workerNode-8e2d0c4a-1f3b-4a5c-9d7e-6b0a2c4e8f10'
# What each alert's series adds to the rule's labels (the promtool test
# in tests/unit/test_monitoring_rules.py shows they fire with these).
SERIES_LABELS = {
    rules.VM_ALERT: {'job': rules.NODE_JOB, 'instance': '10.0.0.7:9100'},
    rules.NODE_ALERT: {'node': 'worker-1'}}


def _webhook(rule: dict) -> dict:
    """Alertmanager's webhook body for one firing alert of ``rule``."""
    labels = {'alertname': rule['alert'], **rule['labels'],
              **SERIES_LABELS[rule['alert']],
              'vnf_instance_id': INSTANCE, 'vnfc_info_id': VNFC}
    return {'version': '4', 'status': 'firing', 'receiver':
            'tacker-auto-heal', 'groupLabels': {}, 'commonLabels': labels,
            'alerts': [{'status': 'firing', 'labels': labels,
                        'annotations': {'summary': 'x'},
                        'startsAt': '2026-11-27T10:00:00Z',
                        'endsAt': '0001-01-01T00:00:00Z',
                        'fingerprint': 'a1b2c3d4e5f60718'}]}


def _instance(autoheal: bool):
    from tacker.sol_refactored import objects

    objects.register_all()
    return objects.VnfInstanceV2(
        id=INSTANCE, instantiationState='INSTANTIATED',
        vnfConfigurableProperties={'isAutohealEnabled': autoheal},
        instantiatedVnfInfo=objects.VnfInstanceV2_InstantiatedVnfInfo(
            flavourId='simple', vnfState='STARTED',
            vnfcInfo=[objects.VnfcInfoV2(
                id=VNFC, vduId='workerNode', vnfcResourceInfoId='r-1',
                vnfcState='STARTED')]))


@pytest.fixture
def plugin():
    from tacker.sol_refactored.common import config, prometheus_plugin

    config.CONF.set_override('auto_healing', True, 'prometheus_plugin')
    prometheus_plugin.PrometheusPluginAutoHealing._instance = None
    found = prometheus_plugin.PrometheusPluginAutoHealing.instance()
    healed = []
    found.set_callback(lambda ctx, inst, vnfc: healed.append((inst, vnfc)))
    yield found, healed
    prometheus_plugin.PrometheusPluginAutoHealing._instance = None
    config.CONF.clear_override('auto_healing', 'prometheus_plugin')


def _rules() -> list[dict]:
    return yaml.safe_load((SAMPLES / 'auto_heal_rules.yml').read_text()
                          )['groups'][0]['rules']


@pytest.mark.parametrize('alert', [rules.VM_ALERT, rules.NODE_ALERT])
def test_tacker_heals_the_vnfc_an_alert_names(plugin, alert):
    from tacker.sol_refactored.common import vnf_instance_utils

    found, healed = plugin
    rule = next(r for r in _rules() if r['alert'] == alert)
    with mock.patch.object(vnf_instance_utils, 'get_inst',
                           return_value=_instance(autoheal=True)):
        # _alert, not alert(): alert() logs and swallows every error.
        found._alert(mock.Mock(context=mock.Mock()), body=_webhook(rule))
    assert healed == [(INSTANCE, VNFC)]


def test_tacker_leaves_an_instance_without_autoheal_alone(plugin):
    from tacker.sol_refactored.common import vnf_instance_utils

    found, healed = plugin
    with mock.patch.object(vnf_instance_utils, 'get_inst',
                           return_value=_instance(autoheal=False)):
        found._alert(mock.Mock(context=mock.Mock()),
                     body=_webhook(_rules()[0]))
    assert healed == []


def test_tacker_refuses_an_alert_without_its_labels(plugin):
    from tacker.sol_refactored.common import exceptions

    found, _ = plugin
    body = _webhook(_rules()[0])
    body['alerts'][0]['labels']['function_type'] = 'heal'
    with pytest.raises(exceptions.SolValidationError):
        found._alert(mock.Mock(context=mock.Mock()), body=body)

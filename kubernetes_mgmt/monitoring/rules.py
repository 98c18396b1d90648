"""The Prometheus rules and the Alertmanager route for automatic heal.

Two conditions become alerts that Tacker 16's Prometheus plugin
(``POST /alert/auto_healing``) turns into a heal of one VNFC:

- a VM that stopped answering: its node exporter, a target of the job
  ``NODE_JOB`` whose targets carry ``vnf_instance_id`` and
  ``vnfc_info_id`` (``monitoring.targets``), not scraped for
  ``vm_silent_for``;
- a node whose Ready condition has been False or Unknown for
  ``not_ready_for``, read from kube-state-metrics and joined with the
  node's identity labels (``cluster.placement``), which
  kube-state-metrics exports when allowed by
  ``--metric-labels-allowlist`` (``KSM_ALLOWLIST``).

Every alert carries the labels Tacker's plugin requires:
``receiver_type: tacker``, ``function_type: auto_heal``,
``vnf_instance_id`` and ``vnfc_info_id``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from kubernetes_mgmt.cluster.placement import VNF_INSTANCE_LABEL, VNFC_LABEL

NODE_JOB = 'kubernetes-mgmt-nodes'
GROUP = 'kubernetes-mgmt-auto-heal'
VM_ALERT = 'KubernetesMgmtVmNotAnswering'
NODE_ALERT = 'KubernetesMgmtNodeNotReady'
TACKER_LABELS = {'receiver_type': 'tacker', 'function_type': 'auto_heal'}
HEAL_PATH = '/alert/auto_healing'
_DURATION = re.compile(r'^([0-9]+(ms|[smhdwy]))+$')


def ksm_label(key: str) -> str:
    """The series label kube-state-metrics gives a Kubernetes label."""
    return 'label_' + re.sub(r'[^A-Za-z0-9_]', '_', key)


KSM_ALLOWLIST = f'nodes=[{VNF_INSTANCE_LABEL},{VNFC_LABEL}]'


@dataclass(frozen=True)
class Timing:
    vm_silent_for: str = '2m'
    not_ready_for: str = '5m'

    def problems(self) -> list[str]:
        return [f'{name} {value!r} is not a Prometheus duration (such as '
                '90s, 2m or 1h30m)'
                for name, value in (('vm_silent_for', self.vm_silent_for),
                                    ('not_ready_for', self.not_ready_for))
                if not _DURATION.match(value)]


def _identity(series: str) -> str:
    """``series`` with vnf_instance_id and vnfc_info_id copied from the
    node's identity labels."""
    inner = (f'label_replace({series}, "vnf_instance_id", "$1", '
             f'"{ksm_label(VNF_INSTANCE_LABEL)}", "(.+)")')
    return (f'label_replace({inner}, "vnfc_info_id", "$1", '
            f'"{ksm_label(VNFC_LABEL)}", "(.+)")')


def node_not_ready_expr() -> str:
    identified = _identity(
        f'kube_node_labels{{{ksm_label(VNFC_LABEL)}!=""}}')
    return ('max by (node, vnf_instance_id, vnfc_info_id) (\n'
            '  (kube_node_status_condition{condition="Ready", '
            'status=~"false|unknown"} == 1)\n'
            f'  * on (node) group_left (vnf_instance_id, vnfc_info_id)\n'
            f'  {identified}\n)')


def vm_silent_expr() -> str:
    return (f'up{{job="{NODE_JOB}", vnf_instance_id!="", '
            'vnfc_info_id!=""} == 0')


def rule_groups(timing: Timing = Timing()) -> dict:
    """The rule file's content."""
    bad = timing.problems()
    if bad:
        raise ValueError('; '.join(bad))
    return {'groups': [{'name': GROUP, 'rules': [
        {'alert': VM_ALERT, 'expr': vm_silent_expr(),
         'for': timing.vm_silent_for,
         'labels': dict(TACKER_LABELS),
         'annotations': {
             'summary': 'VM of VNFC {{ $labels.vnfc_info_id }} has not '
                        'answered for ' + timing.vm_silent_for,
             'fault_details': 'node exporter {{ $labels.instance }} not '
                              'scraped'}},
        {'alert': NODE_ALERT, 'expr': node_not_ready_expr(),
         'for': timing.not_ready_for,
         'labels': dict(TACKER_LABELS),
         'annotations': {
             'summary': 'node {{ $labels.node }} (VNFC '
                        '{{ $labels.vnfc_info_id }}) not Ready for ' +
                        timing.not_ready_for,
             'fault_details': 'Ready condition False or Unknown'}},
    ]}]}


def alertmanager_config(tacker_url: str) -> dict:
    """Alertmanager's configuration: auto-heal alerts to Tacker
    (``tacker_url``: its API, such as http://tacker.example:9890), one
    notification per alert, again while it fires."""
    return {
        'route': {'receiver': 'null', 'routes': [{
            'receiver': 'tacker-auto-heal',
            'matchers': [f'{k}="{v}"' for k, v in TACKER_LABELS.items()],
            'group_by': ['vnf_instance_id', 'vnfc_info_id'],
            'group_wait': '10s', 'group_interval': '1m',
            'repeat_interval': '10m'}]},
        'receivers': [
            {'name': 'null'},
            {'name': 'tacker-auto-heal', 'webhook_configs': [{
                'url': tacker_url.rstrip('/') + HEAL_PATH,
                'send_resolved': False}]}]}


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (PromQL) as literal blocks, as people write
    them."""


def _string(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
    style = '|' if '\n' in text else None
    return dumper.represent_scalar('tag:yaml.org,2002:str', text,
                                   style=style)


_Dumper.add_representer(str, _string)


def dump(document: dict) -> str:
    return yaml.dump(document, Dumper=_Dumper, sort_keys=False, width=1000)

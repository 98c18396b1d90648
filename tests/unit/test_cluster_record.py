"""The cluster record: later operations plan from what the cluster was
built with, not from today's configuration."""
from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import pytest
from oslo_config import cfg

from kubernetes_mgmt.cluster.plan import build_plan
from kubernetes_mgmt.cluster.record import ClusterRecord
from kubernetes_mgmt.params.validate import parse_cluster_params
from kubernetes_mgmt.topology.model import Host, Role, Topology

REPO = Path(__file__).resolve().parents[2]
GROUP = 'kubernetes_mgmt'


def _params():
    body = json.loads((REPO / 'samples/requests/'
                       'complex_kubernetes_param_file.json').read_text())
    body = json.loads(json.dumps(body).replace('REPLACE_WITH_', 'x'))
    return parse_cluster_params(body['additionalParams'])


def _topology(stack='stack-1', vip='10.0.0.100'):
    masters = tuple(Host(Role.MASTER, f'm{i}', f'masterNode{i}',
                         f'10.0.0.{10 + i}', f'10.0.0.{10 + i}',
                         member_name=f'm{i}') for i in range(3))
    workers = (Host(Role.WORKER, 'w0', 'workerNode', '10.0.0.20',
                    '10.0.0.20', member_name='w0'),)
    return Topology(stack, masters, workers, cluster_ip=vip)


@pytest.fixture
def package(tmp_path):
    (tmp_path / 'Scripts').mkdir()
    # The package's script is the real one: it declares its contract.
    (tmp_path / 'Scripts/install_k8s_cluster.sh').write_bytes(
        (REPO / 'scripts/install_k8s_cluster.sh').read_bytes())
    return tmp_path


@pytest.fixture
def options():
    changed = []

    def set_(**values):
        for key, value in values.items():
            cfg.CONF.set_override(key, value, GROUP)
            changed.append(key)
    yield set_
    for key in changed:
        cfg.CONF.clear_override(key, GROUP)


def test_record_round_trips_and_tolerates_fields_it_does_not_know():
    plan_record = ClusterRecord(
        kubernetes_version='1.37', kubernetes_patch='v1.37.2',
        control_plane_endpoint='10.0.0.100:16443',
        auth_url='https://10.0.0.100:16443', lb_port=16443,
        vrrp_router_id=7, cni='calico', cni_manifest='https://x/c.yaml',
        cni_sha256=None, pod_cidr='192.168.0.0/16',
        service_cidr='10.96.0.0/12', image_repository=None,
        sandbox_image=None, contract_version=None)
    data = plan_record.to_dict()
    assert ClusterRecord.from_dict(data) == plan_record
    # A record written by a later plugin version still loads here; one
    # from an earlier version lacks fields: they are None, not defaults.
    data['written_by_a_later_version'] = 1
    del data['sandbox_image']
    assert ClusterRecord.from_dict(data).sandbox_image is None


def test_a_plan_follows_the_record_and_logs_what_today_would_change(
        package, options, caplog):
    params = _params()
    first = build_plan('inst-1', params, _topology(), package)
    record = first.freeze('v1.37.2')
    options(kubernetes_version='1.38', lb_port=17443, cni='flannel')
    caplog.set_level(logging.INFO)
    again = build_plan('inst-1', params, _topology(), package,
                       record=record)
    assert again.kubernetes_version == first.kubernetes_version == '1.37'
    assert again.lb_port == first.lb_port == 16443
    assert again.cni == first.cni
    assert again.control_plane_endpoint == '10.0.0.100:16443'
    assert again.auth_url == first.auth_url
    assert again.vrrp_router_id == first.vrrp_router_id
    logged = caplog.text
    for name, kept, new in (('kubernetes_version', '1.37', '1.38'),
                            ('lb_port', '16443', '17443'),
                            ('cni', 'calico', 'flannel')):
        assert f'built with {name} = {kept}' in logged
        assert f'would choose {new}' in logged


def test_without_a_record_today_s_configuration_applies(package, options):
    options(kubernetes_version='1.38', lb_port=17443)
    plan = build_plan('inst-1', _params(), _topology(), package)
    assert plan.kubernetes_version == '1.38'
    assert plan.control_plane_endpoint == '10.0.0.100:17443'


def test_a_rebuilt_stack_keeps_the_facts_but_takes_its_new_endpoint(
        package, options):
    params = _params()
    record = build_plan('inst-1', params, _topology(), package).freeze()
    options(kubernetes_version='1.38')
    rebuilt = build_plan('inst-1', params,
                         _topology('stack-2', vip='10.0.0.200'), package,
                         record=record, keep_endpoint=False)
    assert rebuilt.kubernetes_version == '1.37'
    assert rebuilt.control_plane_endpoint == '10.0.0.200:16443'
    assert dataclasses.replace(rebuilt.freeze(), auth_url=record.auth_url,
                               control_plane_endpoint=record
                               .control_plane_endpoint) == record

"""The cluster record: later operations plan from what the cluster was
built with, not from today's configuration."""
from __future__ import annotations

import dataclasses
import logging

from kubernetes_mgmt.cluster.cluster_plan import build_plan
from kubernetes_mgmt.state.cluster_record import ClusterRecord

# package, options, cluster_params, topology_of: tests/unit/conftest.py


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
        package, options, caplog, cluster_params, topology_of):
    params = cluster_params
    first = build_plan('inst-1', params, topology_of(), package)
    record = first.freeze('v1.37.2')
    options(kubernetes_version='1.38', lb_port=17443, cni='flannel')
    caplog.set_level(logging.INFO)
    again = build_plan('inst-1', params, topology_of(), package,
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


def test_without_a_record_today_s_configuration_applies(
        package, options, cluster_params, topology_of):
    options(kubernetes_version='1.38', lb_port=17443)
    plan = build_plan('inst-1', cluster_params, topology_of(), package)
    assert plan.kubernetes_version == '1.38'
    assert plan.control_plane_endpoint == '10.0.0.100:17443'


def test_a_rebuilt_stack_keeps_the_facts_but_takes_its_new_endpoint(
        package, options, cluster_params, topology_of):
    params = cluster_params
    record = build_plan('inst-1', params, topology_of(), package).freeze()
    options(kubernetes_version='1.38')
    rebuilt = build_plan('inst-1', params,
                         topology_of('stack-2', vip='10.0.0.200'), package,
                         record=record, keep_endpoint=False)
    assert rebuilt.kubernetes_version == '1.37'
    assert rebuilt.control_plane_endpoint == '10.0.0.200:16443'
    assert dataclasses.replace(rebuilt.freeze(), auth_url=record.auth_url,
                               control_plane_endpoint=record
                               .control_plane_endpoint) == record

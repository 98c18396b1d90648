"""instantiate_end driven with Tacker-shaped objects against the lab."""
import copy
import json
from pathlib import Path

import pytest
from oslo_config import cfg

from kubernetes_mgmt import instance_state
from kubernetes_mgmt.errors import ValidationError
from kubernetes_mgmt.kubernetes_mgmt import KubernetesMgmtDriver
from kubernetes_mgmt.lab import tacker_shapes

pytestmark = pytest.mark.lab
REQUESTS = Path(__file__).resolve().parents[1] / 'data' / 'requests'


@pytest.fixture
def lab_conf(lab):
    conf = cfg.CONF.kubernetes_mgmt
    cfg.CONF.set_override('heat_endpoint', lab.state.heat_url,
                          'kubernetes_mgmt')
    cfg.CONF.set_override('heat_token', lab.state.heat_token,
                          'kubernetes_mgmt')
    yield conf
    cfg.CONF.clear_override('heat_endpoint', 'kubernetes_mgmt')
    cfg.CONF.clear_override('heat_token', 'kubernetes_mgmt')


def lab_request(lab, sample='complex_kubernetes_param_file.json'):
    body = json.loads((REQUESTS / sample).read_text())
    param = body['additionalParams']['k8s_cluster_installation_param']
    for group in ('master_node', 'worker_node'):
        param[group]['username'] = lab.state.username
        param[group]['password'] = lab.state.password
    if not lab.state.vip:
        param['master_node']['cluster_cp_name'] = \
            param['master_node']['ssh_cp_name']
    return tacker_shapes.InstantiateVnfRequest.from_body(body)


def accepts(lab):
    return {h.name: lab.ssh_accepts(h.name) for h in lab.state.hosts}


def test_invalid_request_touches_nothing(lab, lab_conf):
    request = lab_request(lab)
    bad = copy.deepcopy(request)
    param = bad.additional_params['k8s_cluster_installation_param']
    param['master_node']['pod_cidr'] = '10.96.0.0/33'
    param['worker_node']['password'] = ''
    instance = tacker_shapes.vnf_instance_for_stack(lab.state.stack_id, bad)
    before = accepts(lab)
    with pytest.raises(ValidationError) as info:
        KubernetesMgmtDriver().instantiate_end(
            context=None, vnf_instance=instance, instantiate_vnf_request=bad,
            grant=None, grant_request=None, vnf={})
    paths = [p.path for p in info.value.problems]
    prefix = 'additionalParams.k8s_cluster_installation_param'
    assert f'{prefix}.master_node.pod_cidr' in paths
    assert f'{prefix}.worker_node.password' in paths
    assert accepts(lab) == before
    assert instance.saves == 0 and instance.vnf_metadata == {}


def test_instantiate_reaches_every_host_once_and_stores_host_keys(
        lab, lab_conf):
    request = lab_request(lab)
    instance = tacker_shapes.vnf_instance_for_stack(lab.state.stack_id,
                                                    request)
    before = accepts(lab)
    KubernetesMgmtDriver().instantiate_end(
        context=None, vnf_instance=instance,
        instantiate_vnf_request=request, grant=None, grant_request=None,
        vnf={})
    cluster_hosts = [h for h in lab.state.hosts if h.role != 'storage']
    for host in cluster_hosts:
        expected = before[host.name] + 1
        assert lab.ssh_accepts(host.name, at_least=expected) == expected
    stored = instance_state.load(instance).host_keys
    assert sorted(stored) == sorted(h.ip for h in cluster_hosts)
    for host in cluster_hosts:
        key_type, key = stored[host.ip].split()
        assert lab.host_public_keys(host.name)[key_type] == key
    assert instance.saves == 1

"""Driving the Mgmt Driver's hooks against a lab, as Tacker would.

Used by the lab tests, the demo and the benchmarks: the driver options
come from the config file ``lab up`` wrote, the request from the lab's
layout and credentials, the VNF instance from ``tacker_shapes``.
"""
from __future__ import annotations

import configparser
import contextlib
from collections.abc import Iterator

from oslo_config import cfg

from kubernetes_mgmt import conf as _conf  # noqa: F401  (registers opts)
from kubernetes_mgmt.kubernetes_mgmt import KubernetesMgmtDriver
from kubernetes_mgmt.lab import tacker_shapes
from kubernetes_mgmt.lab.manager import Lab

GROUP = 'kubernetes_mgmt'


@contextlib.contextmanager
def driver_options(lab: Lab, **extra) -> Iterator[None]:
    """Apply the lab's driver config (plus ``extra``) to cfg.CONF."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(lab.state.config_file)
    values = dict(parser.items(GROUP)) if parser.has_section(GROUP) else {}
    values.update({k: v for k, v in extra.items()})
    for key, value in values.items():
        cfg.CONF.set_override(key, value, GROUP)
    try:
        yield
    finally:
        for key in values:
            cfg.CONF.clear_override(key, GROUP)


def request_body(lab: Lab, vim_name: str | None = None) -> dict:
    """An InstantiateVnfRequest body for the lab's VMs."""
    state = lab.state
    masters = [h for h in state.hosts if h.role == 'master']
    login = {'username': state.username, 'password': state.password}
    param = {
        'script_path': 'Scripts/install_k8s_cluster.sh',
        'vim_name': vim_name or f'{state.name}-cluster',
        'master_node': {
            'aspect_id': 'master_instance',
            'ssh_cp_name': 'masterNode_CP1', 'nic_cp_name': 'masterNode_CP1',
            'cluster_cp_name': 'vip_CP' if len(masters) > 1
            else 'masterNode_CP1',
            **login},
        'worker_node': {
            'aspect_id': 'worker_instance',
            'ssh_cp_name': 'workerNode_CP2', 'nic_cp_name': 'workerNode_CP2',
            **login},
    }
    return {
        'flavourId': 'complex' if len(masters) > 1 else 'simple',
        'additionalParams': {
            'k8s_cluster_installation_param': param,
            'lcm-operation-user-data': './UserData/k8s_cluster_user_data.py',
            'lcm-operation-user-data-class': 'KubernetesClusterUserData'},
    }


def new_instance(lab: Lab, body: dict | None = None):
    """(request, vnf_instance) as Tacker passes them to instantiate_end."""
    request = tacker_shapes.InstantiateVnfRequest.from_body(
        body or request_body(lab))
    instance = tacker_shapes.vnf_instance_for_stack(lab.state.stack_id,
                                                    request)
    return request, instance


def instantiate_end(request, instance) -> None:
    KubernetesMgmtDriver().instantiate_end(
        context=None, vnf_instance=instance,
        instantiate_vnf_request=request, grant=None, grant_request=None,
        vnf={})
    # Tacker's conductor stores the request's additionalParams once the
    # operation succeeded; later hooks read them from there.
    instance.instantiated_vnf_info.additional_params = dict(
        request.additional_params)

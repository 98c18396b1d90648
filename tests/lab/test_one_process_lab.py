"""One process, many operations: as in tacker-conductor, every hook of
every VNF instance runs in this one Python process.

Secrets one operation registers are masked where text is shown, never in
the data the driver parses: a second instantiate still reads its real
token, and VM passwords that are ordinary words (``master``, ``worker``,
which occur in node names and command output) break nothing.

Real: SSH, Heat (the role passwords are the servers' adminPass), the
install script, HAProxy and keepalived. Emulated: the Kubernetes binaries
(the API stand-in checks tokens).
"""
from __future__ import annotations

import json

import pytest

from kubernetes_mgmt.cluster.naming import member_node_name
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.state import instance_state
from kubernetes_mgmt.topology.hosts import Role
from kubernetes_mgmt_lab import driving
from kubernetes_mgmt_lab.emulated import ClusterView
from kubernetes_mgmt_lab.testing import (
    api_status,
    throwaway_lab,
    unavailable_reason,
)

pytestmark = pytest.mark.lab


@pytest.fixture(autouse=True)
def _lab_available():
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)


def registered_vims(lab) -> list[dict]:
    """The VIMs of the lab's file registry, token and CA included."""
    with open(lab.vim_registry_file, encoding='utf-8') as f:
        return json.load(f)['vims']


def instantiate(lab):
    with driving.driver_options(lab):
        request, instance = driving.new_instance(lab)
        driving.instantiate_end(request, instance, lab)
    return request, instance


def stale_vim_named_like(lab) -> None:
    """A VIM of the cluster's name left by another cluster: the
    instantiate fails at its last step, after reading the token."""
    name = driving.request_body(lab)['additionalParams'][
        'k8s_cluster_installation_param']['vim_name']
    with open(lab.vim_registry_file, 'w', encoding='utf-8') as f:
        json.dump({'vims': [{
            'id': 'stale', 'name': name, 'type': 'kubernetes',
            'auth_url': 'https://192.0.2.1:6443', 'bearer_token': 'old',
            'ssl_ca_cert': '', 'tenant_id': None, 'description': '',
            'used_by': []}]}, f)


def test_two_instances_then_a_rerun_each_keep_their_own_real_token(site):
    with throwaway_lab(1, 1, site=site) as first, \
            throwaway_lab(1, 1, site=site) as second:
        stale_vim_named_like(first)
        with driving.driver_options(first):
            request, instance = driving.new_instance(first)
            with pytest.raises(MgmtDriverError, match='already exists'):
                driving.instantiate_end(request, instance, first)
        # The operator deletes the stale VIM; meanwhile another instance.
        with open(first.vim_registry_file, 'w', encoding='utf-8') as f:
            json.dump({'vims': []}, f)
        instantiate(second)
        # Tacker re-runs the first instance's instantiate_end (retry): it
        # reads the same token a second time in this process.
        with driving.driver_options(first):
            driving.instantiate_end(request, instance, first)
        # And once more, now that everything is done.
        with driving.driver_options(first):
            driving.instantiate_end(request, instance, first)

        vims = {}
        for lab in (first, second):
            [vim] = registered_vims(lab)
            token = vim['bearer_token']
            assert token and '*' not in token, lab.state.name
            tokens = {s['data']['token'] for s in
                      ClusterView(lab.state.cluster_dir).secrets()
                      if s.get('type') ==
                      'kubernetes.io/service-account-token'}
            assert any(_decoded(t) == token for t in tokens)
            assert api_status(vim, token) == 200
            vims[lab.state.name] = vim
        one, other = vims.values()
        assert one['bearer_token'] != other['bearer_token']
        # Each token is its own cluster's: the other cluster refuses it.
        assert api_status(one, other['bearer_token']) == 401
        assert api_status(other, one['bearer_token']) == 401


def _decoded(b64: str) -> str:
    import base64
    return base64.b64decode(b64).decode()


def node_names(lab) -> set[str]:
    return {member_node_name(Role(h.role), h.member_name)
            for h in lab.state.hosts}


def assert_all_ready(lab) -> None:
    view = ClusterView(lab.state.cluster_dir)
    assert set(view.node_names()) == node_names(lab)
    assert all(view.node_ready(n) for n in view.node_names())


def test_whole_lifecycle_with_passwords_master_and_worker(site):
    with throwaway_lab(3, 1, site=site, role_passwords={
            'master': 'master', 'worker': 'worker'}) as lab:
        assert lab.state.password_for('master') == 'master'
        assert lab.state.password_for('worker') == 'worker'
        _, instance = instantiate(lab)
        with driving.driver_options(lab):
            assert_all_ready(lab)
            [vim] = registered_vims(lab)
            assert api_status(vim, vim['bearer_token']) == 200

            new = driving.scale_out(lab, instance, 1)
            assert len(new) == 1
            assert_all_ready(lab)
            driving.scale_in(lab, instance, 1)
            assert_all_ready(lab)

            master = next(h for h in lab.state.hosts if h.role == 'master')
            worker = next(h for h in lab.state.hosts if h.role == 'worker')
            for host in (master, worker):
                driving.heal(lab, instance, [driving.vnfc_of(instance, host)])
                assert lab.host_at(host.ip).server_id != host.server_id
                assert_all_ready(lab)
            stored = driving.stored_state(lab, instance)
            assert set(stored.host_keys) == {
                h.server_id for h in lab.state.hosts}

            driving.terminate(instance)
            assert registered_vims(lab) == []
            assert not instance_state.holds_state(instance.vnf_metadata)

"""The cluster record and the signed state, against the lab.

An HA cluster (2 masters + 1 worker) is instantiated; then the site's
defaults change (Kubernetes minor, HAProxy port) and later operations must
follow what the cluster was built with. Then the stored state is edited
the way Tacker merges ``PATCH /vnf_instances/{id}`` metadata: the next
operation refuses, naming the field, and changes nothing.
Real: SSH, Keystone and Heat, install script, HAProxy, keepalived.
Emulated: the compute and network APIs below Heat, the Kubernetes
binaries.
"""
from __future__ import annotations

import json
import logging

import pytest

from kubernetes_mgmt.cluster.naming import member_node_name
from kubernetes_mgmt.state import instance_state
from kubernetes_mgmt.topology.hosts import Role
from kubernetes_mgmt_lab import driving, tacker_shapes
from kubernetes_mgmt_lab.emulated import ClusterView
from kubernetes_mgmt_lab.file_registry import FileVimRegistry
from kubernetes_mgmt_lab.testing import unavailable_reason

pytestmark = pytest.mark.lab

WATCHED = ('/etc/hosts', '/etc/haproxy/haproxy.cfg',
           '/etc/keepalived/keepalived.conf')


@pytest.fixture(scope='module')
def ha(site):
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with driving.instantiated_lab(2, 1, site=site) as pair:
        yield pair


def node_name(host) -> str:
    return member_node_name(Role(host.role), host.member_name)


def kubelet_version(lab, host) -> str:
    node = ClusterView(lab.state.cluster_dir).node(node_name(host))
    return node['status']['nodeInfo']['kubeletVersion']


def read(lab, host, path) -> str | None:
    try:
        with open(lab.host_path(host.name, path), encoding='utf-8') as f:
            return f.read()
    except FileNotFoundError:
        return None


def test_later_operations_follow_the_record_not_todays_defaults(ha, caplog):
    lab, instance = ha
    first = lab.state.hosts[0]
    built_with = kubelet_version(lab, first)
    assert built_with.startswith('v1.37.')
    vims = FileVimRegistry(lab.vim_registry_file).records()
    caplog.set_level(logging.INFO, logger='kubernetes_mgmt')

    with driving.driver_options(lab, kubernetes_version='1.38',
                                lb_port=17443):
        new, = driving.scale_out(lab, instance, 1)
        assert kubelet_version(lab, new) == built_with
        master = next(h for h in lab.state.hosts
                      if h.role == 'master' and h is not first)
        driving.heal(lab, instance, [driving.vnfc_of(instance, master)])

    masters = [h for h in lab.state.hosts if h.role == 'master']
    for host in masters:
        haproxy = read(lab, host, '/etc/haproxy/haproxy.cfg')
        assert 'bind *:16443' in haproxy and '17443' not in haproxy
    assert kubelet_version(lab, lab.host_at(master.ip)) == built_with
    assert FileVimRegistry(lab.vim_registry_file).records() == vims
    assert driving.stored_state(lab, instance).record.auth_url == \
        vims[0].auth_url == f'https://{lab.state.vip}:16443'
    logged = caplog.text
    for name, kept, new_value in (('kubernetes_version', '1.37', '1.38'),
                                  ('lb_port', '16443', '17443')):
        assert f'built with {name} = {kept}; today' in logged
        assert f'would choose {new_value}: following' in logged


def _patch(instance, edit) -> dict:
    """Edit our stored JSON as a PATCH of vnf_metadata would; return the
    metadata before the edit."""
    before = dict(instance.vnf_metadata)
    stored = json.loads(before[instance_state.METADATA_KEY])
    edit(stored['state'])
    instance.vnf_metadata = {
        **before, instance_state.METADATA_KEY: json.dumps(stored)}
    return before


def snapshot(lab, instance) -> dict:
    view = ClusterView(lab.state.cluster_dir)
    return {
        'nodes': json.dumps(view.nodes(), sort_keys=True),
        'events': len(view.events()),
        'ssh logins': {h.name: lab.ssh_accepts(h.name)
                       for h in lab.state.hosts},
        'files': {(h.name, p): read(lab, h, p)
                  for h in lab.state.hosts for p in WATCHED},
        'vims': FileVimRegistry(lab.vim_registry_file).records(),
        'metadata': dict(instance.vnf_metadata),
        'vim connections': [c.vim_id for c in instance.vim_connection_info],
    }


def _heal_start(instance, host):
    driving.hook('heal_start', instance,
                 heal_vnf_request=tacker_shapes.HealVnfRequest(
                     vnfc_instance_id=[driving.vnfc_of(instance, host)]))


def _terminate_end(instance, host):
    driving.hook('terminate_end', instance,
                 terminate_vnf_request=tacker_shapes.TerminateVnfRequest())


def _edits(lab):
    worker = next(h for h in lab.state.hosts if h.role == 'worker')
    return [
        (lambda s: s['host_keys'].update(
            {worker.server_id:
             'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAttacker'}),
         f"host_keys['{worker.server_id}']", _heal_start),
        (lambda s: s.update(vim_id='11111111-2222-3333-4444-555555555555'),
         'vim_id', _terminate_end),
        (lambda s: s['healing'].update({'vnfc-x': {
            'server_id': 's', 'name': node_name(worker), 'role': 'worker',
            'ip': worker.ip}}), "healing['vnfc-x']", _heal_start),
        (lambda s: s['cluster'].update(lb_port=17443), 'cluster',
         _heal_start),
    ]


def test_a_state_edited_through_tackers_api_is_refused(ha):
    lab, instance = ha
    worker = next(h for h in lab.state.hosts if h.role == 'worker')
    with driving.driver_options(lab):
        for edit, field, operation in _edits(lab):
            original = _patch(instance, edit)
            before = snapshot(lab, instance)
            with pytest.raises(instance_state.TamperedState) as info:
                operation(instance, worker)
            assert field in str(info.value), field
            assert 'nothing was changed' in str(info.value)
            assert snapshot(lab, instance) == before, field
            instance.vnf_metadata = original
        # Restored, the state verifies again and operations proceed.
        driving.heal(lab, instance, [driving.vnfc_of(instance, worker)])
    view = ClusterView(lab.state.cluster_dir)
    assert view.node_ready(node_name(worker))

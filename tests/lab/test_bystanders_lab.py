"""Nodes outside an operation that are down do not fail it.

One HA cluster (2 masters, 2 workers) in the lab: a worker whose VM does
not answer SSH does not stop a scale-out (its /etc/hosts is refreshed by
the next operation), and a first master that does not answer is replaced
as the master that runs kubectl. Real: SSH, sshd stopped for real, the
install script; emulated: the Kubernetes binaries.
"""
from __future__ import annotations

import logging
import time

import pytest

from kubernetes_mgmt.cluster.naming import member_node_name
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.topology.hosts import Role
from kubernetes_mgmt_lab import driving
from kubernetes_mgmt_lab.emulated import ClusterView
from kubernetes_mgmt_lab.testing import unavailable_reason

pytestmark = pytest.mark.lab

# Short, so a bystander that is down costs seconds; the operation's own
# nodes keep the lab's (long) ssh_connect_deadline.
BYSTANDER_DEADLINE = 3
# Long enough that waiting it out could not pass for a slow run.
SSH_CONNECT_DEADLINE = 900


@pytest.fixture(scope='module')
def cluster(site):
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with driving.instantiated_lab(2, 2, site=site) as pair:
        yield pair


@pytest.fixture
def lab(cluster):
    with driving.driver_options(
            cluster[0], bystander_connect_deadline=BYSTANDER_DEADLINE,
            ssh_connect_deadline=SSH_CONNECT_DEADLINE):
        yield cluster


def node_name(host) -> str:
    return member_node_name(Role(host.role), host.member_name)


def hosts_block(lab, host) -> set[str]:
    with open(lab.host_path(host.name, '/etc/hosts'),
              encoding='utf-8') as f:
        text = f.read()
    start = text.index('# BEGIN kubernetes-mgmt nodes\n')
    end = text.index('# END kubernetes-mgmt nodes')
    return set(text[start:end].splitlines()[1:])


def wanted_block(lab) -> set[str]:
    return {f'{h.ip} {node_name(h)}' for h in lab.state.hosts}


def warnings(caplog) -> list[str]:
    # This lab's VMs take no user data, so every operation also warns once
    # that it logged in with the password: not what these tests are about.
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING
            and 'logged in with the VM password' not in r.getMessage()]


def assert_ready(lab, host) -> None:
    view = ClusterView(lab.state.cluster_dir)
    assert view.node_ready(node_name(host))


def test_scale_out_with_a_worker_down_completes_and_warns(lab, caplog):
    lab, instance = lab
    caplog.set_level(logging.INFO, logger='kubernetes_mgmt')
    down = next(h for h in lab.state.hosts if h.role == 'worker')
    lab.stop_sshd(down.name)
    try:
        started = time.monotonic()
        (new,) = driving.scale_out(lab, instance, 1)
        seconds = time.monotonic() - started
    finally:
        lab.start_sshd(down.name)
    assert_ready(lab, new)
    # Not a wait of ssh_connect_deadline for the worker that is down.
    assert seconds < SSH_CONNECT_DEADLINE
    named = [w for w in warnings(caplog)
             if node_name(down) in w and down.ip in w]
    assert named and 'unreachable' in named[0], warnings(caplog)
    assert 'not refreshed' in named[0]
    # Every other node knows the new worker; the one that was down not yet.
    for host in lab.state.hosts:
        if host.name != down.name:
            assert hosts_block(lab, host) == wanted_block(lab), host.name
    assert f'{new.ip} {node_name(new)}' not in hosts_block(lab, down)


def test_the_next_operation_repairs_the_skipped_node(lab, caplog):
    lab, instance = lab
    caplog.set_level(logging.INFO, logger='kubernetes_mgmt')
    (new,) = driving.scale_out(lab, instance, 1)
    assert_ready(lab, new)
    assert not warnings(caplog)
    for host in lab.state.hosts:
        assert hosts_block(lab, host) == wanted_block(lab), host.name


def test_scale_out_with_the_first_master_down_uses_another(lab, caplog):
    lab, instance = lab
    caplog.set_level(logging.INFO, logger='kubernetes_mgmt')
    state = driving.stored_state(lab, instance)
    first = next(h for h in lab.state.hosts
                 if h.server_id == state.first_master)
    other = next(h for h in lab.state.hosts
                 if h.role == 'master' and h.name != first.name)
    lab.stop_sshd(first.name)
    try:
        (new,) = driving.scale_out(lab, instance, 1)
    finally:
        lab.start_sshd(first.name)
    assert_ready(lab, new)
    found = warnings(caplog)
    assert any(node_name(first) in w and first.ip in w and
               'trying the next master' in w for w in found), found
    assert driving.stored_state(lab, instance).first_master == \
        other.server_id
    # The master that was down is a bystander too: skipped, named.
    assert any(node_name(first) in w and 'not refreshed' in w
               for w in found), found


def test_no_reachable_master_fails_naming_every_master(lab):
    lab, instance = lab
    masters = [h for h in lab.state.hosts if h.role == 'master']
    workers_before = {h.name for h in lab.state.hosts if h.role == 'worker'}
    for host in masters:
        lab.stop_sshd(host.name)
    try:
        with pytest.raises(MgmtDriverError) as info:
            driving.scale_out(lab, instance, 1)
    finally:
        for host in masters:
            lab.start_sshd(host.name)
    message = str(info.value)
    assert 'no master can run the cluster operations' in message
    for host in masters:
        assert f'{node_name(host)} ({host.ip})' in message
    new = [h for h in lab.state.hosts if h.role == 'worker'
           and h.name not in workers_before]
    view = ClusterView(lab.state.cluster_dir)
    assert not any(node_name(h) in view.node_names() for h in new)

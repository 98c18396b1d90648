"""``kubernetes-mgmt plan`` against a lab: the steps of every operation,
read from the lab's Heat stack, printed without any VM being touched
(counted in each VM's sshd log)."""
import json
import subprocess
import sys

import pytest

from kubernetes_mgmt.cluster.naming import member_node_name
from kubernetes_mgmt.topology.hosts import Role
from kubernetes_mgmt_lab import driving
from kubernetes_mgmt_lab.testing import throwaway_lab, unavailable_reason

pytestmark = pytest.mark.lab


@pytest.fixture(scope='module')
def ha_lab(site, tmp_path_factory):
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    request = tmp_path_factory.mktemp('plan') / 'instantiate.json'
    with throwaway_lab(3, 2, site=site) as lab:
        request.write_text(json.dumps(driving.request_body(lab)))
        yield lab, request


def plan(lab, request, operation, *nodes):
    argv = [sys.executable, '-m', 'kubernetes_mgmt.cli', 'plan', operation,
            '--config-file', lab.driver_conf_path,
            '--stack-id', lab.state.stack_id, '--request', str(request)]
    for node in nodes:
        argv += ['--node', node]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def names(lab, role):
    return [h for h in lab.state.hosts if h.role == role]


def test_plans_of_every_operation_touch_no_vm(ha_lab):
    lab, request = ha_lab
    logins = {h.name: lab.ssh_accepts(h.name) for h in lab.state.hosts}
    printed = {}
    for operation in ('instantiate', 'scale-out', 'scale-in', 'heal',
                      'heal-whole', 'terminate'):
        done = plan(lab, request, operation)
        assert done.returncode == 0, done.stdout + done.stderr
        printed[operation] = done.stdout
    assert {h.name: lab.ssh_accepts(h.name) for h in lab.state.hosts} \
        == logins
    first, *others = names(lab, 'master')
    workers = names(lab, 'worker')
    install = printed['instantiate']
    for host in lab.state.hosts:
        assert f'prepare {_node(host)}' in install
    assert f'init {_node(first)}' in install
    assert 'skipped when the first master runs an initialised control ' \
        'plane' in install
    for master in others:
        assert f'join-master {_node(master)}  [one at a time (etcd); ' \
            'skipped when the node has joined]' in install
    # A worker waits for its own preparation and the join credentials,
    # not for the other nodes' preparation.
    join = _block(install, f'join-worker {_node(workers[0])}')
    assert f'needs prepare {_node(workers[0])}' in join
    assert f'needs prepare {_node(workers[1])}' not in join
    assert 'register VIM cluster' in install
    assert f'join-worker {_node(workers[-1])}' in printed['scale-out']
    assert f'remove node {_node(workers[-1])}' in printed['scale-in']
    heal = printed['heal']
    assert 'remove master' in heal and f'join-master {_node(others[-1])}' \
        in heal and 'VIP back on' not in heal
    assert 'delete VIM cluster' in printed['heal-whole']
    assert 'init ' in printed['heal-whole']
    assert 'check no CNF uses the VIM' in printed['terminate']
    # Every operation that reaches the cluster reads the certificates of
    # each master and renews them, one master at a time, when due.
    for operation in ('instantiate', 'scale-out', 'scale-in', 'heal',
                      'heal-whole'):
        text = printed[operation]
        assert 'decide certificate renewal cluster' in text, operation
        for master in (first, *others):
            if operation == 'heal' and master is others[-1]:
                continue        # being healed: not read
            assert f'read certificates {_node(master)}' in text
            assert f'renew certificates {_node(master)}  [one at a time ' \
                '(etcd); skipped when no certificate kubeadm manages on ' \
                'any master has fewer than [kubernetes_mgmt] ' \
                'cert_renew_days left]' in text, operation
    assert 'certificates' not in printed['terminate']


def test_heal_of_the_first_master_plans_the_vip_coming_back(ha_lab):
    lab, request = ha_lab
    first = names(lab, 'master')[0]
    done = plan(lab, request, 'heal', _name(lab, first))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f'VIP back on {_node(first)}' in done.stdout


def test_lab_plan_names_hosts_as_the_lab_does(ha_lab):
    lab, _ = ha_lab
    worker = names(lab, 'worker')[0]
    argv = [sys.executable, '-m', 'kubernetes_mgmt.cli', 'lab', 'plan',
            'scale-in', '--root', lab.root, '--node', worker.name]
    done = subprocess.run(argv, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f'remove node {_node(worker)}' in done.stdout
    done = subprocess.run([*argv[:-1], 'worker-9'], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0
    assert 'no host worker-9 in the lab' in done.stderr


def test_bad_nodes_are_refused_by_name(ha_lab):
    lab, request = ha_lab
    done = plan(lab, request, 'scale-in', 'no-such-node')
    assert done.returncode == 1
    assert 'no-such-node: not a node of stack' in done.stdout
    masters = [_name(lab, m) for m in names(lab, 'master')]
    done = plan(lab, request, 'heal', *masters)
    assert done.returncode == 1
    assert 'at least one must stay' in done.stdout


def _name(lab, host) -> str:
    return member_node_name(Role(host.role), host.member_name)


def _node(host) -> str:
    """How a plan names the node of a lab host."""
    return f'{member_node_name(Role(host.role), host.member_name)}' \
        f'@{host.ip}'


def _block(text, first_line):
    """The line ``first_line`` and its "needs" lines."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.strip().startswith(first_line))
    block = [lines[start]]
    for line in lines[start + 1:]:
        if not line.strip().startswith('needs '):
            break
        block.append(line)
    return '\n'.join(block)

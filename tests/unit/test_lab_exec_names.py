"""``lab exec`` finds the VM a name means: in a lab of its own, or among
the VMs the lab cloud booted for a cluster Tacker built (vm-0, vm-1 ...
below the services' root), by host name, node name, server id or
master-N / worker-N. Running the command in the VM's namespaces is the
one thing stood in for: it needs root and a booted VM."""
from __future__ import annotations

import os
import subprocess

import pytest

from kubernetes_mgmt.cli import main
from kubernetes_mgmt_lab import hosts
from kubernetes_mgmt_lab import state as lab_state
from kubernetes_mgmt_lab.emulated import cluster, store
from kubernetes_mgmt_lab.openstack import cloud
from kubernetes_mgmt_lab.openstack.layout import Root


def _lab(root: str, vms: dict[str, tuple[str, bool] | None]) -> None:
    """A lab at ``root`` whose hosts ``vms`` (host -> (node name, control
    plane), or None: not a node) are nodes of its emulated cluster."""
    os.makedirs(root, exist_ok=True)
    state = lab_state.LabState(
        name='k', root=root, subnet='10.10.0.0/24', gateway='10.10.0.1',
        bridge='kbr0', username='u', password='p', tenant_id='t')
    for index, host in enumerate(vms):
        state.hosts.append(lab_state.LabHost(
            name=host, role='server', ip=f'10.10.0.{index + 10}',
            netns=f'ns-{host}', root=os.path.join(root, 'hosts', host),
            server_id=f'server-{host}-of-{os.path.basename(root)}'))
    lab_state.save(state, lab_state.state_path(root))
    with store.mutate(state.cluster_dir) as data:
        for host in state.hosts:
            node = vms[host.name]
            if node is not None:
                cluster.add_node(data, node[0], host.name, host.ip,
                                 'v1.30.0', node[1])


def _services(path, *labs: dict[str, tuple[str, bool] | None]) -> str:
    """A services root whose networks' labs hold ``labs``."""
    root = Root(str(path))
    os.makedirs(root.path, exist_ok=True)
    with open(root.state_file, 'w', encoding='utf-8') as f:
        f.write('{}')
    for index, vms in enumerate(labs):
        _lab(cloud.lab_root(root, index), vms)
    return root.path


# The VMs Tacker's stack got, in boot order; node names come from the
# groups' member names (random), so "master-0" is the first by name.
TACKER_CLUSTER = {'vm-0': ('master-zq4kd1', True),
                  'vm-1': ('worker-m2bq8a', False),
                  'vm-2': ('master-a7c3xe', True),
                  'vm-3': None}             # a storage server, no node


@pytest.fixture
def ran(monkeypatch):
    """Where commands ran: (lab root, host, argv)."""
    calls = []

    def exec_in(state, host, argv, **kwargs):
        calls.append((state.root, host.name, list(argv)))
        return subprocess.CompletedProcess(argv, 0, f'ran in {host.name}\n',
                                           '')
    monkeypatch.setattr(hosts, 'exec_in', exec_in)
    return calls


def _exec(*args: str) -> int:
    return main(['lab', 'exec', *args])


def test_master_0_of_a_cluster_tacker_built(tmp_path, ran, capsys):
    services = _services(tmp_path / 'kos', TACKER_CLUSTER)
    lab = cloud.lab_root(Root(services))
    assert _exec('--services', services, 'master-0', '--', 'kubectl',
                 'get', 'nodes') == 0
    assert ran == [(lab, 'vm-2', ['kubectl', 'get', 'nodes'])]
    assert capsys.readouterr().out == 'ran in vm-2\n'
    for name, host in (('master-1', 'vm-0'), ('worker-0', 'vm-1'),
                       ('master-zq4kd1', 'vm-0'), ('vm-3', 'vm-3'),
                       ('server-vm-1-of-lab', 'vm-1')):
        assert _exec('--services', services, name, '--', 'true') == 0
        assert ran[-1][:2] == (lab, host), name


def test_a_node_of_a_vm_gone_is_not_its_successors(tmp_path, ran, capsys):
    # The cluster of a terminated VNF keeps its nodes until the next
    # kubeadm init; a new VM took the name vm-0, at another address.
    services = _services(tmp_path / 'kos', TACKER_CLUSTER)
    lab = cloud.lab_root(Root(services))
    with lab_state.locked(lab_state.state_path(lab)) as state:
        state.host('vm-0').ip = '10.10.0.99'
    assert _exec('--services', services, 'master-zq4kd1', '--', 'ls') == 1
    assert _exec('--services', services, 'master-1', '--', 'ls') == 1
    assert _exec('--services', services, 'master-0', '--', 'ls') == 0
    assert ran == [(lab, 'vm-2', ['ls'])]
    assert 'vm-0, vm-1 (node worker-m2bq8a, worker-0)' in \
        capsys.readouterr().err


def test_without_options_the_default_lab_and_services_are_searched(
        tmp_path, ran, monkeypatch, capsys):
    from kubernetes_mgmt_lab.openstack import layout

    services = _services(tmp_path / 'kos', TACKER_CLUSTER)
    monkeypatch.setattr(layout, 'DEFAULT_ROOT', services)
    monkeypatch.setattr(lab_state, 'DEFAULT_ROOT', str(tmp_path / 'none'))
    assert _exec('master-0', '--', 'hostname') == 0
    assert ran[-1][1] == 'vm-2'
    # A lab of its own at the default root: its host names come first.
    _lab(str(tmp_path / 'own'), {'master-0': ('master-0', True),
                                 'worker-0': ('worker-0', False)})
    monkeypatch.setattr(lab_state, 'DEFAULT_ROOT', str(tmp_path / 'own'))
    assert _exec('master-0', '--', 'hostname') == 0
    assert ran[-1][:2] == (str(tmp_path / 'own'), 'master-0')
    assert _exec('master-a7c3xe', '--', 'hostname') == 0
    assert ran[-1][1] == 'vm-2'


def test_an_unknown_name_is_refused_with_the_names_there(tmp_path, ran,
                                                         capsys):
    services = _services(tmp_path / 'kos', TACKER_CLUSTER)
    lab = cloud.lab_root(Root(services))
    assert _exec('--services', services, 'master-2', '--', 'true') == 1
    out, err = capsys.readouterr()
    assert (ran, out) == ([], '')
    assert err == (
        "kubernetes-mgmt lab: no lab host named 'master-2'; the hosts of "
        f'the lab at {lab}: vm-0 (node master-zq4kd1, master-1), vm-1 '
        '(node worker-m2bq8a, worker-0), vm-2 (node master-a7c3xe, '
        'master-0), vm-3\n')


def test_a_name_in_two_labs_is_refused_with_where_they_are(tmp_path, ran,
                                                           capsys):
    services = _services(tmp_path / 'kos', TACKER_CLUSTER,
                         {'vm-0': ('master-b1', True)})
    first, second = cloud.lab_root(Root(services), 0), \
        cloud.lab_root(Root(services), 1)
    assert _exec('--services', services, 'master-0', '--', 'true') == 1
    err = capsys.readouterr().err
    assert ran == []
    assert err == (
        "kubernetes-mgmt lab: 'master-0' names VMs of more than one lab: "
        f'vm-2 (node master-a7c3xe, master-0) in the lab at {first}, vm-0 '
        f'(node master-b1, master-0) in the lab at {second}; name its lab '
        'with --root\n')
    assert _exec('--services', services, 'master-b1', '--', 'true') == 0
    assert _exec('--root', first, 'master-0', '--', 'true') == 0
    assert [r[:2] for r in ran] == [(second, 'vm-0'), (first, 'vm-2')]


def test_a_lab_of_its_own_by_root_as_before(tmp_path, ran, capsys):
    # Its hosts are named by role already: worker-1, the one worker that
    # joined, is not also "worker-0".
    root = str(tmp_path / 'lab')
    _lab(root, {'master-0': ('master-0', True), 'worker-0': None,
                'worker-1': ('worker-1', False)})
    assert _exec('--root', root, 'worker-0', '--', 'ls') == 0
    assert ran == [(root, 'worker-0', ['ls'])]
    assert _exec('--root', root, 'nosuch', '--', 'ls') == 1
    assert capsys.readouterr().err.endswith(
        f"no lab host named 'nosuch'; the hosts of the lab at {root}: "
        'master-0, worker-0, worker-1\n')


def test_missing_labs_and_services_are_named(tmp_path, ran, capsys):
    assert _exec('--services', str(tmp_path), 'master-0', '--', 'ls') == 1
    assert capsys.readouterr().err == (
        f'kubernetes-mgmt lab: no services at {tmp_path} (no '
        f'{tmp_path}/openstack.json); "lab tacker up --root {tmp_path}" '
        'starts them\n')
    assert _exec('--root', str(tmp_path), 'master-0', '--', 'ls') == 1
    assert capsys.readouterr().err == (
        f'kubernetes-mgmt lab: no lab at {tmp_path} (no '
        f'{tmp_path}/lab.json)\n')
    assert ran == []

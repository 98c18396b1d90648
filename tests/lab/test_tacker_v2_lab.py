"""The cluster lifecycle through Tacker's v2 VNF LCM API, as README's v2
section shows it: the openstack CLI with ``--os-tacker-api-version 2``
against Tacker 16 (one tacker-conductor, which runs the package's LCM
script in a child process for each operation), Keystone, Glance, Heat and
Barbican, with the compute, network and block-storage APIs below Heat
emulated by the lab (servers are lab VMs), as is Kubernetes' server side.

After each operation the cluster, Tacker's records and Heat must agree.
The tests run in file order and share the VNFs they create."""
from __future__ import annotations

import json
import os
import signal
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from kubernetes_mgmt.remote.retry import wait_until
from kubernetes_mgmt.shim.v2.instance import PARAMS_KEY, VIM_KEY
from kubernetes_mgmt.state.instance_state import METADATA_KEY, holds_state
from kubernetes_mgmt_lab import hosts
from kubernetes_mgmt_lab.emulated import (
    held_commands,
    hold_commands,
    inject_fault,
    release_commands,
)
from kubernetes_mgmt_lab.openstack import (
    conductors,
    inspect,
    processes,
    tacker,
)
from kubernetes_mgmt_lab.openstack.layout import Root
from kubernetes_mgmt_lab.openstack.operator import OperationFailed, Operator
from kubernetes_mgmt_lab.openstack.state import ServicesState
from kubernetes_mgmt_lab.testing import lab_vm, other_host_keys

pytestmark = pytest.mark.lab

REQUESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'samples', 'requests_v2')
USER_DATA = os.path.join(REQUESTS, 'user_data_params.json')
MASTER, WORKER = 'masterNode', 'workerNode'
# What the driver keeps in metadata besides its state (a terminated
# instance keeps an empty state: holds_state is False).
DRIVER_KEYS = (PARAMS_KEY, VIM_KEY)


@dataclass
class Session:
    root: Root
    op: Operator
    vim_id: str
    vnfd_id: str


@pytest.fixture(scope='module')
def session(tacker_site) -> Iterator[Session]:
    root = Root(tacker_site.root)
    op = Operator(root, echo=print, api_version=2)
    vim_id = op.register_vim()
    csar = root.of('k8s_cluster_v2.zip')
    subprocess.run([tacker.VENV.bin('kubernetes-mgmt'), 'package', 'build',
                    '--v2', '-o', csar], check=True, capture_output=True)
    _, vnfd_id = op.onboard(csar)
    yield Session(root, op, vim_id, vnfd_id)
    print('\nseconds through Tacker (CLI call to op COMPLETED):')
    for name, seconds in op.timings.items():
        print(f'  {name:<24} {seconds:6.1f}')


def _request(s: Session, sample: str, name: str) -> str:
    return s.op.request_file(os.path.join(REQUESTS, sample), s.vim_id, name)


@pytest.fixture(scope='module')
def complex_vnf(session) -> str:
    """The HA sample without the VMs' password: the driver reaches the
    VMs with its own key only (and sudo needs none), given to them by
    the package's user data."""
    vnf_id = session.op.create(session.vnfd_id, name='v2-complex')
    request = _request(session, 'instantiate_complex_request.json',
                       'v2-complex')
    with open(request, encoding='utf-8') as f:
        body = json.load(f)
    param = body['additionalParams']['k8s_cluster_installation_param']
    for group in ('master_node', 'worker_node'):
        del param[group]['password']
    with open(request, 'w', encoding='utf-8') as f:
        json.dump(body, f)
    session.op.instantiate(vnf_id, request)
    return vnf_id


# -- agreement of cluster, Tacker and Heat ------------------------------------

def agree(s: Session, vnf_id: str, masters: int,
          workers: int) -> list[inspect.Vnfc]:
    """The cluster has exactly the VNF's VMs as Ready nodes, one etcd
    member per master, every master behind each HAProxy; Tacker's
    instance keeps one VIM connection (OpenStack) and names the cluster's
    registered VIM in its metadata; Heat holds exactly these servers."""
    shown = s.op.show(vnf_id)
    assert shown['Instantiation State'] == 'INSTANTIATED'
    vnfcs = inspect.vnfcs(s.root, shown)
    assert Counter(v.vdu for v in vnfcs) == Counter(
        {MASTER: masters, WORKER: workers})
    assert all(v.lab_host for v in vnfcs), vnfcs
    view = inspect.cluster(s.root)
    nodes = inspect.node_ips(view)
    assert sorted(nodes.values()) == sorted(v.ip for v in vnfcs)
    assert all(view.node_ready(n) for n in nodes)
    assert len(view.etcd_members()) == masters
    master_ips = {v.ip for v in vnfcs if v.vdu == MASTER}
    for vnfc in vnfcs:
        if masters > 1 and vnfc.vdu == MASTER:
            cfg = inspect.read_in_vm(s.root, vnfc, '/etc/haproxy/haproxy.cfg')
            assert all(f'{ip}:6443' in cfg for ip in master_ips)
    assert list(shown['VIM Connection Info']) == ['openstack']
    vim = shown['metadata'][VIM_KEY]
    assert s.op.api.vim_types()[vim['vimId']] == 'kubernetes'
    assert vim['sslCaCert'].startswith('-----BEGIN CERTIFICATE-----')
    rows = s.op.api.stack_resources(f'vnf-{vnf_id}')
    assert {r['physical_resource_id'] for r in rows
            if r['resource_type'] == 'OS::Nova::Server'} == \
        {v.server_id for v in vnfcs}
    # The driver logged in to every VM with its own key, one per cluster
    # (given by instantiate_start through the user data), never with the
    # VM password.
    methods, keys = inspect.login_methods(s.root, vnfcs)
    assert methods == {'publickey'} and len(keys) == 1, (methods, keys)
    return vnfcs


def _secret(s: Session) -> str:
    return s.op.state.passwords['vm']


def _op_params(s: Session, op: dict) -> str:
    shown = s.op.run('vnflcm', 'op', 'show', op['ID'], show=False)
    return json.dumps(shown['Operation Parameters'])


# -- the complex (HA) flavour ----------------------------------------------

def test_instantiate_complex(session, complex_vnf):
    agree(session, complex_vnf, 3, 2)
    shown = session.op.show(complex_vnf)
    metadata = shown['metadata']
    assert metadata[VIM_KEY]['endpoint'].startswith('https://')
    # The parameters later operations need are kept, sealed: the VMs'
    # password is nowhere in what Tacker shows of the instance.
    assert metadata[PARAMS_KEY].startswith('aesgcm1:')
    assert _secret(session) not in json.dumps(shown)


def test_scale_out_and_in_send_no_password(session, complex_vnf):
    out = session.op.scale(complex_vnf, 'SCALE_OUT', 'worker_instance',
                           params=USER_DATA)
    agree(session, complex_vnf, 3, 3)
    scale_in = session.op.scale(complex_vnf, 'SCALE_IN', 'worker_instance',
                                params=USER_DATA)
    agree(session, complex_vnf, 3, 2)
    for op in (out, scale_in):
        sent = _op_params(session, op)
        assert 'password' not in sent and 'master_node' not in sent


def test_a_conductor_killed_in_a_scale_out_resumes_with_pinned_keys(
        session, complex_vnf):
    """SIGKILL of the conductor and the LCM script it runs, while the
    scale-out's join waits on the new worker: Tacker, started again,
    marks the operation FAILED_TEMP; while the new VM's sshd presents
    other keys than its console shows, ``op retry`` is refused naming
    host, expected and offered keys; with its own keys back, the retry
    completes, and the stored state pins the keys the console shows."""
    s = session
    agree(s, complex_vnf, 3, 2)
    cluster = inspect.cluster_dir(s.root)
    hold_commands(cluster, '*', 'kubeadm join')
    try:
        op = s.op.scale(complex_vnf, 'SCALE_OUT', 'worker_instance',
                        wait=False, params=USER_DATA)
        held = _poll(lambda: held_commands(cluster), 300, 'a held join')
        _kill_conductor(s.root)
    finally:
        release_commands(cluster)
    conductors.start(s.root, conductors.FIRST)
    failed = s.op.wait(op['ID'], check=False)
    assert failed['Operation State'] == 'FAILED_TEMP'

    vm = lab_vm(s.root, held[0]['host'])
    with other_host_keys(vm):
        with pytest.raises(OperationFailed) as refused:
            s.op.retry(op['ID'])
    error = str(refused.value.op.get('Error'))
    assert 'host key mismatch' in error and vm.host.ip in error
    assert 'published on its console' in error

    assert s.op.retry(op['ID'])['Operation State'] == 'COMPLETED'
    vnfcs = agree(s, complex_vnf, 3, 3)
    new = next(v for v in vnfcs if v.lab_host == vm.host.name)
    pinned = _stored_state(s, complex_vnf)['host_keys'][new.server_id]
    assert pinned.split()[1] in {line.split()[1] for line in
                                 hosts.host_public_keys(vm.host)}
    s.op.scale(complex_vnf, 'SCALE_IN', 'worker_instance', params=USER_DATA)
    agree(s, complex_vnf, 3, 2)


def _kill_conductor(root: Root) -> None:
    """SIGKILL tacker-conductor with its workers and what they run (the
    LCM script): a host that lost power, as far as Tacker knows."""
    pid = ServicesState.load(root).pids[conductors.FIRST]
    victims = (pid, *processes.descendants(pid))
    for victim in victims:
        try:
            os.kill(victim, signal.SIGKILL)
        except ProcessLookupError:
            pass
    # SIGKILL is delivered, not done: the conductor counts as running
    # until the kernel has ended it (a loaded host takes a moment).
    _poll(lambda: not any(processes.alive(v) for v in victims), 30,
          'the killed conductor gone')
    processes.reap(pid)


def _stored_state(s: Session, vnf_id: str) -> dict:
    stored = json.loads(s.op.show(vnf_id)['metadata'][METADATA_KEY])
    return stored['state']


def _poll(fn, deadline: float, what: str):
    found = None

    def check():
        nonlocal found
        found = fn()
        return found
    assert wait_until(check, deadline=deadline, ceiling=1.0), what
    return found


def test_a_failed_scale_out_is_rolled_back(session, complex_vnf):
    before = agree(session, complex_vnf, 3, 2)
    inject_fault(inspect.cluster_dir(session.root), '*', 'kubeadm join',
                 'injected: the join was refused', times=1)
    with pytest.raises(OperationFailed) as failed:
        session.op.scale(complex_vnf, 'SCALE_OUT', 'worker_instance',
                         params=USER_DATA)
    assert 'scale_end failed' in str(failed.value.op.get('Error'))
    rolled = session.op.rollback(failed.value.op['ID'])
    assert rolled['Operation State'] == 'ROLLED_BACK'
    # The new worker left the cluster before Heat deleted its VM.
    assert agree(session, complex_vnf, 3, 2) == before


def test_heal_a_master_and_a_worker(session, complex_vnf):
    before = agree(session, complex_vnf, 3, 2)
    info = session.op.show(complex_vnf)['Instantiated Vnf Info']
    by_server = {v['vnfcResourceInfoId']: v['id'] for v in info['vnfcInfo']}
    targets = [next(v for v in before if v.vdu == vdu)
               for vdu in (MASTER, WORKER)]
    op = session.op.heal(complex_vnf,
                         tuple(by_server[t.server_id] for t in targets),
                         params=USER_DATA)
    after = agree(session, complex_vnf, 3, 2)
    assert not {t.server_id for t in targets} & {v.server_id for v in after}
    untouched = {v.server_id for v in before} - {t.server_id
                                                 for t in targets}
    assert untouched <= {v.server_id for v in after}
    assert 'password' not in _op_params(session, op)


def test_heal_the_whole_vnf(session, complex_vnf):
    before = agree(session, complex_vnf, 3, 2)
    session.op.heal(complex_vnf, params=USER_DATA)
    after = agree(session, complex_vnf, 3, 2)
    assert not {v.server_id for v in before} & {v.server_id for v in after}


def test_terminate_removes_vim_and_state(session, complex_vnf):
    shown = session.op.show(complex_vnf)
    vim_id = shown['metadata'][VIM_KEY]['vimId']
    servers = {v.server_id for v in inspect.vnfcs(session.root, shown)}
    session.op.terminate(complex_vnf)
    shown = session.op.show(complex_vnf)
    assert shown['Instantiation State'] == 'NOT_INSTANTIATED'
    assert not set(DRIVER_KEYS) & set(shown.get('metadata') or {})
    assert not holds_state(shown.get('metadata') or {})
    assert vim_id not in {v['ID'] for v in session.op.run('vim', 'list')}
    assert not servers & set(inspect.servers(session.root))
    session.op.run('vnflcm', 'delete', complex_vnf, parse=False)


# -- failure, retry and rollback ----------------------------------------------

def _failed_at_join(s: Session, name: str) -> tuple[str, dict]:
    """A simple VNF whose instantiate failed in the LCM script at a
    worker's join: its id and the FAILED_TEMP operation."""
    inject_fault(inspect.cluster_dir(s.root), '*', 'kubeadm join',
                 'injected: the join was refused', times=1)
    vnf_id = s.op.create(s.vnfd_id, name=name)
    with pytest.raises(OperationFailed) as failed:
        s.op.instantiate(vnf_id, _request(
            s, 'instantiate_simple_request.json', name))
    assert failed.value.state == 'FAILED_TEMP'
    error = str(failed.value.op.get('Error'))
    # The driver's message, naming the step and the host.
    assert 'instantiate_end failed' in error
    assert 'join' in error and 'injected' in error
    assert 'worker' in error
    return vnf_id, failed.value.op


def test_a_failed_join_is_retried_to_completion(session):
    vnf_id, op = _failed_at_join(session, 'v2-retried')
    assert session.op.retry(op['ID'])['Operation State'] == 'COMPLETED'
    agree(session, vnf_id, 1, 2)
    session.op.terminate(vnf_id)
    session.op.run('vnflcm', 'delete', vnf_id, parse=False)


def test_rollback_of_a_failed_instantiate_leaves_nothing(session):
    vnf_id, op = _failed_at_join(session, 'v2-rolled-back')
    assert session.op.rollback(op['ID'])['Operation State'] == 'ROLLED_BACK'
    shown = session.op.show(vnf_id)
    assert shown['Instantiation State'] == 'NOT_INSTANTIATED'
    assert not set(DRIVER_KEYS) & set(shown.get('metadata') or {})
    assert not holds_state(shown.get('metadata') or {})
    assert 'kubernetes_vim' not in {v['Name'] for v in
                                    session.op.run('vim', 'list')}
    assert f'vnf-{vnf_id}' not in {st['Stack Name'] for st in
                                   session.op.run('stack', 'list')}
    session.op.run('vnflcm', 'delete', vnf_id, parse=False)

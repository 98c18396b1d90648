"""The operator's session of README's "Using it with the openstack CLI",
run for real: the openstack CLI against Keystone, Glance, Heat, Barbican
and Tacker 16 (one tacker-conductor with this plugin installed), with the
compute, network and block-storage APIs below Heat emulated by the lab
(servers are lab VMs). Emulated too: the Kubernetes binaries on the VMs.

After each operation the cluster, Tacker's records and Heat must agree.
The tests run in file order and share the VNFs they create."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from kubernetes_mgmt.state.instance_state import holds_state
from kubernetes_mgmt.vnf_package.layout import sample_package_dir
from kubernetes_mgmt_lab.emulated import inject_fault
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.openstack import conductors, inspect, tacker
from kubernetes_mgmt_lab.openstack.layout import Root
from kubernetes_mgmt_lab.openstack.operator import OperationFailed, Operator
from kubernetes_mgmt_lab.renamed import renamed_package, renamed_request
from kubernetes_mgmt_lab.testing import api_status

pytestmark = pytest.mark.lab

REQUESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'samples', 'requests')
MASTER, WORKER, STORAGE = 'masterNode', 'workerNode', 'storage_server'
EXPORTS_FILE = '/etc/exports.d/kubernetes-mgmt.exports'


@dataclass
class Session:
    root: Root
    op: Operator
    vim_id: str
    package_id: str
    vnfd_id: str


@pytest.fixture(scope='module')
def session(tacker_site) -> Iterator[Session]:
    root = Root(tacker_site.root)
    op = Operator(root, echo=print)
    vim_id = op.register_vim()
    csar = root.of('k8s_cluster.zip')
    subprocess.run([tacker.VENV.bin('kubernetes-mgmt'), 'package', 'build',
                    '-o', csar], check=True, capture_output=True)
    package_id, vnfd_id = op.onboard(csar)
    yield Session(root, op, vim_id, package_id, vnfd_id)
    print_figures(root, op)


def print_figures(root: Root, op: Operator) -> None:
    """Each operation's seconds through Tacker, and the driver's own
    hooks' as the conductor logged them."""
    print('\nseconds through Tacker (CLI call to op COMPLETED):')
    for name, seconds in op.timings.items():
        print(f'  {name:<24} {seconds:6.1f}')
    for name in (conductors.FIRST, conductors.SECOND):
        if not os.path.exists(root.log(name)):
            continue
        print(f'the driver\'s hooks in {name}:')
        with open(root.log(name), encoding='utf-8', errors='replace') as f:
            for line in f:
                found = re.search(r'\] ([^\]]+?) ([0-9a-f]{8})[0-9a-f-]{28} '
                                  r'finished in ([0-9.]+) s', line)
                if found:
                    print(f'  {found[1]} {found[2]:<30} {found[3]:>6}')


@pytest.fixture(scope='module')
def complex_vnf(session) -> str:
    return _instantiated(session, 'complex_kubernetes_param_file.json',
                         'complex-1')


def _instantiated(s: Session, sample: str, name: str) -> str:
    vnf_id = s.op.create(s.vnfd_id, name=name)
    request = s.op.request_file(os.path.join(REQUESTS, sample), s.vim_id,
                                name)
    s.op.instantiate(vnf_id, request)
    return vnf_id


# -- agreement of cluster, Tacker and Heat ------------------------------------

def agree(s: Session, vnf_id: str, masters: int, workers: int,
          storage: bool = False,
          vdus: tuple[str, str] = (MASTER, WORKER)) -> list[inspect.Vnfc]:
    """The cluster has exactly the VNF's masters and workers as Ready
    nodes, with one etcd member per master and every master behind each
    HAProxy; Tacker records the VNFCs and the cluster's VIM; Heat holds
    exactly these servers."""
    shown = s.op.show(vnf_id)
    assert shown['Instantiation State'] == 'INSTANTIATED'
    vnfcs = inspect.vnfcs(s.root, shown)
    counts = Counter(v.vdu for v in vnfcs)
    master_vdu, worker_vdu = vdus
    assert counts == Counter({master_vdu: masters, worker_vdu: workers,
                              **({STORAGE: 1} if storage else {})})
    assert all(v.lab_host for v in vnfcs), vnfcs    # a VM behind each
    lab, = {v.lab for v in vnfcs}                    # on one network
    view = inspect.cluster(s.root, lab)
    nodes = inspect.node_ips(view)
    assert sorted(nodes.values()) == sorted(
        v.ip for v in vnfcs if v.vdu in vdus)
    assert all(view.node_ready(n) for n in nodes)
    master_ips = {v.ip for v in vnfcs if v.vdu == master_vdu}
    assert len(view.etcd_members()) == masters
    if masters > 1:
        for vnfc in vnfcs:
            if vnfc.vdu == master_vdu:
                cfg = inspect.read_in_vm(s.root, vnfc,
                                         '/etc/haproxy/haproxy.cfg')
                assert all(f'{ip}:6443' in cfg for ip in master_ips)
    _vim_agrees(s, shown)
    _heat_agrees(s, vnf_id, {v.server_id for v in vnfcs})
    # The driver logged in to every VM with its own key, one per cluster
    # (given by instantiate_start through the user data), never with the
    # VM password.
    methods, keys = inspect.login_methods(s.root, vnfcs)
    assert methods == {'publickey'} and len(keys) == 1, (methods, keys)
    return vnfcs


def _vim_agrees(s: Session, shown: dict) -> None:
    kube = [c for c in shown['VIM Connection Info']
            if c['vimType'] == 'kubernetes']
    assert len(kube) == 1, shown['VIM Connection Info']
    assert s.op.api.vim_types()[kube[0]['vimId']] == 'kubernetes'


def _heat_agrees(s: Session, vnf_id: str, server_ids: set[str]) -> None:
    rows = s.op.api.stack_resources(f'vnflcm_{vnf_id}')
    assert {r['physical_resource_id'] for r in rows
            if r['resource_type'] == 'OS::Nova::Server'} == server_ids
    assert all(r['resource_status'].endswith('_COMPLETE') for r in rows)


def of_vdu(vnfcs, vdu: str) -> list[inspect.Vnfc]:
    return [v for v in vnfcs if v.vdu == vdu]


# -- the complex (HA) flavour ----------------------------------------------

def test_instantiate_complex(session, complex_vnf):
    agree(session, complex_vnf, 3, 2)
    vims = [v['Name'] for v in session.op.run('vim', 'list')]
    assert 'kubernetes_vim_complex' in vims


def test_scale_workers_out_and_in(session, complex_vnf):
    session.op.scale(complex_vnf, 'SCALE_OUT', 'worker_instance')
    agree(session, complex_vnf, 3, 3)
    session.op.scale(complex_vnf, 'SCALE_IN', 'worker_instance')
    agree(session, complex_vnf, 3, 2)


def test_scaling_the_masters_is_refused_and_changes_nothing(
        session, complex_vnf):
    # The sample VNFD gives the master aspect max_scale_level 0, so
    # Tacker's API refuses before any operation (or our driver) starts.
    before = agree(session, complex_vnf, 3, 2)
    ops = session.op.run('vnflcm', 'op', 'list')
    with pytest.raises(LabError, match='can not scale_out'):
        session.op.scale(complex_vnf, 'SCALE_OUT', 'master_instance')
    assert session.op.run('vnflcm', 'op', 'list') == ops
    assert agree(session, complex_vnf, 3, 2) == before


@pytest.mark.parametrize('vdu', [MASTER, WORKER])
def test_heal_one_vnfc(session, complex_vnf, vdu):
    before = agree(session, complex_vnf, 3, 2)
    target = of_vdu(before, vdu)[0]
    session.op.heal(complex_vnf, (target.id,))
    after = agree(session, complex_vnf, 3, 2)
    healed, = [v for v in after if v.id == target.id]
    assert healed.server_id != target.server_id
    untouched = {v.server_id for v in before if v.id != target.id}
    assert untouched <= {v.server_id for v in after}


def test_heal_the_whole_vnf(session, complex_vnf):
    before = agree(session, complex_vnf, 3, 2)
    session.op.heal(complex_vnf)
    after = agree(session, complex_vnf, 3, 2)
    assert not {v.server_id for v in before} & {v.server_id for v in after}


def test_terminate_and_delete_complex(session, complex_vnf):
    shown = session.op.show(complex_vnf)
    kube_vim = next(c['vimId'] for c in shown['VIM Connection Info']
                    if c['vimType'] == 'kubernetes')
    servers = {v.server_id for v in inspect.vnfcs(session.root, shown)}
    session.op.terminate(complex_vnf)
    assert session.op.show(complex_vnf)['Instantiation State'] == \
        'NOT_INSTANTIATED'
    assert kube_vim not in {v['ID'] for v in session.op.run('vim', 'list')}
    assert not servers & set(inspect.servers(session.root))
    stacks = {st['Stack Name'] for st in session.op.run('stack', 'list')}
    assert f'vnflcm_{complex_vnf}' not in stacks
    session.op.run('vnflcm', 'delete', complex_vnf, parse=False)
    assert complex_vnf not in {v['ID'] for v in
                               session.op.run('vnflcm', 'list')}


# -- the simple flavour with its storage server ------------------------------

@pytest.fixture(scope='module')
def simple_vnf(session) -> str:
    return _instantiated(session, 'simple_kubernetes_pv_param_file.json',
                         'simple-pv')


def test_instantiate_simple_with_storage(session, simple_vnf):
    vnfcs = agree(session, simple_vnf, 1, 2, storage=True)
    storage, = of_vdu(vnfcs, STORAGE)
    exports = inspect.read_in_vm(session.root, storage,
                                 EXPORTS_FILE) or ''
    for pv in ('pv1', 'pv2', 'pv3'):
        assert f'/volume/nfs/{pv} ' in exports
    pvs = inspect.cluster(session.root).pvs()
    assert len(pvs) == 3
    assert {pv['spec']['nfs']['server'] for pv in pvs} == {storage.ip}
    _kubectl_on_master_0_lists_the_nodes(session)


def _kubectl_on_master_0_lists_the_nodes(s: Session) -> None:
    """What an operator types to look at the cluster Tacker built (its
    VMs are vm-N): the real kubectl, given the server's table."""
    listed = subprocess.run(
        [sys.executable, '-m', 'kubernetes_mgmt.cli', 'lab', 'exec',
         '--services', s.root.path, 'master-0', '--', 'kubectl', 'get',
         'nodes'], capture_output=True, text=True, timeout=120, check=False)
    assert listed.returncode == 0, listed.stderr
    header, *rows = [line.split() for line in listed.stdout.splitlines()]
    assert header == ['NAME', 'STATUS', 'ROLES', 'AGE', 'VERSION']
    view = inspect.cluster(s.root)
    assert sorted((row[0], row[1], row[2]) for row in rows) == sorted(
        (name, 'Ready', 'control-plane' if name.startswith('master-')
         else '<none>') for name in view.node_names())


def test_healing_the_only_master_is_refused(session, simple_vnf):
    before = agree(session, simple_vnf, 1, 2, storage=True)
    master, = of_vdu(before, MASTER)
    with pytest.raises(OperationFailed) as failed:
        session.op.heal(simple_vnf, (master.id,))
    assert 'master' in str(failed.value.op.get('Error'))
    session.op.fail(failed.value.op['ID'])
    assert agree(session, simple_vnf, 1, 2, storage=True) == before


def test_terminate_is_refused_while_a_cnf_uses_the_cluster(session,
                                                           simple_vnf):
    shown = session.op.show(simple_vnf)
    kube_vim = next(c['vimId'] for c in shown['VIM Connection Info']
                    if c['vimType'] == 'kubernetes')
    # A stand-in CNF: a VNF instance whose VIM connection is the cluster.
    cnf = session.op.create(session.vnfd_id, name='cnf-stand-in')
    tacker.record_vim_connection(session.root, cnf, kube_vim)
    before = agree(session, simple_vnf, 1, 2, storage=True)
    with pytest.raises(OperationFailed) as failed:
        session.op.terminate(simple_vnf)
    assert cnf in str(failed.value.op.get('Error'))
    session.op.fail(failed.value.op['ID'])
    assert agree(session, simple_vnf, 1, 2, storage=True) == before
    session.op.run('vnflcm', 'delete', cnf, parse=False)
    session.op.terminate(simple_vnf)
    session.op.run('vnflcm', 'delete', simple_vnf, parse=False)


# -- failure, retry and rollback through Tacker ------------------------------

def _failed_at_join(s: Session, name: str) -> tuple[str, dict]:
    """A simple VNF whose instantiate failed at a worker's join: its id
    and the FAILED_TEMP operation, whose error names the join."""
    inject_fault(inspect.cluster_dir(s.root), '*', 'kubeadm join',
                 'injected: the join was refused', times=1)
    vnf_id = s.op.create(s.vnfd_id, name=name)
    request = s.op.request_file(
        os.path.join(REQUESTS, 'simple_kubernetes_param_file.json'),
        s.vim_id, name)
    with pytest.raises(OperationFailed) as failed:
        s.op.instantiate(vnf_id, request)
    assert failed.value.state == 'FAILED_TEMP'
    error = str(failed.value.op.get('Error'))
    assert 'join' in error and 'injected' in error
    return vnf_id, failed.value.op


def test_a_failed_worker_join_is_retried_to_completion(session):
    vnf_id, op = _failed_at_join(session, 'retried')
    assert session.op.retry(op['ID'])['Operation State'] == 'COMPLETED'
    agree(session, vnf_id, 1, 2)
    session.op.terminate(vnf_id)
    session.op.run('vnflcm', 'delete', vnf_id, parse=False)


def test_rollback_of_a_failed_instantiate_leaves_nothing(session):
    vnf_id, op = _failed_at_join(session, 'rolled-back')
    assert session.op.rollback(op['ID'])['Operation State'] == 'ROLLED_BACK'
    shown = session.op.show(vnf_id)
    assert shown['Instantiation State'] == 'NOT_INSTANTIATED'
    assert not holds_state(shown.get('metadata') or {})
    assert 'kubernetes_vim' not in {v['Name'] for v in
                                    session.op.run('vim', 'list')}
    stacks = {st['Stack Name'] for st in session.op.run('stack', 'list')}
    assert f'vnflcm_{vnf_id}' not in stacks
    session.op.run('vnflcm', 'delete', vnf_id, parse=False)


# -- two VNFs, one conductor at a time, two conductor hosts -------------------

def _pair_request(s: Session, name: str, network: int, sample: str) -> str:
    def own_vim(body: dict) -> None:
        body['additionalParams']['k8s_cluster_installation_param'][
            'vim_name'] = f'vim-{name}'
    return s.op.request_file(os.path.join(REQUESTS, sample), s.vim_id, name,
                             changes=own_vim, network=network)


def _kube_vim(s: Session, vnf_id: str) -> str:
    return next(c['vimId'] for c in s.op.show(vnf_id)['VIM Connection Info']
                if c['vimType'] == 'kubernetes')


@dataclass
class Pair:
    ha: str
    simple: str
    # The simple VNF's VNFCs as the first conductor left them.
    simple_vnfcs: list[inspect.Vnfc] = field(default_factory=list)

    @property
    def vnfs(self) -> list[str]:
        return [self.ha, self.simple]


@pytest.fixture(scope='module')
def pair(session) -> Iterator[Pair]:
    """An HA cluster (it has certificate keys) and a simple one, each on
    its own network (the lab's emulated Kubernetes of a network is one
    cluster), instantiated at once by the site's conductor. Whatever the
    tests did, the site's conductor alone serves the next module."""
    s = session
    pair = {'pair-ha': 'complex_kubernetes_param_file.json',
            'pair-simple': 'simple_kubernetes_param_file.json'}
    vnfs = [s.op.create(s.vnfd_id, name=name) for name in pair]
    ops = [s.op.instantiate(vnf, _pair_request(s, name, network, sample),
                            wait=False)
           for network, (vnf, (name, sample)) in enumerate(
               zip(vnfs, pair.items(), strict=True))]
    for op in ops:
        s.op.wait(op['ID'])
    yield Pair(*vnfs)
    conductors.swap(s.root, to=conductors.FIRST, away=conductors.SECOND)


def _swap(s: Session, to: str, away: str) -> None:
    """``conductors.swap``, its seconds among the figures printed."""
    started = time.monotonic()
    conductors.swap(s.root, to=to, away=away)
    s.op.timings[f'{len(s.op.timings) + 1:2d}. swap to {to}'] = round(
        time.monotonic() - started, 1)


def test_one_conductor_instantiates_two_vnfs_at_once(session, pair):
    agree(session, pair.ha, 3, 2)
    pair.simple_vnfcs = agree(session, pair.simple, 1, 2)


def _hook_lines(root: Root, name: str, vnf_id: str, offset: int = 0
                ) -> list[str]:
    """What the driver's own loggers wrote about ``vnf_id`` in conductor
    ``name``'s log (from ``offset``)."""
    with open(root.log(name), encoding='utf-8', errors='replace') as f:
        f.seek(offset)
        return [line for line in f if vnf_id in line and re.search(
            r' [0-9]+ (DEBUG|INFO|WARNING|ERROR) kubernetes_mgmt\.', line)]


def test_a_conductor_host_without_the_state_key_refuses_naming_it(
        session, pair):
    """A second conductor host (its own [DEFAULT] host, on the same
    RabbitMQ) that the operator has not given the plugin's key yet takes
    the next operation: it refuses before anything changes, naming the
    option and the fix, and makes no key of its own."""
    s, simple = session, pair.simple
    conductors.configure_second(s.root)
    _swap(s, to=conductors.SECOND, away=conductors.FIRST)
    worker = of_vdu(pair.simple_vnfcs, WORKER)[0]
    with pytest.raises(OperationFailed) as failed:
        s.op.heal(simple, (worker.id,))
    assert failed.value.state == 'FAILED_TEMP'
    error = str(failed.value.op.get('Error'))
    key_b = conductors.key_file(s.root, conductors.SECOND)
    assert f'{key_b}, [kubernetes_mgmt] state_key_file' in error, error
    assert 'Copy that file' in error
    assert not os.path.exists(key_b)
    s.op.fail(failed.value.op['ID'])
    assert agree(s, simple, 1, 2) == pair.simple_vnfcs


def test_with_the_key_copied_the_second_host_runs_both_vnfs(session, pair):
    """The operator copies the key; the second conductor then scales the
    HA cluster out and heals a worker of the simple one at the same time,
    from the state the first one signed."""
    s, ha, simple = session, pair.ha, pair.simple
    conductors.copy_key(s.root)
    offset = os.path.getsize(s.root.log(conductors.SECOND))
    before = pair.simple_vnfcs      # as the refusal left them
    worker = of_vdu(before, WORKER)[0]
    ops = [s.op.scale(ha, 'SCALE_OUT', 'worker_instance', wait=False),
           s.op.heal(simple, (worker.id,), wait=False)]
    for op in ops:
        s.op.wait(op['ID'])
    agree(s, ha, 3, 3)
    after = agree(s, simple, 1, 2)
    healed, = [v for v in after if v.id == worker.id]
    assert healed.server_id != worker.server_id
    assert {v.server_id for v in before if v.id != worker.id} <= \
        {v.server_id for v in after}
    for vnf in pair.vnfs:
        assert _hook_lines(s.root, conductors.SECOND, vnf, offset), vnf


def test_the_first_host_takes_over_again_and_terminates_both(session, pair):
    """Back on the first conductor, the state the second one signed
    verifies (each host has seen both VNFs' generations), the clusters'
    tokens are their own, no conductor logged a secret, and terminate
    leaves nothing."""
    s, vnfs = session, pair.vnfs
    offset = os.path.getsize(s.root.log(conductors.FIRST))
    _swap(s, to=conductors.FIRST, away=conductors.SECOND)
    auths = [tacker.vim_auth(s.root, _kube_vim(s, v)) for v in vnfs]
    for mine, other in (auths, auths[::-1]):
        assert api_status(mine, mine['bearer_token']) == 200
        assert api_status(mine, other['bearer_token']) == 401
    secrets = [a['bearer_token'] for a in auths] + tacker_secrets(s.root)
    joins = [cluster_secrets(s.root, lab) for lab in range(len(vnfs))]
    assert joins[0]['certificate_key_history'], 'the HA cluster has keys'
    secrets += [k for js in joins for ks in js.values() for k in ks]
    for log in (conductors.FIRST, conductors.SECOND, 'heat-engine',
                'heat-api', 'cloud'):
        with open(s.root.log(log), encoding='utf-8', errors='replace') as f:
            text = f.read()
        leaked = [i for i, secret in enumerate(secrets) if secret in text]
        assert not leaked, f'{log}.log holds secret(s) #{leaked}'
    for vnf in vnfs:
        s.op.terminate(vnf)
        assert _hook_lines(s.root, conductors.FIRST, vnf, offset), vnf
    for name in (conductors.FIRST, conductors.SECOND):
        seen = os.listdir(conductors.generations_dir(s.root, name))
        assert set(vnfs) <= set(seen), (name, seen)
    for vnf in vnfs:
        s.op.run('vnflcm', 'delete', vnf, parse=False)


def tacker_secrets(root: Root) -> list[str]:
    from kubernetes_mgmt_lab.openstack.state import ServicesState
    return list(ServicesState.load(root).passwords.values())


def cluster_secrets(root: Root, lab: int) -> dict[str, list[str]]:
    """The bootstrap tokens and certificate keys the cluster of network
    ``lab`` ever accepted."""
    info = inspect.cluster(root, lab).info()
    return {key: list(info.get(key, []))
            for key in ('token_history', 'certificate_key_history')}


# -- a package with other names -------------------------------------------

RENAMED_VDUS = ('cpNode', 'wkNode')


@pytest.fixture(scope='module')
def renamed(session, tmp_path_factory) -> Iterator[str]:
    """A VNF of a package whose names all differ from the sample's, and
    whose VNFD lets the master aspect scale (so that Tacker passes such
    a request on to the driver)."""
    s = session
    source = tmp_path_factory.mktemp('renamed') / 'package'
    vnfd_id = renamed_package(sample_package_dir(), source,
                              master_scale_level=2)
    csar = s.root.of('renamed.zip')
    subprocess.run([tacker.VENV.bin('kubernetes-mgmt'), 'package', 'build',
                    '--source', str(source), '-o', csar], check=True,
                   capture_output=True)
    package_id, onboarded = s.op.onboard(csar)
    assert onboarded == vnfd_id
    vnf = s.op.create(vnfd_id, name='renamed')

    def changes(body: dict) -> None:
        body.update(renamed_request(body))
        body['additionalParams']['k8s_cluster_installation_param'][
            'vim_name'] = 'vim-renamed'

    request = s.op.request_file(
        os.path.join(REQUESTS, 'simple_kubernetes_param_file.json'),
        s.vim_id, 'renamed', changes=changes)
    s.op.instantiate(vnf, request)
    yield vnf
    s.op.terminate(vnf)
    s.op.run('vnflcm', 'delete', vnf, parse=False)
    delete_package(s, package_id)


def test_a_package_with_other_names_works_the_same(session, renamed):
    agree(session, renamed, 1, 2, vdus=RENAMED_VDUS)
    session.op.scale(renamed, 'SCALE_OUT', 'wk_group')
    agree(session, renamed, 1, 3, vdus=RENAMED_VDUS)


def test_the_driver_refuses_to_scale_the_masters(session, renamed):
    # Tacker 16 calls scale_start only for SCALE_IN: Heat adds the master
    # VM, then scale_end refuses before any node joins, and rollback
    # removes the VM again.
    before = agree(session, renamed, 1, 3, vdus=RENAMED_VDUS)
    nodes = inspect.node_ips(inspect.cluster(session.root))
    with pytest.raises(OperationFailed) as failed:
        session.op.scale(renamed, 'SCALE_OUT', 'cp_group')
    error = str(failed.value.op.get('Error'))
    assert "'cp_group' is the master aspect" in error, error
    assert inspect.node_ips(inspect.cluster(session.root)) == nodes
    rolled_back = session.op.rollback(failed.value.op['ID'])
    assert rolled_back['Operation State'] == 'ROLLED_BACK'
    assert agree(session, renamed, 1, 3, vdus=RENAMED_VDUS) == before


def delete_package(s: Session, package_id: str) -> None:
    s.op.run('vnf', 'package', 'update', '--operational-state', 'DISABLED',
             package_id)
    s.op.run('vnf', 'package', 'delete', package_id, parse=False)
    assert package_id not in {p['Id'] for p in
                              s.op.run('vnf', 'package', 'list')}


def test_the_package_is_deleted_once_no_vnf_uses_it(session):
    # Last: every VNF of the sample package was deleted above.
    delete_package(session, session.package_id)

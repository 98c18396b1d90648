"""A lab without VMs, for unit tests of anything that reads Heat.

Lab states with fake hosts, the Heat double in a thread and a stub of the
lab manager's mutations. No root and no namespaces are needed: the Heat
double only reads and writes the state file, and the stub edits that file
the way ``Lab`` would (without creating or destroying anything).
"""
from __future__ import annotations

import contextlib
import copy
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

from heatclient import client as heat_client

from kubernetes_mgmt.params.model import (
    ClusterParams,
    MasterParams,
    NodeGroupParams,
    StorageServerParams,
    VolumeSetup,
)
from kubernetes_mgmt_lab import heat_api, placement
from kubernetes_mgmt_lab import state as lab_state
from kubernetes_mgmt_lab.state import GroupLayout, LabHost, LabState

# Fake credentials of a lab that has no VMs.
TOKEN = 'lab-token-123'  # noqa: S105
PASSWORD = 'fake-password'  # noqa: S105
TENANT = 'tenant0'
STACK_ID = '11111111-2222-3333-4444-555555555555'
STACK_NAME = 'vnf-lab'
VIP = '10.10.0.100'

MASTER = GroupLayout('master', 'masterNode', ['masterNode_CP1'],
                     'master_instance')
WORKER = GroupLayout('worker', 'workerNode', ['workerNode_CP2'],
                     'worker_instance')
STORAGE = GroupLayout('storage', 'storage_server', ['storage_server_CP'],
                      None, ['storage_server_volume'])

_ORDINAL = {'master': 10, 'worker': 20, 'storage': 30}

FAKE_VOLUME_ID = '0c1f5a3e-7b2d-4e8f-9a6c-3d4e5f6a7b8c'


def host(role: str, index: int, member: str | None = None,
         generation: int = 0) -> LabHost:
    name = f'{role}-{index}'
    grouped = role != 'storage'
    return LabHost(
        name=name, role=role, ip=f'10.10.0.{_ORDINAL[role] + index}',
        netns=f'lab-{name}', root=f'/nonexistent/{name}',
        server_id=f'server-{name}-g{generation}',
        member_name=(member or f'm{role[0]}{index:010d}') if grouped
        else None,
        member_stack_id=f'stack-{name}-g{generation}' if grouped else None,
        compute_host=f'compute-{index % 2}', zone=f'az-{index % 2}',
        generation=generation,
        volume_ids={'storage_server_volume': FAKE_VOLUME_ID}
        if not grouped else {},
        volume_devices={'storage_server_volume': '/dev/vdb'}
        if not grouped else {})


def make_state(path: str, masters: int = 1, workers: int = 2,
               ha: bool = False, storage: bool = False,
               floating_ips: dict[str, str] | None = None,
               anti_affinity: bool = False, admin_view: bool = True,
               compute_hosts: int = placement.DEFAULT_COMPUTE_HOSTS
               ) -> LabState:
    """A lab state; with ``anti_affinity`` worker i runs on compute-i."""
    layouts = copy.deepcopy([MASTER, WORKER] + ([STORAGE] if storage else []))
    hosts = ([host('master', i) for i in range(masters)]
             + [host('worker', i) for i in range(workers)]
             + ([host('storage', 0)] if storage else []))
    if anti_affinity:
        for h in hosts:
            if h.role == placement.GROUPED_ROLE:
                h.compute_host = f'compute-{h.name.split("-")[1]}'
    state = LabState(
        name='unit', root='/nonexistent', subnet='10.10.0.0/24',
        gateway='10.10.0.1', bridge='labbr0', username='ubuntu',
        password=PASSWORD, tenant_id=TENANT, stack_id=STACK_ID,
        stack_name=STACK_NAME, heat_token=TOKEN, vip=VIP if ha else None,
        floating_ips=dict(floating_ips or {}), layouts=layouts, hosts=hosts,
        compute_hosts=placement.compute_host_names(compute_hosts),
        anti_affinity=anti_affinity, admin_view=admin_view)
    lab_state.save(state, path)
    return state


def params(ha: bool = False, storage: bool = False,
           master_aspect: str | None = 'master_instance',
           worker_aspect: str | None = 'worker_instance',
           **master_overrides) -> ClusterParams:
    """Request parameters that match the fake layout."""
    master = dict(ssh_cp_name='masterNode_CP1',
                  nic_cp_name='masterNode_CP1', username='ubuntu',
                  password=PASSWORD, aspect_id=master_aspect,
                  cluster_cp_name='vip_CP' if ha else 'masterNode_CP1')
    master.update(master_overrides)
    store = StorageServerParams(
        ssh_cp_name='storage_server_CP', username='ubuntu', password=PASSWORD,
        volumes=(VolumeSetup('storage_server_volume', '/volume'),))
    return ClusterParams(
        script_path='Scripts/install_k8s_cluster.sh',
        master=MasterParams(**master),
        worker=NodeGroupParams(ssh_cp_name='workerNode_CP2',
                               nic_cp_name='workerNode_CP2',
                               username='ubuntu', password=PASSWORD,
                               aspect_id=worker_aspect),
        storage_server=store if storage else None)


@dataclass
class StubLab:
    """Stands in for ``Lab``: edits the state file, records each call."""

    path: str
    calls: list[tuple[str, str]] = field(default_factory=list)
    fail: bool = False
    _serial: Iterator[int] = field(default_factory=lambda: itertools.count(
        100))

    def __call__(self, state_path: str) -> StubLab:  # the lab factory
        assert state_path == self.path
        return self

    def add_hosts(self, role: str, count: int = 1) -> list[LabHost]:
        self._record('add_hosts', f'{role} x{count}')
        new = [host(role, next(self._serial)) for _ in range(count)]
        with lab_state.locked(self.path) as state:
            for h in new:
                state.hosts.append(h)
                placement.place(state, h)   # NoValidHost: nothing saved
        return new

    def remove_host(self, name: str) -> None:
        self._record('remove_host', name)
        with lab_state.locked(self.path) as state:
            state.hosts = [h for h in state.hosts if h.name != name]

    def replace_host(self, name: str) -> LabHost:
        self._record('replace_host', name)
        with lab_state.locked(self.path) as state:
            old = state.host(name)
            old.generation += 1
            old.server_id = f'server-{name}-g{old.generation}'
            placement.place(state, old, previous=old.compute_host)
            return old

    def _record(self, call: str, arg: str) -> None:
        self.calls.append((call, arg))
        if self.fail:
            raise RuntimeError(f'{call} {arg} failed on purpose')


@contextlib.contextmanager
def running(path: str, lab: StubLab | None = None):
    server = heat_api.start(path, lab_factory=lab or StubLab(path))
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def client(server: heat_api.HeatApiServer, token: str = TOKEN):
    return heat_client.Client('1', endpoint=server.endpoint(TENANT),
                              token=token)

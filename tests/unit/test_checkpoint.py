"""What an operation learns is stored as soon as it is learnt: a
conductor killed after any step leaves a state its retry starts from."""
from __future__ import annotations

import json

import pytest

from kubernetes_mgmt.cluster.cluster_plan import build_plan
from kubernetes_mgmt.engine import runner as engine
from kubernetes_mgmt.engine.graph import Graph
from kubernetes_mgmt.engine.progress import Progress
from kubernetes_mgmt.operations.checkpoint import Checkpoint
from kubernetes_mgmt.remote.hostkeys import HostKeyStore
from kubernetes_mgmt.shim.instance_store import TackerInstanceStore
from kubernetes_mgmt.state import instance_state
from kubernetes_mgmt.state.instance_state import DriverState


class _Instance:
    """A VNF instance whose every save is kept, as Tacker's DB would
    hold it at that moment."""

    id = 'inst-1'

    def __init__(self):
        self.vnf_metadata: dict = {}
        self.saved: list[dict] = []

    def save(self) -> None:
        self.saved.append(json.loads(
            self.vnf_metadata[instance_state.METADATA_KEY])['state'])


def store(instance):
    """The shim's store over the instance, as a hook makes it."""
    return TackerInstanceStore(instance)


@pytest.fixture
def plan(cluster_params, topology_of, package):
    return build_plan('inst-1', cluster_params, topology_of(), package)


def test_each_step_that_learns_something_is_saved_at_once(plan, state_key):
    instance, state, keys = _Instance(), DriverState(), HostKeyStore()
    worker = plan.workers[0]
    graph = Graph('scale')
    connect = graph.add('prepare', worker.label, lambda _: keys.known.update(
        {worker.host.server_id: 'ssh-ed25519 AAAA'}))
    joined = graph.add('join-worker', worker.label, lambda _: None,
                       needs=[connect])
    graph.add('label nodes', 'cluster', lambda _: None, needs=[joined])
    engine.run(graph, Progress('scale', 'inst-1'), parallel=2,
               on_settled=Checkpoint(store(instance), state, keys, plan))

    # A save after the connect (the key), one after the join (the
    # node); the step that learnt nothing saved nothing.
    assert len(instance.saved) == 2
    first, second = instance.saved
    assert first['host_keys'] == {worker.host.server_id: 'ssh-ed25519 AAAA'}
    assert first['nodes'] == {}
    assert second['nodes'][worker.host.server_id]['name'] == worker.name


def test_what_a_failed_step_learnt_is_saved_before_the_failure_is_raised(
        plan, state_key):
    instance, state, keys = _Instance(), DriverState(), HostKeyStore()
    master = plan.masters[0]

    def connect_then_fail(_):
        keys.known[master.host.server_id] = 'ssh-ed25519 BBBB'
        raise RuntimeError('kubeadm init failed')

    graph = Graph('instantiate')
    graph.add('init', master.label, connect_then_fail)
    with pytest.raises(RuntimeError):
        engine.run(graph, Progress('instantiate', 'inst-1'), parallel=1,
                   on_settled=Checkpoint(store(instance), state, keys, plan))
    assert instance.saved[-1]['host_keys'] == {
        master.host.server_id: 'ssh-ed25519 BBBB'}
    assert instance.saved[-1]['nodes'] == {}     # init did not finish

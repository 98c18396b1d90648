"""The graphs ``kubernetes-mgmt plan`` prints can be built without a
site and never act on one: a step of them that were run anyway is
refused before it reaches Tacker (a VIM deleted, state forgotten)."""
from __future__ import annotations

import pytest

from kubernetes_mgmt.cluster.cluster_plan import build_plan
from kubernetes_mgmt.operations import plans
from kubernetes_mgmt.steps.runtime import PlanOnlyError


@pytest.fixture
def plan(cluster_params, topology_of, package):
    return build_plan('inst-1', cluster_params, topology_of(), package)


@pytest.mark.parametrize('operation, graphs', [
    ('terminate', 2),       # terminate_start and terminate_end
    ('heal-whole', 1),      # heal_start: the old cluster's VIM and VMs
])
def test_the_steps_that_ask_tacker_refuse_in_a_printed_plan(
        plan, operation, graphs):
    steps = [step for graph in plans.graphs(operation, plan)[:graphs]
             for step in graph.steps]
    names = {step.name for step in steps}
    assert {'delete VIM', 'check no CNF uses the VIM'} <= names
    for step in steps:
        with pytest.raises(PlanOnlyError, match='Tacker is not asked'):
            step.action(None)


@pytest.mark.parametrize('replaced', [False, True])
def test_a_heal_with_new_registries_refreshes_every_other_node(
        plan, replaced):
    # Same addresses: /etc/hosts needs no change, but registries a heal
    # request replaced must reach the nodes outside it.
    healed = plan.workers[0]
    op = plans._context('heal', plan)
    graph = plans.heal.heal_end_graph(
        op, plans.plan_only(plan, 'heal'), [healed], (), {},
        refresh_others=replaced)
    refreshed = {step.host for step in graph.steps
                 if step.name == 'update /etc/hosts'}
    others = {n.label for n in plan.nodes if n is not healed}
    assert refreshed == (others if replaced else set())

"""The upgrade's graph and the facts it decides with: the order a user
sees in ``kubernetes-mgmt plan upgrade``, the refusals before any host
is touched, and what a drain that timed out names."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kubernetes_mgmt.cluster import roles
from kubernetes_mgmt.cluster.cluster_plan import build_plan
from kubernetes_mgmt.cluster.disruption import budgets_holding
from kubernetes_mgmt.cluster.node_versions import NodeVersion, parse_nodes
from kubernetes_mgmt.engine.graph import Given, render
from kubernetes_mgmt.errors import MgmtDriverError, ValidationError
from kubernetes_mgmt.operations import plans, upgrade
from kubernetes_mgmt.params.package_version import package_software_version
from kubernetes_mgmt.params.upgrade_request import UpgradeOptions
from kubernetes_mgmt.params.versions import Minor
from kubernetes_mgmt.state.instance_state import DriverState
from kubernetes_mgmt.steps.runtime import PlanOnlyError
from kubernetes_mgmt.steps.upgrade_actions import Upgrade
from kubernetes_mgmt.topology.hosts import Host, Role, Topology

REPO = Path(__file__).resolve().parents[2]


def _topology(workers: int) -> Topology:
    masters = tuple(Host(Role.MASTER, f'm{i}', 'masterNode',
                         f'10.0.0.{10 + i}', f'10.0.0.{10 + i}',
                         member_name=f'm{i}') for i in range(3))
    nodes = tuple(Host(Role.WORKER, f'w{i}', 'workerNode',
                       f'10.0.0.{20 + i}', f'10.0.0.{20 + i}',
                       member_name=f'w{i}') for i in range(workers))
    return Topology('stack-1', masters, nodes, cluster_ip='10.0.0.100')


@pytest.fixture
def plan(cluster_params, package):
    return build_plan('inst-1', cluster_params, _topology(5), package)


def _graph(plan, max_unavailable):
    op = plans._context(upgrade.OPERATION, plan)
    work = Upgrade(plans.plan_only(plan, op.operation),
                   Minor.parse(plan.kubernetes_version).next(),
                   UpgradeOptions(max_unavailable=max_unavailable))
    return upgrade.upgrade_graph(op, work)


def _needs(graph, name):
    return set(graph.by_id()[name].needs)


def test_masters_one_at_a_time_then_workers_in_batches(plan):
    graph = _graph(plan, max_unavailable=2)
    label = {f'm{i}': m.label for i, m in enumerate(plan.masters)}
    label.update({f'w{i}': w.label for i, w in enumerate(plan.workers)})
    survey = 'check nodes and versions cluster'
    first = f'upgrade {label["m0"]}'
    assert survey in _needs(graph, first)
    # etcd is saved before the first control-plane change.
    assert 'etcd snapshot cluster' in _needs(graph, first)
    assert survey in _needs(graph, 'etcd snapshot cluster')
    assert f'upgrade {label["m0"]}' in _needs(graph, f'upgrade {label["m1"]}')
    assert f'upgrade {label["m1"]}' in _needs(graph, f'upgrade {label["m2"]}')
    # Workers w0, w1 together after the last master; w2, w3 after both
    # of them; w4 alone last: never more than 2 drained at once.
    for worker in ('w0', 'w1'):
        assert _needs(graph, f'upgrade {label[worker]}') >= {
            f'upgrade {label["m2"]}'}
    for worker in ('w2', 'w3'):
        assert _needs(graph, f'upgrade {label[worker]}') >= {
            f'upgrade {label["w0"]}', f'upgrade {label["w1"]}'}
        assert f'upgrade {label["w2"]}' not in _needs(
            graph, f'upgrade {label["w3"]}')
    assert _needs(graph, f'upgrade {label["w4"]}') >= {
        f'upgrade {label["w2"]}', f'upgrade {label["w3"]}'}
    assert {f'upgrade {n.label}' for n in plan.nodes} <= _needs(
        graph, 'record version cluster')


def test_the_printed_plan_names_the_target_and_acts_on_nothing(plan):
    [graph] = plans.graphs('upgrade', plan)
    text = render(graph)
    target = Minor.parse(plan.kubernetes_version).next()
    assert f'skipped when the node runs {target}' in text
    survey = graph.by_id()['check nodes and versions cluster']
    chosen = graph.by_id()['choose master cluster']
    with pytest.raises(PlanOnlyError):
        survey.action(Given({chosen.id: plan.masters[0]}))


def _state(version):
    state = DriverState()
    state.record = plan_record(version)
    return state


def plan_record(version):
    from kubernetes_mgmt.state.cluster_record import ClusterRecord
    return ClusterRecord.from_dict({
        'kubernetes_version': version, 'control_plane_endpoint': 'x:6443',
        'auth_url': 'https://x:6443', 'cni': 'calico',
        'cni_manifest': 'u', 'pod_cidr': '192.168.0.0/16',
        'service_cidr': '10.96.0.0/12'})


@pytest.mark.parametrize('target, words', [
    ('1.38', ['1.36 to 1.38 skips 1 minor version(s)', 'to 1.37 first']),
    ('1.35', ['1.35 is older than the cluster\'s 1.36',
              'never downgraded']),
    ('latest', ['\'latest\' is not a Kubernetes version']),
])
def test_a_skip_or_downgrade_is_refused_naming_both_versions(target, words):
    with pytest.raises(ValidationError) as caught:
        upgrade.target_minor(_state('1.36'), 'inst-1', target)
    message = str(caught.value)
    assert 'software_version of the new VNF package' in message
    for word in words:
        assert word in message


def test_the_next_minor_and_the_same_one_are_accepted():
    assert upgrade.target_minor(_state('1.36'), 'i', '1.37') == Minor(1, 37)
    assert upgrade.target_minor(_state('1.37'), 'i', '1.37') == Minor(1, 37)


def test_a_cluster_without_record_is_refused():
    with pytest.raises(MgmtDriverError, match='no cluster record'):
        upgrade.target_minor(DriverState(), 'inst-1', '1.37')


def test_node_versions_from_the_api():
    body = {'items': [
        {'metadata': {'name': 'w0'}, 'spec': {'unschedulable': True},
         'status': {'nodeInfo': {'kubeletVersion': 'v1.37.1'},
                    'conditions': [{'type': 'Ready', 'status': 'True'}]}},
        {'metadata': {'name': 'w1'}, 'spec': {},
         'status': {'nodeInfo': {'kubeletVersion': 'v1.36.4'},
                    'conditions': [{'type': 'Ready', 'status': 'True'}]}}]}
    found = parse_nodes(json.dumps(body))
    new = Minor(1, 37)
    # Cordoned on the new version: not done (uncordon is part of it).
    assert found['w0'].on(new) and not found['w0'].upgraded(new)
    assert not found['w1'].on(new)
    master = NodeVersion('m0', 'v1.37.1', True, False, 'v1.36.4')
    assert not master.on(new)     # its API server is still old
    assert master.version == 'v1.36.4'


def _pod(name, labels, namespace='default', daemonset=False):
    meta = {'name': name, 'namespace': namespace, 'labels': labels}
    if daemonset:
        meta['ownerReferences'] = [{'kind': 'DaemonSet'}]
    return {'metadata': meta}


def _pdb(name, selector, namespace='default', allowed=0):
    return {'metadata': {'name': name, 'namespace': namespace},
            'spec': {'selector': selector},
            'status': {'disruptionsAllowed': allowed}}


def test_the_budgets_that_hold_a_node_are_named_with_their_pods():
    pods = [_pod('web-1', {'app': 'web', 'tier': 'a'}),
            _pod('db-1', {'app': 'db'}),
            _pod('web-2', {'app': 'web'}, namespace='other')]
    budgets = [_pdb('web', {'matchLabels': {'app': 'web'}}),
               _pdb('tier', {'matchExpressions': [
                   {'key': 'tier', 'operator': 'In', 'values': ['a']}]}),
               _pdb('none', {'matchLabels': {'app': 'cache'}}),
               _pdb('all', {})]
    found = budgets_holding(pods, budgets)
    assert [str(b) for b in found] == [
        'PodDisruptionBudget default/web (pods web-1, 0 disruption(s) '
        'allowed)',
        'PodDisruptionBudget default/tier (pods web-1, 0 disruption(s) '
        'allowed)']


def test_the_repository_url_follows_the_minor(plan, options):
    options(apt_repository_url='http://mirror/k8s/v{minor}/deb/',
            apt_key_url='http://mirror/k8s/v{minor}/deb/Release.key')
    node = plan.workers[0]
    config = roles.upgrade(plan, node, '1.38', 'node')
    assert config['K8S_APT_REPO'] == 'http://mirror/k8s/v1.38/deb/'
    assert config['K8S_APT_KEY_URL'] == \
        'http://mirror/k8s/v1.38/deb/Release.key'
    assert roles.prepare(plan, node)['K8S_APT_REPO'] == \
        f'http://mirror/k8s/v{plan.kubernetes_version}/deb/'


def _v2_package(tmp_path):
    root = tmp_path / 'pkg'
    shutil.copytree(REPO / 'samples/vnf_package_v2', root)
    return root


def test_the_package_names_its_kubernetes_minor(tmp_path):
    assert package_software_version(_v2_package(tmp_path)) == '1.37'


def test_a_package_naming_two_versions_is_refused(tmp_path):
    root = _v2_package(tmp_path)
    flavour = root / 'Definitions/kubernetes_mgmt_v2_df_simple.yaml'
    flavour.write_text(flavour.read_text().replace(
        '        flavour_description: One master and scalable workers\n',
        '        flavour_description: One master and scalable workers\n'
        "        software_version: '1.38'\n"))
    with pytest.raises(MgmtDriverError,
                       match=r'several software versions \(1\.37, 1\.38\)'):
        package_software_version(root)

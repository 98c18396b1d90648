"""Control-plane certificates: kubeadm's expiry report read as kubeadm
prints it, the renewal decision, renewal one master at a time with the
control-plane pods restarted, the earliest expiry in the instance's
metadata, and every operation's graph carrying the steps. The same
against the lab's emulated kubeadm: tests/lab/test_resume_lab.py."""
from __future__ import annotations

import itertools
import json
import threading
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest

from kubernetes_mgmt.cluster import certificates as certs
from kubernetes_mgmt.cluster import static_pods
from kubernetes_mgmt.cluster.cluster_plan import build_plan
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.engine import runner
from kubernetes_mgmt.engine.graph import Graph
from kubernetes_mgmt.engine.progress import Progress
from kubernetes_mgmt.errors import MgmtDriverError, RemoteError
from kubernetes_mgmt.operations import plans
from kubernetes_mgmt.remote.ssh import Result
from kubernetes_mgmt.state import instance_state
from kubernetes_mgmt.state.instance_state import EXPIRY_KEY, DriverState
from kubernetes_mgmt.steps import certificates as steps
from kubernetes_mgmt.steps.cluster_setup import ClusterSetup
from kubernetes_mgmt.steps.declare import Master

DAY = 86400
NOW = datetime(2027, 11, 7, 9, 3, tzinfo=timezone.utc)

# kubeadm 1.3x, "kubeadm certs check-expiration -o json" on a master that
# joined (no super-admin.conf there), one certificate managed outside
# kubeadm (output.kubeadm.k8s.io/v1alpha3 CertificateExpirationInfo).
KUBEADM_JSON = '''{
    "kind": "CertificateExpirationInfo",
    "apiVersion": "output.kubeadm.k8s.io/v1alpha3",
    "certificates": [
        {"name": "admin.conf", "expirationDate": "2028-10-26T09:03:14Z",
         "residualTime": 30672000, "externallyManaged": false,
         "caName": "ca", "missing": false},
        {"name": "apiserver", "expirationDate": "2027-11-27T09:03:14Z",
         "residualTime": 1728000, "externallyManaged": false,
         "caName": "ca", "missing": false},
        {"name": "apiserver-etcd-client",
         "expirationDate": "2028-10-26T09:03:14Z", "residualTime": 30672000,
         "externallyManaged": false, "caName": "etcd-ca", "missing": false},
        {"name": "front-proxy-client",
         "expirationDate": "2027-11-10T00:00:00Z", "residualTime": 226620,
         "externallyManaged": true, "caName": "front-proxy-ca",
         "missing": false},
        {"name": "super-admin.conf", "expirationDate": null,
         "residualTime": 0, "externallyManaged": false, "caName": "ca",
         "missing": true}
    ],
    "certificateAuthorities": [
        {"name": "ca", "expirationDate": "2036-11-05T09:03:14Z",
         "residualTime": 283910400, "externallyManaged": false,
         "missing": false},
        {"name": "etcd-ca", "expirationDate": "2036-11-05T09:03:14Z",
         "residualTime": 283910400, "externallyManaged": false,
         "missing": false}
    ]
}
'''


# -- kubeadm's report -----------------------------------------------------

def test_kubeadms_json_is_read_into_typed_certificates():
    report = certs.parse_expiration(KUBEADM_JSON, 'master-0')
    by_name = {c.name: c for c in report.certificates}
    apiserver = by_name['apiserver']
    assert apiserver.expires == datetime(2027, 11, 27, 9, 3, 14,
                                         tzinfo=timezone.utc)
    assert apiserver.residual_seconds == 20 * DAY
    assert apiserver.authority == 'ca' and not apiserver.externally_managed
    assert by_name['super-admin.conf'].missing
    assert by_name['super-admin.conf'].expires is None
    assert by_name['front-proxy-client'].externally_managed
    assert [a.name for a in report.authorities] == ['ca', 'etcd-ca']
    assert report.authorities[0].authority == ''


def test_the_earliest_is_among_what_kubeadm_renews():
    report = certs.parse_expiration(KUBEADM_JSON)
    # front-proxy-client expires sooner, but kubeadm does not renew a
    # certificate managed outside it; a missing one has no expiry.
    assert report.earliest().name == 'apiserver'
    assert [c.name for c in report.due(30)] == ['apiserver']
    found = [certs.MasterCertificates('master-0', report)]
    assert certs.iso_utc(certs.earliest_expiry(found)) == \
        '2027-11-27T09:03:14Z'


@pytest.mark.parametrize('text, says', [
    ('', 'not a JSON object'),
    ('[check-expiration] Reading configuration', 'not a JSON object'),
    ('{"certificates": [', 'not JSON'),
    ('{"kind": "UpgradePlan", "apiVersion": "output.kubeadm.k8s.io/'
     'v1alpha3"}', 'not a CertificateExpirationInfo'),
    ('{"certificates": [{"name": "apiserver", "residualTime": 5, '
     '"expirationDate": "next year"}]}', 'apiserver.*not an RFC 3339'),
    ('{"certificates": [{"name": "apiserver", "residualTime": "5d", '
     '"expirationDate": "2027-11-27T09:03:14Z"}]}',
     'residualTime .* not a number'),
    ('{"certificates": [{"residualTime": 5}]}', r'certificates\[0\] has '
     'no name'),
])
def test_an_unreadable_report_names_host_and_step(text, says):
    with pytest.raises(RemoteError, match=says) as caught:
        certs.parse_expiration(text, 'master-1')
    assert str(caught.value).startswith(
        '[master-1] kubeadm certs check-expiration:')


# -- the decision -------------------------------------------------------

def _report(*residual_days: float, expired_ca: bool = False) -> str:
    def entry(name, days, ca='ca'):
        return {'name': name, 'residualTime': int(days * DAY),
                'expirationDate': certs.iso_utc(NOW + timedelta(days=days)),
                'externallyManaged': False, 'missing': False,
                **({'caName': ca} if ca else {})}
    return json.dumps({
        'kind': certs.KIND, 'apiVersion': 'output.kubeadm.k8s.io/v1alpha3',
        'certificates': [entry(f'cert-{i}', d)
                         for i, d in enumerate(residual_days)],
        'certificateAuthorities': [entry('ca', 5 if expired_ca else 3650,
                                         ca='')]})


def _found(*residual_days: float, **kw) -> certs.MasterCertificates:
    return certs.MasterCertificates('m0', certs.parse_expiration(
        _report(*residual_days, **kw)))


def test_exactly_cert_renew_days_left_is_not_yet_due(options):
    options(cert_renew_days=30)
    assert not steps.decide([_found(30, 200)]).needed
    just_under = certs.MasterCertificates('m1', certs.parse_expiration(
        _report(200).replace(str(200 * DAY), str(30 * DAY - 1))))
    decision = steps.decide([_found(30, 200), just_under])
    assert decision.needed
    assert [(d.node, d.certificate.name) for d in decision.due] == \
        [('m1', 'cert-0')]


def test_the_option_sets_the_threshold(options):
    options(cert_renew_days=10)
    assert not steps.decide([_found(20)]).needed
    options(cert_renew_days=21)
    assert steps.decide([_found(20)]).needed


def test_a_ca_near_its_end_is_not_a_reason_to_renew_leaves(options):
    options(cert_renew_days=30)
    assert not steps.decide([_found(300, expired_ca=True)]).needed


def test_renewal_asked_for_happens_whatever_is_left():
    assert steps.decide([_found(300)], requested=True).needed
    assert not steps.decide([_found(300)]).needed
    assert not steps.decide([None]).needed      # an unreachable master


def test_the_default_threshold_is_30_days():
    assert CONF.kubernetes_mgmt.cert_renew_days == 30


# -- a master, as kubeadm, crictl and the kubelet behave ------------------

class FakeMaster:
    """One master's commands: check-expiration reports ``days`` left;
    renew all gives a year; the kubelet runs a container per manifest in
    the manifest directory (a new id each time one comes back). Events of
    every master go to the shared ``events`` list."""

    def __init__(self, name: str, days: float, events: list,
                 stops: bool = True):
        self.endpoint = SimpleNamespace(name=name)
        self.name, self.days, self.events = name, days, events
        self.stops = stops      # False: the kubelet never stops a pod
        self.manifests = set(static_pods.COMPONENTS)
        self.held: set[str] = set()
        self.generation = dict.fromkeys(static_pods.COMPONENTS, 0)
        self.lock = threading.Lock()

    def _containers(self) -> dict:
        running = self.manifests if self.stops else \
            self.manifests | self.held
        return {'containers': [
            {'id': f'{self.name}-{c}-{self.generation[c]}',
             'metadata': {'name': c, 'attempt': 0},
             'state': 'CONTAINER_RUNNING'} for c in sorted(running)]}

    def run(self, argv, *, step, sudo=False, timeout=None, input=None,
            check=True):
        argv = list(argv)
        with self.lock:
            if argv[:3] == ['kubeadm', 'certs', 'check-expiration']:
                return Result(0, _report(self.days), '')
            if argv[:4] == ['kubeadm', 'certs', 'renew', 'all']:
                self.events.append((self.name, 'renew'))
                self.days = 365
                return Result(0, '', '')
            if argv[:1] == ['crictl'] and 'ps' in argv:
                return Result(0, json.dumps(self._containers()), '')
            if argv[:1] == ['kubectl'] and '/readyz' in argv:
                self.events.append((self.name, 'serving'))
                return Result(0, 'ok', '')
            if argv[:2] == ['bash', '-c']:
                return self._script(argv[2], argv[4:])
        raise AssertionError(f'unexpected command {argv}')

    def run_script(self, script, args=(), **kw):
        return self.run(['bash', '-c', script, 'bash', *args], **kw)

    def _script(self, script: str, args: list) -> Result:
        components = args[2:]
        if script == static_pods._HOLD:
            for c in components:
                if c in self.manifests:
                    self.manifests.discard(c)
                    self.held.add(c)
            self.events.append((self.name, 'held'))
            return Result(0, '\n'.join(sorted(self.held)), '')
        if script == static_pods._RELEASE:
            back = sorted(self.held)
            for c in back:
                self.manifests.add(c)
                self.generation[c] += 1
            self.held.clear()
            return Result(0, '\n'.join(back), '')
        raise AssertionError('unexpected script')


class FakeRuntime:
    def __init__(self, masters: dict):
        self.masters = masters

    def bystander_session(self, node):
        return self.masters[node.name]

    session = bystander_session


@pytest.fixture
def plan(cluster_params, topology_of, package):
    return build_plan('inst-1', cluster_params, topology_of(), package)


def _masters(plan, days: dict, events: list, stops=True) -> dict:
    return {m.name: FakeMaster(m.name, days[m.name], events, stops)
            for m in plan.masters}


def _run_certificates(plan, days: dict, *, requested=False, masters=None,
                      events=None):
    events = [] if events is None else events
    masters = masters or _masters(plan, days, events)
    setup = ClusterSetup(plan, FakeRuntime(masters), 'test-op inst-1')
    state = DriverState()
    graph = Graph('test-op')
    chosen = steps.certificates(graph, setup, plan.masters,
                                Master(node=plan.masters[0]), state=state,
                                requested=requested)
    results = runner.run(graph, Progress('test-op', 'inst-1'), parallel=4)
    return results, events, state, masters, chosen


def test_nothing_due_nothing_renewed_and_the_expiry_recorded(plan, options):
    options(cert_renew_days=30)
    names = [m.name for m in plan.masters]
    results, events, state, _, _ = _run_certificates(
        plan, dict(zip(names, (200, 31, 90), strict=True)))
    assert events == []
    renewed = {i: r for i, r in results.items()
               if i.startswith(steps.RENEW)}
    # Every renew step was skipped by its check: no result.
    assert len(renewed) == 3 and set(renewed.values()) == {None}
    assert state.certificates_expire_at == certs.iso_utc(
        NOW + timedelta(days=31))


def test_one_master_due_renews_every_master_one_at_a_time(plan, options):
    options(cert_renew_days=30, control_plane_restart_timeout=30)
    names = [m.name for m in plan.masters]
    results, events, state, masters, chosen = _run_certificates(
        plan, dict(zip(names, (200, 20, 90), strict=True)))
    # Each master renews, holds its manifests, and serves again before
    # the next one starts.
    assert events == [(n, e) for n in names
                      for e in ('renew', 'held', 'serving')]
    for master in masters.values():
        assert master.manifests == set(static_pods.COMPONENTS)
        assert all(g == 1 for g in master.generation.values())
    assert state.certificates_expire_at == certs.iso_utc(
        NOW + timedelta(days=365))
    record = results[f'{steps.RECORD} cluster']
    assert record is plan.masters[0]            # the master handed on
    assert chosen.needs[0].name == steps.RECORD


def test_renewal_on_demand_renews_certificates_far_from_expiry(plan,
                                                               options):
    options(control_plane_restart_timeout=30)
    names = [m.name for m in plan.masters]
    _, events, _, _, _ = _run_certificates(
        plan, dict(zip(names, (200, 200, 200), strict=True)), requested=True)
    assert [n for n, e in events if e == 'renew'] == names


def test_a_restart_that_fails_stops_the_renewal_with_manifests_back(
        plan, options):
    options(cert_renew_days=30, control_plane_restart_timeout=1)
    names = [m.name for m in plan.masters]
    days = dict(zip(names, (20, 20, 20), strict=True))
    events: list = []
    masters = _masters(plan, days, events, stops=False)
    with pytest.raises(MgmtDriverError,
                       match=f'\\[{names[0]}\\] restart of the '
                             'control-plane pods: the control-plane '
                             'containers stopped not reached within 1 s'):
        _run_certificates(plan, days, masters=masters, events=events)
    first = masters[names[0]]
    assert first.manifests == set(static_pods.COMPONENTS) and not first.held
    # The other masters were not touched: one master at a time.
    assert [n for n, _ in events] == [names[0], names[0]]


def test_restart_never_leaves_manifests_aside():
    events: list = []
    master = FakeMaster('m0', 20, events, stops=False)
    with pytest.raises(MgmtDriverError, match='not reached within'):
        static_pods.restart(master, '10.0.0.10', deadline=0.5)
    assert master.manifests == set(static_pods.COMPONENTS)
    assert not master.held


def test_crictl_json_is_read_for_the_control_plane_only():
    text = json.dumps({'containers': [
        {'id': 'aaa', 'metadata': {'name': 'kube-apiserver', 'attempt': 1},
         'state': 'CONTAINER_RUNNING'},
        {'id': 'bbb', 'metadata': {'name': 'calico-node', 'attempt': 0},
         'state': 'CONTAINER_RUNNING'}]})
    assert static_pods.parse_containers(text) == {'aaa': 'kube-apiserver'}
    assert static_pods.parse_containers('') == {}
    with pytest.raises(MgmtDriverError, match=r'\[m0\] crictl ps'):
        static_pods.parse_containers('not json', 'm0')


# -- the instance's metadata ---------------------------------------------

class Instance:
    id = 'inst-1'

    def __init__(self):
        self.vnf_metadata: dict = {}

    def save(self):
        pass


def test_the_expiry_is_shown_beside_the_signed_state(state_key):
    instance = Instance()
    state = DriverState(first_master='s1',
                        certificates_expire_at='2028-11-06T09:03:14Z')
    instance_state.save(instance, state)
    assert instance.vnf_metadata[EXPIRY_KEY] == '2028-11-06T09:03:14Z'
    # Edited through Tacker's API, the copy changes nothing the driver
    # trusts, and the next save shows the signed value again.
    instance.vnf_metadata[EXPIRY_KEY] = '2099-01-01T00:00:00Z'
    loaded = instance_state.load(instance)
    assert loaded.certificates_expire_at == '2028-11-06T09:03:14Z'
    instance_state.save(instance, loaded)
    assert instance.vnf_metadata[EXPIRY_KEY] == '2028-11-06T09:03:14Z'
    instance_state.forget(instance)
    assert EXPIRY_KEY not in instance.vnf_metadata


# -- every operation's graphs ----------------------------------------------

CLUSTER_OPERATIONS = {
    # operation: index of the graph that reaches the cluster
    'instantiate': [0], 'scale-out': [0], 'scale-in': [0],
    'heal': [0, 1], 'heal-whole': [1],
}
# Steps that use the API server through the chosen master: they wait for
# the certificates (a renewal restarts API servers). An install's joins
# come before: its certificates are read once every node is Ready.
AFTER = {'refresh-join', 'remove node', 'admin account', 'label nodes',
         'note healed VNFCs', 'register persistent volumes'}
INSTALL_AFTER = {'admin account', 'label nodes',
                 'register persistent volumes'}


def _depends_on(graph: Graph, step_id: str, target: str) -> bool:
    by_id = graph.by_id()
    todo, seen = [step_id], set()
    while todo:
        current = todo.pop()
        if current == target:
            return True
        if current not in seen:
            seen.add(current)
            todo.extend(by_id[current].needs)
    return False


@pytest.mark.parametrize('operation', sorted(CLUSTER_OPERATIONS))
def test_every_operation_that_reaches_the_cluster_has_the_steps(
        plan, operation):
    graphs = plans.graphs(operation, plan)
    for index in CLUSTER_OPERATIONS[operation]:
        graph = graphs[index]
        names = [s.name for s in graph.steps]
        healed = set()
        if operation == 'heal':
            healed = {plan.masters[-1].label}   # the default targets
        masters = [m.label for m in plan.masters if m.label not in healed]
        reads = [s.host for s in graph.steps if s.name == steps.READ]
        renews = [s for s in graph.steps if s.name == steps.RENEW]
        assert reads == masters, (operation, index)
        assert [s.host for s in renews] == masters
        # Renewal runs only when the decision says so, one at a time.
        assert all(s.check is not None and s.serial for s in renews)
        for before, after in itertools.pairwise(renews):
            assert before.id in after.needs
        assert names.count(steps.RECORD) == 1
        record = f'{steps.RECORD} cluster'
        after = INSTALL_AFTER if operation in ('instantiate',
                                               'heal-whole') else AFTER
        using_api = [s for s in graph.steps if s.name in after]
        assert using_api, (operation, index)
        for step in using_api:
            assert _depends_on(graph, step.id, record), step.id


def test_the_graphs_that_do_not_reach_the_cluster_have_none(plan):
    for graph in [*plans.graphs('terminate', plan),
                  plans.graphs('heal-whole', plan)[0]]:
        assert steps.READ not in {s.name for s in graph.steps}

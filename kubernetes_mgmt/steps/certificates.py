"""The certificate steps of every operation that reaches the cluster.

Each master's certificate expiry is read (in parallel); when any
certificate kubeadm manages has fewer than ``cert_renew_days`` left on
any master (or renewal is asked for), every master renews, one at a
time, so that the others keep the VIP and etcd's quorum serving; the
earliest expiry then goes into the driver's state, which shows it in the
instance's metadata. The last step's result is the master the
operation's later steps run kubectl on: they wait for the certificates
(a renewal restarts API servers), and see the renewed admin.conf.

A master that does not answer SSH within the bystander deadline is
skipped with a warning (as when a master is chosen to run kubectl): its
certificates are renewed when it is healed, or by the next operation.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster import certificates as certs
from kubernetes_mgmt.cluster import static_pods
from kubernetes_mgmt.cluster.certificates import Due, MasterCertificates
from kubernetes_mgmt.cluster.cluster_plan import Node
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.engine.graph import CLUSTER, Given, Graph, Step
from kubernetes_mgmt.errors import ConnectError
from kubernetes_mgmt.state.instance_state import DriverState
from kubernetes_mgmt.steps.cluster_setup import ClusterSetup
from kubernetes_mgmt.steps.declare import ETCD, Master

LOG = redact.get_logger(__name__)
READ = 'read certificates'
DECIDE = 'decide certificate renewal'
RENEW = 'renew certificates'
RECORD = 'record certificate expiry'


@dataclass(frozen=True)
class Renewal:
    """The decision: what is due (empty when nothing), or asked for."""

    due: tuple[Due, ...] = ()
    requested: bool = False

    @property
    def needed(self) -> bool:
        return self.requested or bool(self.due)


def certificates(graph: Graph, setup: ClusterSetup, masters: Sequence[Node],
                 master: Master, needs: Sequence[Step | None] = (), *,
                 state: DriverState | None = None,
                 requested: bool = False) -> Master:
    """Declare the steps on ``masters`` after ``needs``; return the
    master (``master``, once they are done) for the steps after them.
    ``state``: where the earliest expiry is recorded. ``requested``:
    renew whatever is left (renewal on demand)."""
    reads = {m.name: graph.add(READ, m.label,
                               lambda _, m=m: read(setup, m), needs=needs)
             for m in masters}
    decision = graph.add(
        DECIDE, CLUSTER,
        lambda g: decide([g.of(s) for s in reads.values()], requested),
        needs=list(reads.values()))
    renewed: dict[str, Step] = {}
    previous: Step | None = None
    for node in masters:
        previous = renewed[node.name] = graph.add(
            RENEW, node.label,
            lambda g, n=node: renew(setup, n, g.of(reads[n.name])),
            check=lambda g: _needed(g.of(decision)),
            needs=[decision, reads[node.name], previous], serial=ETCD,
            why='no certificate kubeadm manages on any master has fewer '
                'than [kubernetes_mgmt] cert_renew_days left')
    done = graph.add(
        RECORD, CLUSTER,
        lambda g: _record(g, master, reads, renewed, state),
        needs=[*reads.values(), *renewed.values(), *master.needs])
    return Master(chosen_by=done)


def read(setup: ClusterSetup, node: Node) -> MasterCertificates | None:
    """The master's certificates (None: it cannot be reached). Manifests
    a restart of an earlier operation left aside are put back first."""
    try:
        session = setup.runtime.bystander_session(node)
    except ConnectError as error:
        LOG.warning('%s: certificates of master %s (%s) not read, it is '
                    'unreachable: %s', setup.operation, node.name, node.ip,
                    error)
        return None
    back = static_pods.release(session)
    if back:
        LOG.warning('[%s] control-plane manifests %s were set aside by an '
                    'interrupted restart: put back', node.name,
                    ', '.join(back))
    return MasterCertificates(node.name,
                              certs.read_expiration(session))


def decide(found: Sequence[MasterCertificates | None],
           requested: bool = False,
           renew_days: int | None = None) -> Renewal:
    days = renew_days or CONF.kubernetes_mgmt.cert_renew_days
    present = [m for m in found if m is not None]
    due = certs.due(present, days)
    for ca in certs.authorities_due(present, days):
        LOG.warning('CA %s of master %s is not renewed by kubeadm certs '
                    'renew all: it needs a CA rotation (kubeadm\'s manual '
                    'certificate renewal guide)', ca.certificate.name,
                    ca.node)
    if due:
        LOG.info('certificates due for renewal (fewer than %d days left): '
                 '%s; renewing on every master', days,
                 '; '.join(str(d) for d in due))
    elif requested:
        LOG.info('certificate renewal requested: renewing on every master')
    return Renewal(tuple(due), requested)


def _needed(renewal: Renewal) -> Renewal | None:
    return renewal if renewal.needed else None


def renew(setup: ClusterSetup, node: Node,
          read_before: MasterCertificates | None
          ) -> MasterCertificates | None:
    if read_before is None:
        LOG.warning('%s: certificates of master %s not renewed: it was '
                    'unreachable', setup.operation, node.name)
        return None
    expiration = certs.renew(
        setup.runtime.bystander_session(node), node.name, node.ip,
        deadline=CONF.kubernetes_mgmt.control_plane_restart_timeout)
    return MasterCertificates(node.name, expiration)


def _record(given: Given, master: Master, reads: dict[str, Step],
            renewed: dict[str, Step], state: DriverState | None) -> Node:
    latest = [given.of(renewed[name]) or given.of(step)
              for name, step in reads.items()]
    earliest = certs.earliest_expiry([m for m in latest if m])
    if earliest is not None and state is not None:
        state.certificates_expire_at = certs.iso_utc(earliest)
        LOG.info('the first control-plane certificate expires %s',
                 state.certificates_expire_at)
    return master.of(given)

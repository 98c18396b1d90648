"""Read (and a few test-only write) helpers over the shared state, for
tests and the lab manager."""
from __future__ import annotations

import os
import shutil

from kubernetes_mgmt_lab.emulated import (
    cluster,
    faults,
    packages,
    recorder,
    store,
)


class ClusterView:
    """A read-only look at the emulated cluster: every call re-reads the
    state file, so it always shows the latest commands' effects."""

    def __init__(self, cluster_dir: str):
        self.cluster_dir = cluster_dir

    def state(self) -> dict:
        return store.read(self.cluster_dir)

    def info(self) -> dict:
        return self.state()['cluster']

    def initialized(self) -> bool:
        return bool(self.info().get('initialized'))

    def objects(self, kind: str, namespace: str | None = None
                ) -> list[dict]:
        return [o for o in cluster.objects_of(self.state(), kind)
                if namespace is None or
                o['metadata'].get('namespace') == namespace]

    def nodes(self) -> list[dict]:
        return self.objects('Node')

    def node_names(self) -> list[str]:
        return [n['metadata']['name'] for n in self.nodes()]

    def node_hosts(self) -> dict[str, str]:
        """Node name -> the lab host whose kubelet registered it, for the
        nodes the cluster has."""
        state = self.state()
        hosts = state.get('node_hosts', {})
        return {name: hosts[name] for name in
                (n['metadata']['name'] for n in cluster.objects_of(state,
                                                                   'Node'))
                if name in hosts}

    def node(self, name: str) -> dict | None:
        return cluster.find(self.state(), 'Node', name)

    def node_ready(self, name: str) -> bool:
        node = self.node(name)
        return bool(node) and cluster.is_ready(node)

    def etcd_members(self) -> list[dict]:
        """The real etcd's members, as a serving one lists them."""
        from kubernetes_mgmt_lab.emulated import kubeadm_etcd
        return kubeadm_etcd.members(self.cluster_dir)

    def pods(self, namespace: str | None = None,
             node: str | None = None) -> list[dict]:
        return [p for p in self.objects('Pod', namespace)
                if node is None or p['spec'].get('nodeName') == node]

    def pvs(self) -> list[dict]:
        return self.objects('PersistentVolume')

    def pv(self, name: str) -> dict | None:
        return cluster.find(self.state(), 'PersistentVolume', name)

    def namespaces(self) -> list[str]:
        return [n['metadata']['name'] for n in self.objects('Namespace')]

    def secrets(self, namespace: str | None = None) -> list[dict]:
        return self.objects('Secret', namespace)

    def secret(self, name: str, namespace: str) -> dict | None:
        return cluster.find(self.state(), 'Secret', name, namespace)

    def service_accounts(self, namespace: str | None = None) -> list[dict]:
        return self.objects('ServiceAccount', namespace)

    def cluster_role_bindings(self) -> list[dict]:
        return self.objects('ClusterRoleBinding')

    def tokens(self) -> list[dict]:
        return list(self.info().get('tokens', []))

    def events(self, host: str | None = None,
               command: str | None = None) -> list[dict]:
        """Mutating commands in order; filter by host and by a command
        prefix such as ``'kubectl drain'``."""
        return [e for e in store.read_events(self.cluster_dir)
                if (host is None or e['host'] == host) and
                (command is None or faults.matches(command, e['argv']))]

    def argv_log(self, host: str | None = None) -> list[dict]:
        """Every emulated command started, mutating or not, in order."""
        return [e for e in store.read_argv_log(self.cluster_dir)
                if host is None or e['host'] == host]

    def join_secrets_ever(self) -> tuple[list[str], list[str]]:
        """(bootstrap tokens, certificate keys) the cluster ever accepted,
        expired ones included."""
        info = self.info()
        return (list(info.get('token_history', [])),
                list(info.get('certificate_key_history', [])))

    def changes(self, host: str | None = None) -> list[dict]:
        """The change log (``recorder.note``), oldest first."""
        return [c for c in recorder.changes(self.cluster_dir)
                if host is None or c['host'] == host]

    def host_kubelet_active(self, host: str) -> bool:
        return bool(self.state().get('hosts', {}).get(host, {}).get(
            'kubelet'))


def expire_tokens(cluster_dir: str) -> None:
    """Make every bootstrap token expire now (tests of refused joins)."""
    with store.mutate(cluster_dir) as state:
        for tok in state['cluster'].get('tokens', []):
            tok['expires'] = 1.0


def expire_certificate_key(cluster_dir: str) -> None:
    with store.mutate(cluster_dir) as state:
        key = state['cluster'].get('certificate_key')
        if key:
            key['expires'] = 1.0


def set_host_down(cluster_dir: str, host: str) -> None:
    """The lab destroyed ``host``: its kubelet stops posting status and
    its API server and etcd are gone (processes die with the host's
    namespaces)."""
    with store.mutate(cluster_dir) as state:
        rec = cluster.host_record(state, host)
        rec['kubelet'] = False
        rec.pop('apiserver', None)
        rec.pop('etcd', None)
        cluster.reconcile(state)


def set_host_off(cluster_dir: str, host: str) -> None:
    """The lab powered ``host`` off: its kubelet stops posting status and
    its etcd member stops answering. Where its API server listened stays
    recorded, for its kubelet to start it again at the next boot."""
    with store.mutate(cluster_dir) as state:
        rec = cluster.host_record(state, host)
        rec['kubelet'] = False
        rec.pop('etcd', None)
        cluster.reconcile(state)


def reset_cluster(cluster_dir: str) -> None:
    """Forget the emulated cluster (state, logs, CAs, faults; config
    stays)."""
    for name in (store.STATE_FILE, store.ARGV_LOG, store.CPU_LOG,
                 store.EVENT_LOG, recorder.CHANGES_LOG, 'faults.json',
                 'audit.jsonl'):
        try:
            os.unlink(os.path.join(cluster_dir, name))
        except FileNotFoundError:
            pass
    shutil.rmtree(os.path.join(cluster_dir, 'pki'), ignore_errors=True)


def node_histories(cluster_dir: str) -> dict[str, list[dict]]:
    """Per lab host, the changes made to it, in order (packages with
    versions, kubelet starts with versions, kubeadm upgrade start, end
    and rollback, certificate renewals, cordon and uncordon of its
    node)."""
    histories: dict[str, list[dict]] = {}
    for change in recorder.changes(cluster_dir):
        if change['host']:
            histories.setdefault(change['host'], []).append(change)
    return histories


class _NodeReplay:
    """A host's Kubernetes software as its history leaves it."""

    def __init__(self) -> None:
        self.packages: dict[str, str] = {}
        self.kubelet: str | None = None      # the running kubelet
        self.upgrading: str | None = None    # a kubeadm upgrade under way
        self.cordoned = False

    def apply(self, change: dict) -> None:
        what = change['what']
        if what == 'package' and change['package'] in \
                packages.KUBE_PACKAGES:
            if change.get('version'):
                self.packages[change['package']] = change['version']
            else:
                self.packages.pop(change['package'], None)
        elif what == 'kubelet-start':
            self.kubelet = change['version']
        elif what in ('upgrade-apply-start', 'upgrade-node-start'):
            self.upgrading = what[:-len('-start')]
        elif what in ('upgrade-apply-end', 'upgrade-node-end',
                      'upgrade-rollback'):
            self.upgrading = None
        elif what in ('cordon', 'uncordon'):
            self.cordoned = what == 'cordon'

    def problems(self) -> list[str]:
        found = []
        if self.upgrading:
            found.append(f'kubeadm {self.upgrading.replace("-", " ")} '
                         'did not finish')
        minors = {name: '.'.join(v.split('.')[:2])
                  for name, v in self.packages.items()}
        if len(set(minors.values())) > 1:
            found.append('packages of different minors: ' + ', '.join(
                f'{n} {self.packages[n]}' for n in sorted(minors)))
        installed = self.packages.get('kubelet', '').split('-')[0]
        if self.kubelet and installed and \
                self.kubelet.lstrip('v') != installed:
            found.append(f'kubelet {self.kubelet} runs but {installed} is '
                         'installed (not restarted)')
        return found


def half_upgraded(cluster_dir: str) -> list[str]:
    """Every moment a node was in service (never cordoned, or just
    uncordoned, or at the end of the log) with its Kubernetes software
    half-upgraded: packages of different minors, a kubelet not restarted
    after its upgrade, or a kubeadm upgrade that did not finish. Empty
    when no node ever was."""
    found = []
    for host, history in node_histories(cluster_dir).items():
        node = _NodeReplay()
        for change in history:
            node.apply(change)
            if change['what'] == 'uncordon':
                found += [f'{host}: uncordoned with {p}'
                          for p in node.problems()]
        if not node.cordoned:
            found += [f'{host}: at the end, in service with {p}'
                      for p in node.problems()]
    return found

"""An etcd snapshot before a change of the control plane.

``etcdctl snapshot save`` runs in the etcd static pod of a healthy
master (``kubectl exec etcd-<node>``, as for the membership changes in
``cluster.etcd``) into the pod's data mount, /var/lib/etcd, a hostPath:
the file lands on the master, which moves it to ``MASTER_DIR`` (out of
the data directory a restore replaces) and writes its SHA-256 beside it
(``<name>.sha256``, ``sha256sum -c`` format). The snapshot is then
copied to the storage server when the cluster has one, else to every
other master, and each copy is checked against the checksum. In each
place only the newest ``retention`` snapshots are kept.

Names carry the time and the operation
(``etcd-20261127T120000Z-heal.db``): the newest sort last.
"""
from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster.cluster_plan import ClusterPlan, Node
from kubernetes_mgmt.cluster.etcd import etcdctl
from kubernetes_mgmt.errors import CommandFailed, MgmtDriverError
from kubernetes_mgmt.remote.ssh import SshSession

LOG = redact.get_logger(__name__)
POD_DIR = '/var/lib/etcd'                      # the etcd pod's hostPath
MASTER_DIR = '/var/lib/etcd-snapshots'
STORAGE_DIR = '/var/lib/kubernetes-mgmt/etcd-snapshots'
_NAME = re.compile(r'^etcd-(\d{8}T\d{6}Z)-([a-z0-9-]+)\.db$')
_TIME = '%Y%m%dT%H%M%SZ'
_SHA256 = re.compile(r'^[0-9a-f]{64}$')
Sessions = Callable[[Node], SshSession]


@dataclass(frozen=True)
class Snapshot:
    """A snapshot taken: where its copies are, when, its checksum."""

    name: str
    taken_at: str               # ISO 8601, UTC
    sha256: str
    master: str                 # the node whose etcd was saved
    copies: tuple[str, ...]     # 'host:/path' of each copy

    def record(self) -> dict:
        return {**asdict(self), 'copies': list(self.copies)}


def snapshot_name(operation: str, when: datetime.datetime) -> str:
    """``etcd-<UTC time>-<operation>.db``; the operation as a slug."""
    slug = re.sub(r'[^a-z0-9]+', '-', operation.lower()).strip('-')
    if not slug:
        raise ValueError(f'operation {operation!r} gives no name')
    utc = when.astimezone(datetime.timezone.utc)
    return f'etcd-{utc.strftime(_TIME)}-{slug}.db'


def taken_at(name: str) -> datetime.datetime | None:
    """The time in a snapshot's name; None for any other file."""
    found = _NAME.match(name)
    if found is None:
        return None
    return datetime.datetime.strptime(found.group(1), _TIME).replace(
        tzinfo=datetime.timezone.utc)


def parse_sha256(output: str, path: str) -> str:
    """The checksum ``sha256sum <path>`` printed."""
    fields = output.split()
    if len(fields) < 2 or not _SHA256.match(fields[0]) or \
            fields[1].lstrip('*') != path:
        raise MgmtDriverError(f'sha256sum {path}: unexpected output '
                              f'{output.strip()[:200]!r}')
    return fields[0]


def beyond_retention(names: Sequence[str], keep: int) -> list[str]:
    """The snapshots (of ``names``; other files are left alone) that
    fall out of the newest ``keep``, oldest first."""
    if keep < 1:
        raise ValueError(f'etcd_snapshot_retention must be >= 1: {keep}')
    ours = sorted((taken_at(n), n) for n in names if taken_at(n))
    return [n for _, n in ours[:max(len(ours) - keep, 0)]]


def _is_healthy(session: SshSession, master: Node) -> bool:
    try:
        etcdctl(session, master.name, ['endpoint', 'health'],
                step=f'etcd endpoint health on {master.name}')
    except CommandFailed as exc:
        LOG.warning('etcd on %s is not healthy: %s', master.name, exc)
        return False
    return True


def healthy_master(masters: Sequence[Node], sessions: Sessions) -> Node:
    """The first master (in the order given) whose etcd is healthy."""
    for master in masters:
        if _is_healthy(sessions(master), master):
            return master
    raise MgmtDriverError('etcd snapshot: no master has a healthy etcd ('
                          + ', '.join(m.name for m in masters) + ')')


def take(plan: ClusterPlan, sessions: Sessions, operation: str,
         retention: int, masters: Sequence[Node] | None = None,
         now: Callable[[], datetime.datetime] | None = None) -> Snapshot:
    """Save a snapshot on a healthy master of ``masters`` (default: the
    plan's: those that stay), checksum it, copy it to the storage server
    or the other masters of ``masters``, apply the retention
    everywhere."""
    candidates = list(masters if masters is not None else plan.masters)
    master = healthy_master(candidates, sessions)
    clock = now or (lambda: datetime.datetime.now(datetime.timezone.utc))
    when = clock()
    name = snapshot_name(operation, when)
    session = sessions(master)
    path = _save(session, master, name)
    sha = parse_sha256(session.run(['sha256sum', path], sudo=True,
                                   step='etcd snapshot checksum').stdout,
                       path)
    _write_checksum(session, path, sha)
    copies = [f'{master.name}:{path}']
    _retain(session, MASTER_DIR, retention)
    for target, directory in _copy_targets(plan, master, candidates):
        copies.append(_copy(session, path, sessions(target), target,
                            directory, sha, retention))
    snapshot = Snapshot(name=name, taken_at=when.isoformat(), sha256=sha,
                        master=master.name, copies=tuple(copies))
    LOG.info('etcd snapshot %s (sha256 %s) taken on %s: %s', name, sha,
             master.name, ', '.join(copies))
    return snapshot


def _save(session: SshSession, master: Node, name: str) -> str:
    """``snapshot save`` in the pod, then the file moved out of the data
    directory on the master."""
    in_pod = f'{POD_DIR}/{name}'
    etcdctl(session, master.name, ['snapshot', 'save', in_pod],
            step=f'etcd snapshot save on {master.name}')
    path = f'{MASTER_DIR}/{name}'
    session.run_script(
        'set -euo pipefail; install -d -m 700 "$2"; mv -f "$1" "$3"; '
        'chmod 600 "$3"', [in_pod, MASTER_DIR, path], sudo=True,
        step='etcd snapshot keep')
    return path


def _write_checksum(session: SshSession, path: str, sha: str) -> None:
    session.upload(f'{sha}  {path.rsplit("/", 1)[1]}\n', f'{path}.sha256',
                   mode=0o600, sudo=True, step='etcd snapshot checksum')


def _copy_targets(plan: ClusterPlan, master: Node, masters: Sequence[Node]
                  ) -> list[tuple[Node, str]]:
    """The storage server, else the other masters of ``masters``: never
    a master being rebuilt (it may be dead, and its disk goes)."""
    if plan.storage is not None:
        return [(plan.storage, f'{STORAGE_DIR}/{plan.vim_name}')]
    return [(m, MASTER_DIR) for m in masters if m.name != master.name]


def _copy(source: SshSession, path: str, target_session: SshSession,
          target: Node, directory: str, sha: str, retention: int) -> str:
    """Copy through the driver (the VMs need no keys of each other),
    then check the copy's checksum on the target."""
    name = path.rsplit('/', 1)[1]
    data = source.read_file(path, sudo=True, step='etcd snapshot copy')
    copy = f'{directory}/{name}'
    target_session.upload(data, copy, mode=0o600, sudo=True,
                          step=f'etcd snapshot copy to {target.name}')
    target_session.upload(f'{sha}  {name}\n', f'{copy}.sha256', mode=0o600,
                          sudo=True, step='etcd snapshot checksum')
    _check_copy(target_session, copy, sha, target)
    _retain(target_session, directory, retention)
    return f'{target.name}:{copy}'


def _check_copy(session: SshSession, copy: str, sha: str,
                target: Node) -> None:
    got = parse_sha256(session.run(['sha256sum', copy], sudo=True,
                                   step='etcd snapshot check').stdout, copy)
    if got != sha:
        raise MgmtDriverError(f'etcd snapshot copy {copy} on {target.name}'
                              f' has sha256 {got}, expected {sha}')


def _retain(session: SshSession, directory: str, keep: int) -> None:
    listed = session.run(['ls', '-1', directory], sudo=True,
                         step='etcd snapshot retention').stdout.split()
    old = beyond_retention(listed, keep)
    if old:
        files = [f'{directory}/{n}{ext}' for n in old
                 for ext in ('', '.sha256')]
        session.run(['rm', '-f', '--', *files], sudo=True,
                    step='etcd snapshot retention')
        LOG.info('etcd snapshots removed from %s (retention %d): %s',
                 directory, keep, ', '.join(old))

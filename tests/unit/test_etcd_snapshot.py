"""etcd snapshots (cluster.etcd_snapshot): names, checksum parsing,
retention, the master chosen, and a whole ``take`` against fake VMs
that keep files in memory (the remote side, not the code under test)."""
from __future__ import annotations

import datetime
import hashlib
import shlex
from types import SimpleNamespace

import pytest

from kubernetes_mgmt.cluster import etcd_snapshot as snap
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.remote.ssh import Result

UTC = datetime.timezone.utc
WHEN = datetime.datetime(2026, 11, 27, 12, 0, 5, tzinfo=UTC)


def test_name_carries_the_utc_time_and_the_operation():
    local = WHEN.astimezone(datetime.timezone(datetime.timedelta(hours=2)))
    name = snap.snapshot_name('Change current package', local)
    assert name == 'etcd-20261127T120005Z-change-current-package.db'
    assert snap.taken_at(name) == WHEN
    assert snap.taken_at('etcd-20261127T120005Z-heal.db.sha256') is None
    assert snap.taken_at('notes.txt') is None
    with pytest.raises(ValueError):
        snap.snapshot_name('--', WHEN)


def test_checksum_is_read_from_sha256sum_output():
    sha = 'ab' * 32
    assert snap.parse_sha256(f'{sha}  /d/x.db\n', '/d/x.db') == sha
    assert snap.parse_sha256(f'{sha} */d/x.db\n', '/d/x.db') == sha
    for bad in ('', 'sha256sum: /d/x.db: No such file or directory',
                f'{sha}  /d/other.db', f'{sha[:-1]}  /d/x.db'):
        with pytest.raises(MgmtDriverError, match=r'sha256sum /d/x\.db'):
            snap.parse_sha256(bad, '/d/x.db')


def test_retention_keeps_the_newest_and_ignores_other_files():
    names = [snap.snapshot_name(op, WHEN + datetime.timedelta(hours=h))
             for h, op in ((3, 'heal'), (1, 'upgrade'), (2, 'heal'),
                           (0, 'heal'))]
    others = ['README', names[0] + '.sha256']
    old = snap.beyond_retention(names + others, 2)
    assert old == [names[3], names[1]]           # hours 0 and 1
    assert snap.beyond_retention(names, 4) == []
    with pytest.raises(ValueError, match='etcd_snapshot_retention'):
        snap.beyond_retention(names, 0)


class FakeVm:
    """A VM's files in memory and the few commands the module runs;
    ``etcd_healthy``: what ``etcdctl endpoint health`` in its pod says."""

    def __init__(self, name: str, etcd_healthy: bool = True):
        self.name = name
        self.etcd_healthy = etcd_healthy
        self.files: dict[str, bytes] = {}
        self.commands: list[list[str]] = []
        self.endpoint = SimpleNamespace(name=name)

    def _ok(self, out: str = '') -> Result:
        return Result(0, out, '')

    def run(self, argv, *, step, sudo=False, input=None, check=True,
            timeout=None):
        argv = list(argv)
        self.commands.append(argv)
        if argv[0] == 'kubectl':
            return self._etcdctl(argv[argv.index('etcdctl') + 1:])
        if argv[0] == 'sha256sum':
            data = self.files[argv[1]]
            return self._ok(f'{hashlib.sha256(data).hexdigest()}  '
                            f'{argv[1]}\n')
        if argv[:2] == ['ls', '-1']:
            prefix = argv[2] + '/'
            return self._ok('\n'.join(sorted(
                p[len(prefix):] for p in self.files if p.startswith(prefix)
                and '/' not in p[len(prefix):])))
        if argv[:3] == ['rm', '-f', '--']:
            for path in argv[3:]:
                self.files.pop(path, None)
            return self._ok()
        raise AssertionError(f'unexpected command {argv}')

    def _etcdctl(self, args: list[str]) -> Result:
        words = [a for a in args if not a.startswith('--')
                 and not a.startswith('https:') and not a.startswith('/etc')]
        if words == ['endpoint', 'health']:
            if self.etcd_healthy:
                return self._ok('https://127.0.0.1:2379 is healthy')
            return Result(1, '', 'https://127.0.0.1:2379 is unhealthy')
        if words[:2] == ['snapshot', 'save']:
            self.files[words[2]] = f'db of {self.name}'.encode()
            return self._ok(f'Snapshot saved at {words[2]}')
        raise AssertionError(f'unexpected etcdctl {args}')

    def run_script(self, script, args=(), *, step, sudo=False,
                   timeout=None, check=True):
        assert 'mv -f "$1" "$3"' in script, script
        source, _, target = args
        self.files[target] = self.files.pop(source)
        self.commands.append(['script', *map(shlex.quote, args)])
        return self._ok()

    def upload(self, data, path, *, step, mode=0o644, sudo=False,
               timeout=None):
        self.files[path] = data.encode() if isinstance(data, str) else data

    def read_file(self, path, *, step, sudo=False, timeout=None):
        return self.files[path]


def _node(name: str):
    return SimpleNamespace(name=name, label=name)


def _cluster(storage: bool, healthy=(True, True, True)):
    vms = {f'master-{i}': FakeVm(f'master-{i}', ok)
           for i, ok in enumerate(healthy)}
    masters = tuple(_node(n) for n in vms)
    store = None
    if storage:
        vms['storage'] = FakeVm('storage')
        store = _node('storage')
    plan = SimpleNamespace(masters=masters, storage=store, vim_name='k8s')
    return plan, vms, (lambda node: vms[node.name])


def test_snapshot_is_taken_on_the_first_healthy_master():
    plan, vms, sessions = _cluster(False, healthy=(False, True, True))
    taken = snap.take(plan, sessions, 'heal', 3, now=lambda: WHEN)
    assert taken.master == 'master-1'
    assert not any('save' in c for c in vms['master-0'].commands)
    name = 'etcd-20261127T120005Z-heal.db'
    path = f'{snap.MASTER_DIR}/{name}'
    data = vms['master-1'].files[path]
    assert taken.sha256 == hashlib.sha256(data).hexdigest()
    # No storage server: a checked copy on every master.
    assert taken.copies == tuple(f'{m}:{path}' for m in
                                 ('master-1', 'master-0', 'master-2'))
    for vm in vms.values():
        assert vm.files[path] == data
        assert vm.files[f'{path}.sha256'] == \
            f'{taken.sha256}  {name}\n'.encode()
    # The file left the etcd data directory a restore replaces.
    assert f'{snap.POD_DIR}/{name}' not in vms['master-1'].files
    assert taken.record()['copies'] == list(taken.copies)


def test_no_healthy_master_fails_naming_them():
    plan, _, sessions = _cluster(False, healthy=(False, False, False))
    with pytest.raises(MgmtDriverError, match='master-0, master-1, '
                       'master-2'):
        snap.take(plan, sessions, 'heal', 3, now=lambda: WHEN)


def test_storage_server_keeps_the_newest_n_per_cluster():
    plan, vms, sessions = _cluster(True)
    taken = [snap.take(plan, sessions, op, 2,
                       now=lambda h=h: WHEN + datetime.timedelta(hours=h))
             for h, op in enumerate(('heal', 'upgrade', 'heal'))]
    directory = f'{snap.STORAGE_DIR}/k8s'
    kept = sorted(p for p in vms['storage'].files if p.endswith('.db'))
    assert kept == [f'{directory}/{t.name}' for t in taken[1:]]
    assert taken[-1].copies[-1] == f'storage:{directory}/{taken[-1].name}'
    # Only the storage server gets copies; the other masters none.
    assert not vms['master-1'].files
    assert len([p for p in vms['master-0'].files
                if p.endswith('.db')]) == 2


class MembershipVm(FakeVm):
    """etcd refuses the first ``refusals`` removals: "unhealthy cluster"
    (its 5 s check after a join)."""

    def __init__(self, refusals: int):
        super().__init__('master-0')
        self.refusals = refusals
        self.members = [{'ID': 1, 'name': 'master-0', 'peerURLs': [
            'https://10.0.0.1:2380']}, {'ID': 2, 'name': 'master-1',
                                       'peerURLs': ['https://10.0.0.2:2380']}]

    def _etcdctl(self, args):
        import json
        words = [a for a in args if not a.startswith('--')
                 and not a.startswith('https:') and not a.startswith('/etc')]
        if words[:2] == ['member', 'list']:
            return self._ok(json.dumps({'members': self.members}))
        if words[:2] == ['member', 'remove']:
            if self.refusals:
                self.refusals -= 1
                return Result(1, '', 'Error: etcdserver: unhealthy cluster')
            self.members = [m for m in self.members
                            if f'{m["ID"]:x}' != words[2]]
            return self._ok(f'Member {words[2]} removed')
        raise AssertionError(f'unexpected etcdctl {args}')


def test_member_removal_waits_out_etcds_unhealthy_cluster_answer(
        monkeypatch):
    from kubernetes_mgmt.cluster import etcd
    monkeypatch.setattr(etcd, 'UNHEALTHY_RETRY', 5.0)
    vm = MembershipVm(refusals=2)
    removed = etcd.remove_node_member(vm, 'master-0', 'master-1',
                                      '10.0.0.2')
    assert [m.id for m in removed] == [2]
    assert [m['name'] for m in vm.members] == ['master-0']


def test_a_heals_snapshot_never_reaches_the_master_being_rebuilt():
    plan, vms, sessions = _cluster(False)

    def staying_only(node):
        # The healed master may be dead: any login to it would hang.
        assert node.name != 'master-2', 'the healed master was reached'
        return sessions(node)

    taken = snap.take(plan, staying_only, 'heal', 3, now=lambda: WHEN,
                      masters=plan.masters[:2])
    assert [c.split(':')[0] for c in taken.copies] == ['master-0',
                                                       'master-1']
    assert not vms['master-2'].files

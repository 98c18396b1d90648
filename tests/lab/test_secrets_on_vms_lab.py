"""After a lifecycle, no VM keeps a join secret, and none was ever on a
command line.

One small HA cluster (3 masters, 1 worker) is instantiated, scaled out by
one worker, then a master and a worker are healed, hooks driven as Tacker
does (``driving``). Every bootstrap token and certificate key used is
learnt from both ends: the driver's generator (``credentials``, wrapped to
record what it returns) and the emulated cluster's record of every token
and key it accepted; the two must agree. Then:

* no file in any VM's private file system (/etc, /root, /var/lib,
  /var/log, /usr/local/bin, /home, /run) contains one of them;
* no emulated command (kubeadm, kubectl, ...) was started with one in its
  argv (the emulation logs every argv), and no command the driver sent
  over SSH contained one.
"""
from __future__ import annotations

import os

import pytest

from kubernetes_mgmt.cluster import credentials
from kubernetes_mgmt.remote.ssh import SshSession
from kubernetes_mgmt_lab import driving
from kubernetes_mgmt_lab.emulated import ClusterView
from kubernetes_mgmt_lab.namespaces import PRIVATE_DIRS
from kubernetes_mgmt_lab.testing import throwaway_lab, unavailable_reason

pytestmark = pytest.mark.lab


class Recorder:
    """Join secrets the driver generated and the SSH commands it ran;
    the real functions still do the work."""

    def __init__(self, monkeypatch):
        self.tokens: list[str] = []
        self.keys: list[str] = []
        self.commands: list[tuple[str, str]] = []
        self._wrap(monkeypatch, credentials, 'bootstrap_token', self.tokens)
        self._wrap(monkeypatch, credentials, 'certificate_key', self.keys)
        execute = SshSession._execute

        def recording_execute(session, command, stdin, **kwargs):
            self.commands.append((session.endpoint.name, command))
            return execute(session, command, stdin, **kwargs)
        monkeypatch.setattr(SshSession, '_execute', recording_execute)

    @staticmethod
    def _wrap(monkeypatch, module, name: str, into: list) -> None:
        real = getattr(module, name)

        def recording():
            value = real()
            into.append(value)
            return value
        monkeypatch.setattr(module, name, recording)


def needles(tokens: list[str], keys: list[str]) -> list[str]:
    """Each token whole and its secret half (the id before the dot is
    public: it names the token's Secret), each certificate key."""
    return sorted({*tokens, *(t.split('.', 1)[1] for t in tokens), *keys})


def files_holding(lab, host: str, secrets: list[str]) -> dict[str, list]:
    """{path inside the VM: [secrets in its name or content]} over the
    VM's private directories; also how many files were read."""
    found, read = {}, 0
    wanted = [s.encode() for s in secrets]
    for top in PRIVATE_DIRS:
        root = lab.host_path(host, f'/{top}')
        for dirpath, _, names in os.walk(root):
            for name in names:
                path = os.path.join(dirpath, name)
                if os.path.islink(path) or not os.path.isfile(path):
                    continue
                try:
                    with open(path, 'rb') as f:
                        data = f.read()
                except OSError:
                    continue    # vanished meanwhile (a pid file)
                read += 1
                hits = [w.decode() for w in wanted
                        if w in data or w in name.encode()]
                if hits:
                    found[f'/{top}/{os.path.relpath(path, root)}'] = hits
    return found, read


def test_no_join_secret_left_on_a_vm_or_seen_on_a_command_line(site,
        monkeypatch):
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    recorder = Recorder(monkeypatch)
    with throwaway_lab(3, 1, site=site) as lab, driving.driver_options(lab):
        request, instance = driving.new_instance(lab)
        driving.instantiate_end(request, instance, lab)
        driving.scale_out(lab, instance, 1)
        master = [h for h in lab.state.hosts if h.role == 'master'][-1]
        driving.heal(lab, instance, [driving.vnfc_of(instance, master)])
        worker = next(h for h in lab.state.hosts if h.role == 'worker')
        driving.heal(lab, instance, [driving.vnfc_of(instance, worker)])

        view = ClusterView(lab.state.cluster_dir)
        tokens, keys = view.join_secrets_ever()
        # One token and key per operation that added nodes, each one
        # accepted by the cluster: together they are every one used.
        assert len(recorder.tokens) >= 4 and len(recorder.keys) >= 4
        assert set(recorder.tokens) <= set(tokens)
        assert set(recorder.keys) <= set(keys)
        secrets = needles(tokens + recorder.tokens, keys + recorder.keys)

        # Positive control: the scan finds a secret where one is (in the
        # healed worker: a new VM on the old one's port).
        healed = lab.host_at(worker.ip).name
        canary = lab.host_path(healed, '/run/kmgmt-canary')
        with open(canary, 'w', encoding='utf-8') as f:
            f.write(f'token: {tokens[-1]}\n')
        found, _ = files_holding(lab, healed, secrets)
        assert found['/run/kmgmt-canary'] == needles(tokens[-1:], [])
        os.unlink(canary)

        for host in lab.state.hosts:
            found, read = files_holding(lab, host.name, secrets)
            assert found == {}, host.name
            assert read > 50, host.name     # it did look at the VM
            assert os.path.exists(lab.host_path(
                host.name, '/etc/kubernetes/kubelet.conf')), host.name

        log = view.argv_log()
        started = [' '.join(e['argv']) for e in log]
        # The argv log holds every command the roles ran with the secrets
        # in their configuration files.
        assert any(c.startswith('kubeadm init --config ') for c in started)
        assert any(c.startswith('kubeadm token create --config ')
                   for c in started)
        assert any(c.startswith('kubeadm init phase upload-certs ')
                   for c in started)
        assert len([c for c in started
                    if c.startswith('kubeadm join --config ')]) >= 6
        assert [c for c in started if any(s in c for s in secrets)] == []
        assert len(recorder.commands) > 20
        assert [c for _, c in recorder.commands
                if any(s in c for s in secrets)] == []

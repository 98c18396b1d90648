"""A real containerd (Debian's ``containerd``) for the lab, as a child
process with its own root, state and socket: what the nodes' containerd
does with an image source (``hosts.toml``, an archive) is shown by
containerd's own code, not by the lab's emulated commands.

Only what images need runs: the CRI plugin (the kubelet's), tracing,
the ``opt`` plugin (it would create /opt/containerd) and the
snapshotters needing special file systems are off. It may run inside a
lab VM's network namespace; ``ctr`` then runs there too, since it is
``ctr`` that resolves and fetches from registries (containerd only
stores).

The binaries are named by absolute path: inside a lab VM, ``containerd``
and ``ctr`` in PATH are the VM's stand-ins (``emulated``).
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass

from kubernetes_mgmt_lab import childproc, namespaces
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.sysrun import run

CONTAINERD = '/usr/bin/containerd'
CTR = '/usr/bin/ctr'
NAMESPACE = 'k8s.io'            # the kubelet's namespace on a node
SOCKET_MAX = 100                # a unix socket path holds 107 bytes
DISABLED_PLUGINS = (
    'io.containerd.grpc.v1.cri',
    'io.containerd.internal.v1.opt',
    'io.containerd.internal.v1.tracing',
    'io.containerd.tracing.processor.v1.otlp',
    'io.containerd.snapshotter.v1.aufs',
    'io.containerd.snapshotter.v1.btrfs',
    'io.containerd.snapshotter.v1.devmapper',
    'io.containerd.snapshotter.v1.zfs',
)
CTR_TIMEOUT = 120.0


def _toml_str(value: str) -> str:
    # Paths of the lab: no quotes or backslashes to escape.
    if '"' in value or '\\' in value:
        raise LabError(f'unexpected character in path {value!r}')
    return f'"{value}"'


def config_toml(directory: str, run_dir: str | None = None) -> str:
    """containerd's config (version 2): its root under ``directory``, its
    state and sockets under ``run_dir`` (default: ``directory``)."""
    run_dir = run_dir or directory
    plugins = ', '.join(_toml_str(p) for p in DISABLED_PLUGINS)
    return '\n'.join([
        'version = 2',
        f'root = {_toml_str(os.path.join(directory, "root"))}',
        f'state = {_toml_str(os.path.join(run_dir, "state"))}',
        f'disabled_plugins = [{plugins}]',
        '[grpc]',
        f'  address = {_toml_str(socket_path(run_dir))}',
        '[ttrpc]',
        f'  address = {_toml_str(socket_path(run_dir) + ".ttrpc")}',
        '[debug]',
        '  address = ""',
        '[metrics]',
        '  address = ""',
        ''])


def socket_path(directory: str) -> str:
    return os.path.join(directory, 'containerd.sock')


def overlay_works(directory: str) -> bool:
    """Whether an overlay mount works on ``directory``'s file system (not
    on every one: an overlayfs or some container roots refuse it)."""
    with tempfile.TemporaryDirectory(prefix='overlay-probe-',
                                     dir=directory) as tmp:
        parts = {p: os.path.join(tmp, p)
                 for p in ('lower', 'upper', 'work', 'merged')}
        for path in parts.values():
            os.mkdir(path)
        options = (f'lowerdir={parts["lower"]},upperdir={parts["upper"]},'
                   f'workdir={parts["work"]}')
        mounted = run(['mount', '-t', 'overlay', 'overlay', '-o', options,
                       parts['merged']], check=False)
        if mounted.returncode != 0:
            return False
        run(['umount', parts['merged']])
        return True


@dataclass
class RealContainerd:
    """A running containerd and the ``ctr`` commands a test needs."""

    directory: str
    snapshotter: str
    netns: str | None
    child: childproc.Child
    run_dir: str = ''       # state and sockets; '' means ``directory``

    @property
    def socket(self) -> str:
        return socket_path(self.run_dir or self.directory)

    @classmethod
    def start(cls, directory: str, netns: str | None = None,
              snapshotter: str | None = None, run_dir: str | None = None,
              with_parent: bool = False) -> RealContainerd:
        """Start containerd with its root (images) under ``directory``,
        its state and socket under ``run_dir`` (default: ``directory``;
        a short path: a socket's has a limit); the snapshotter is
        overlayfs when it works there, else native. ``with_parent``: it
        ends when the calling process dies (``childproc.start``)."""
        run_dir = run_dir or directory
        for path in (directory, run_dir):
            os.makedirs(path, mode=0o700, exist_ok=True)
        if len(socket_path(run_dir)) > SOCKET_MAX:
            raise LabError(f'{run_dir} is too long a path for a socket')
        snapshotter = snapshotter or (
            'overlayfs' if overlay_works(directory) else 'native')
        config = os.path.join(directory, 'config.toml')
        with open(config, 'w', encoding='utf-8') as f:
            f.write(config_toml(directory, run_dir))
        probe = _ctr_argv(socket_path(run_dir), netns, 'version')
        child = childproc.start(
            [CONTAINERD, '--config', config], what='containerd',
            log_path=os.path.join(directory, 'containerd.log'),
            netns=netns, ready=lambda: _answers(probe),
            with_parent=with_parent)
        return cls(directory, snapshotter, netns, child, run_dir)

    def ctr(self, *args: str, check: bool = True,
            timeout: float = CTR_TIMEOUT,
            namespace: str = NAMESPACE) -> subprocess.CompletedProcess:
        """``ctr -n NAMESPACE ARGS`` against this containerd."""
        return run(_ctr_argv(self.socket, self.netns, '-n', namespace,
                             *args), check=check, timeout=timeout)

    def pull(self, ref: str, hosts_dir: str) -> subprocess.CompletedProcess:
        """Pull ``ref`` as configured by ``hosts_dir`` (``certs.d``) alone:
        no credentials or certificates on the command line. Not checked:
        a test reads the status and output of a refused pull."""
        return self.ctr('images', 'pull', '--hosts-dir', hosts_dir,
                        '--snapshotter', self.snapshotter, ref, check=False)

    def import_archive(self, path: str) -> str:
        """Import an OCI or Docker archive; return ctr's output."""
        done = self.ctr('images', 'import', '--snapshotter',
                        self.snapshotter, path)
        return done.stdout + done.stderr

    def images(self, namespace: str = NAMESPACE) -> dict[str, str]:
        """Image name -> manifest digest, as ``ctr images ls`` shows."""
        lines = self.ctr('images', 'ls',
                         namespace=namespace).stdout.splitlines()
        found = {}
        for line in lines[1:]:          # REF TYPE DIGEST SIZE ...
            cols = line.split()
            if len(cols) >= 3:
                found[cols[0]] = cols[2]
        return found

    def version(self) -> str:
        """The server's version, e.g. ``1.6.20~ds1`` (hosts.toml parsing
        differs between minors)."""
        out = run(_ctr_argv(self.socket, self.netns, 'version')).stdout
        server = out.partition('Server:')[2]
        for line in server.splitlines():
            key, _, value = line.strip().partition(':')
            if key == 'Version':
                return value.strip()
        raise LabError(f'no server version in: {out}')

    def remove(self, *refs: str) -> None:
        """Remove images and, at once, the content no image uses any more
        (``--sync``): the next pull of them fetches every blob again."""
        self.ctr('images', 'rm', '--sync', *refs)

    def stop(self) -> None:
        """End containerd and unmount what it left mounted (snapshots
        being unpacked when it stopped)."""
        self.child.stop()
        for path in dict.fromkeys((self.directory,
                                   self.run_dir or self.directory)):
            namespaces.unmount_all_under(path)


def _ctr_argv(socket: str, netns: str | None, *args: str) -> list[str]:
    return childproc.in_netns([CTR, '--address', socket, *args], netns)


def _answers(argv: list[str]) -> bool:
    return run(argv, check=False, timeout=10).returncode == 0

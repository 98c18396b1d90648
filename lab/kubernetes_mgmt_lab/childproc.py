"""A real server program (a registry, containerd) as a child of the
process that uses it: its output in files, optionally inside a lab VM's
network namespace, counted as started only once a readiness check
passes, and always ended by its own pid.

Unlike ``detached``, the child is the program itself (no Python wrapper):
what is tested is the Debian package's binary.
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kubernetes_mgmt.remote.retry import wait_until
from kubernetes_mgmt_lab import procs
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.namespaces import NETNS_DIR

# Enough for a program to come up on a loaded two-core CI machine.
START_DEADLINE = 60.0
_PR_SET_PDEATHSIG = 1
# PATH only: nothing of the caller's environment (REGISTRY_*,
# CONTAINERD_*, proxies) changes how the program behaves.
CLEAN_ENV = {'PATH': '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:'
                     '/sbin:/bin',
             'HOME': '/root', 'LANG': 'C.UTF-8'}


def in_netns(argv: Sequence[str], netns: str | None) -> list[str]:
    """``argv`` run inside the named network namespace (a lab VM's; its
    file under /run/netns, as ``ip netns`` keeps it), or as it is. nsenter
    without --fork execs the program: the pid stays the program's."""
    if not netns:
        return list(argv)
    return ['nsenter', f'--net={os.path.join(NETNS_DIR, netns)}', '--',
            *argv]


def die_with_parent() -> Callable[[], None]:
    """A ``preexec_fn``: the child gets SIGTERM when the process that
    started it dies, even by SIGKILL (a lab VM's command agent kills a
    command's worker whose client died): a program one command runs for
    itself must not outlive it. Made before the fork: nothing is loaded
    in the child."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def arm() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:      # it died before the line above
            os._exit(1)
    return arm


def _log_file(path: str):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    return os.fdopen(fd, 'ab')


@dataclass
class Child:
    """A started program; ``stop()`` ends it (and only it)."""

    what: str
    popen: subprocess.Popen
    log_path: str

    @property
    def pid(self) -> int:
        return self.popen.pid

    def running(self) -> bool:
        return self.popen.poll() is None

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM (SIGKILL after ``grace``), then reap it."""
        if self.running():
            procs.terminate([self.popen.pid], grace=grace)
        self.popen.wait(timeout=10)

    def tail(self, chars: int = 2000) -> str:
        try:
            with open(self.log_path, encoding='utf-8',
                      errors='replace') as f:
                return f.read()[-chars:]
        except OSError:
            return ''


def start(argv: Sequence[str], *, what: str, log_path: str,
          ready: Callable[[], bool], stdout_path: str | None = None,
          netns: str | None = None, cwd: str = '/',
          deadline: float = START_DEADLINE,
          with_parent: bool = False) -> Child:
    """Run ``argv`` (stderr to ``log_path``, stdout there too unless
    ``stdout_path``) and return once ``ready()`` is true. If it exits or
    is not ready in time it is ended and LabError says why, with the end
    of its log. ``with_parent``: it ends when this process dies
    (``die_with_parent``); only for a single-threaded caller, as any
    ``preexec_fn``."""
    with _log_file(log_path) as log, \
            _log_file(stdout_path or log_path) as out:
        popen = subprocess.Popen(
            in_netns(argv, netns), stdin=subprocess.DEVNULL, stdout=out,
            stderr=log, cwd=cwd, env=dict(CLEAN_ENV),
            start_new_session=True,
            preexec_fn=die_with_parent() if with_parent else None)
    child = Child(what, popen, log_path)

    def up() -> bool:
        if not child.running():
            raise LabError(f'{what} exited with status {popen.returncode}:'
                           f' {child.tail()}')
        return ready()

    try:
        ok = wait_until(up, deadline=deadline, ceiling=0.25)
    except BaseException:
        child.stop(grace=2.0)
        raise
    if not ok:
        child.stop(grace=2.0)
        raise LabError(f'{what} was not ready within {deadline:g} s: '
                       f'{child.tail()}')
    return child

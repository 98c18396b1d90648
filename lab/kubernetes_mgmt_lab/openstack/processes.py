"""Service processes: started detached with their output in a log file,
awaited on real readiness, stopped by PID with their children."""
from __future__ import annotations

import os
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence

from kubernetes_mgmt.remote.retry import wait_until
from kubernetes_mgmt_lab import procs
from kubernetes_mgmt_lab.errors import LabError

START_DEADLINE = 120.0
# tacker-conductor outlives SIGTERM by minutes: a short grace, then KILL.
STOP_GRACE = 8.0


def spawn(argv: Sequence[str], log_path: str, *,
          env: dict[str, str] | None = None, cwd: str = '/') -> int:
    """Start ``argv`` in its own session, output appended to ``log_path``."""
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(log_path, 'ab') as log:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT,
                                cwd=cwd, env=env, start_new_session=True)
    return proc.pid


def alive(pid: int | None) -> bool:
    return bool(pid) and not procs.is_gone(pid)


def wait_ready(what: str, pid: int | None, ready: Callable[[], bool],
               log_path: str, deadline: float = START_DEADLINE) -> None:
    """Poll ``ready`` until it holds; fail at once if ``pid`` dies."""
    def check() -> bool:
        if pid is not None and not alive(pid):
            reap(pid)
            raise LabError(f'{what} exited while starting; see {log_path}'
                           f'{_tail(log_path)}')
        return ready()

    if not wait_until(check, deadline=deadline, first=0.1, ceiling=1.0):
        raise LabError(f'{what} was not ready within {deadline:g} s; see '
                       f'{log_path}{_tail(log_path)}')


def _tail(log_path: str, lines: int = 12) -> str:
    """The log's last lines, for an error that may outlive the log (a
    failed test run removes its root)."""
    try:
        with open(log_path, encoding='utf-8', errors='replace') as f:
            last = f.readlines()[-lines:]
    except OSError:
        return ''
    return ''.join(['; it ends:\n', *last]).rstrip() if last else ''


def answers(url: str) -> bool:
    """Whether an HTTP server answers ``url`` (any status counts)."""
    try:
        with urllib.request.urlopen(url, timeout=2):  # noqa: S310
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):
        return False


def serves(url: str) -> bool:
    """Whether a uwsgi worker answers ``url`` below 500 (the uwsgi router
    alone answers 502 while the workers load the application)."""
    try:
        with urllib.request.urlopen(url + '/', timeout=5):  # noqa: S310
            return True
    except urllib.error.HTTPError as exc:
        return exc.code < 500   # 300: an API's versions
    except (OSError, ValueError):
        return False


def descendants(pid: int) -> list[int]:
    """``pid``'s children, grandchildren ... (workers a service forked)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/stat', encoding='utf-8') as f:
                ppid = int(f.read().rsplit(')', 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def reap(pid: int) -> None:
    """Collect ``pid``'s exit status if this process started it."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def stop(*pids: int | None, grace: float = STOP_GRACE) -> None:
    """SIGTERM the ``pids`` and their descendants together, SIGKILL what
    outlives ``grace`` seconds, reap them."""
    live = [p for p in pids if alive(p)]
    if live:
        procs.terminate([t for p in live for t in (p, *descendants(p))],
                        grace=grace)
    for pid in pids:
        if pid:
            reap(pid)
    survivors = [p for p in live if alive(p)]
    if survivors:
        raise LabError(f'processes {survivors} survived SIGKILL')

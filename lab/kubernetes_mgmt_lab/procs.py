"""Finding and ending the processes of a lab: by the namespaces they run
in, and by a command line naming the lab root (helpers started outside
any host, such as the site mirror)."""
from __future__ import annotations

import os
import signal
from collections.abc import Iterable

from kubernetes_mgmt.remote.retry import wait_until

_NS_KINDS = ('mnt', 'net', 'uts')


def nsfs_inode(path: str) -> int | None:
    """The namespace pinned at ``path``, or None when nothing is mounted
    there (an empty placeholder file must not match a namespace)."""
    try:
        st = os.stat(path)
        parent = os.stat(os.path.dirname(path) or '.')
    except OSError:
        return None
    return st.st_ino if st.st_dev != parent.st_dev else None


def _all_pids() -> list[int]:
    return [int(d) for d in os.listdir('/proc') if d.isdigit()]


def ns_of(pid: int) -> set[int]:
    found = set()
    for kind in _NS_KINDS:
        try:
            link = os.readlink(f'/proc/{pid}/ns/{kind}')
        except OSError:
            continue       # gone, a kernel thread, or a zombie
        found.add(int(link.split('[', 1)[1].rstrip(']')))
    return found


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f'/proc/{pid}/cmdline', 'rb') as f:
            raw = f.read()
    except OSError:
        return []
    return [a.decode(errors='replace') for a in raw.split(b'\0') if a]


def _ancestors() -> set[int]:
    """This process and its parents: never ours to kill (``lab down
    --root R`` itself mentions R)."""
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            with open(f'/proc/{pid}/stat', encoding='utf-8') as f:
                pid = int(f.read().rsplit(')', 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def _mentions(argv: list[str], root: str) -> bool:
    prefix = root.rstrip('/') + '/'
    return any(a == root or prefix in a or a.startswith(prefix)
               for a in argv)


def find(ns_inodes: Iterable[int] = (), root: str | None = None
         ) -> list[int]:
    """Live processes inside any of ``ns_inodes`` or whose command line
    names a path under ``root``."""
    wanted = set(ns_inodes)
    mine = _ancestors()
    found = []
    for pid in _all_pids():
        if pid in mine or is_gone(pid):
            continue
        if wanted & ns_of(pid) or (root and _mentions(_cmdline(pid), root)):
            found.append(pid)
    return found


def is_gone(pid: int) -> bool:
    """True once ``pid`` has exited; a zombie counts as gone (its parent
    may never reap it)."""
    try:
        with open(f'/proc/{pid}/stat', encoding='utf-8') as f:
            return f.read().rsplit(')', 1)[1].split()[0] in ('Z', 'X')
    except (OSError, IndexError):
        return True


def _signal(pids: list[int], sig: signal.Signals, wait: float) -> bool:
    """Send ``sig`` to each pid; True once all are gone within ``wait``."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    return wait_until(lambda: all(is_gone(p) for p in pids), deadline=wait,
                      first=0.01, ceiling=0.1)


def terminate(pids: Iterable[int], grace: float = 5.0) -> None:
    """SIGTERM, wait up to ``grace`` seconds, then SIGKILL what is left."""
    pids = list(pids)
    if not _signal(pids, signal.SIGTERM, grace):
        _signal([p for p in pids if not is_gone(p)], signal.SIGKILL, 5.0)


def kill(pids: Iterable[int]) -> None:
    """SIGKILL at once and wait until they are gone: a machine that
    loses power gives its programs no chance to clean up."""
    _signal(list(pids), signal.SIGKILL, 5.0)

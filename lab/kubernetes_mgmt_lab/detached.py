"""Lab helper servers (site mirror, lab cloud) as detached processes:
started in their own session, found again by pid and module name."""
from __future__ import annotations

import subprocess
import sys

from kubernetes_mgmt.remote.retry import wait_until
from kubernetes_mgmt_lab import net, procs
from kubernetes_mgmt_lab.errors import LabError

START_DEADLINE = 30.0


def start(module: str, args: list[str], ip: str, port: int,
          log_path: str, what: str) -> int:
    """Run ``python -m module args``; return its pid once ``ip:port``
    accepts connections."""
    argv = [sys.executable, '-m', module, *args]
    with open(log_path, 'ab') as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, cwd='/',
                                start_new_session=True)
    def listening() -> bool:
        if proc.poll() is not None:
            raise LabError(f'{what} exited with status {proc.returncode}; '
                           f'see {log_path}')
        return net.port_open(ip, port, timeout=0.5)

    if not wait_until(listening, deadline=START_DEADLINE, ceiling=0.25):
        proc.kill()
        raise LabError(f'{what} did not listen on {ip}:{port} within '
                       f'{START_DEADLINE:g} s; see {log_path}')
    return proc.pid


def runs(pid: int | None, module: str) -> bool:
    """Whether ``pid`` is (still) ``module``, not a recycled pid."""
    if not pid or procs.is_gone(pid):
        return False
    try:
        with open(f'/proc/{pid}/cmdline', 'rb') as f:
            return module.encode() in f.read()
    except OSError:
        return False


def stop(pid: int | None, module: str) -> None:
    if runs(pid, module):
        procs.terminate([pid])

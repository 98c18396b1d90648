"""Starting and stopping the Heat API double as a detached process."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time

from kubernetes_mgmt.lab import net, procs
from kubernetes_mgmt.lab.errors import LabError

MODULE = 'kubernetes_mgmt.lab.heat_api'
START_DEADLINE = 30.0


def start(state_file: str, ip: str, port: int, log_path: str) -> int:
    """Start the double listening on ``ip:port``; return its pid once it
    accepts connections."""
    if importlib.util.find_spec(MODULE) is None:
        raise LabError(f'the Heat API double ({MODULE}) is not installed; '
                       'the lab cannot serve Heat without it')
    argv = [sys.executable, '-m', MODULE, '--state', state_file,
            '--listen', f'{ip}:{port}']
    with open(log_path, 'ab') as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, cwd='/',
                                start_new_session=True)
    end = time.monotonic() + START_DEADLINE
    pause = 0.02
    while not net.port_open(ip, port, timeout=0.5):
        if proc.poll() is not None:
            raise LabError(f'the Heat API double exited with status '
                           f'{proc.returncode}; see {log_path}')
        if time.monotonic() > end:
            proc.kill()
            raise LabError(f'the Heat API double did not listen on '
                           f'{ip}:{port} within {START_DEADLINE:g} s; see '
                           f'{log_path}')
        time.sleep(pause)
        pause = min(pause * 2, 0.25)
    return proc.pid


def is_heat(pid: int | None) -> bool:
    """Whether ``pid`` is (still) a Heat double, not a recycled pid."""
    if not pid or procs.is_gone(pid):
        return False
    try:
        with open(f'/proc/{pid}/cmdline', 'rb') as f:
            return MODULE.encode() in f.read()
    except OSError:
        return False


def stop(pid: int | None) -> None:
    if is_heat(pid):
        procs.terminate([pid])


def log_path(root: str) -> str:
    return os.path.join(root, 'heat.log')

"""Starting and stopping the Heat API double as a detached process."""
from __future__ import annotations

import importlib.util
import os

from kubernetes_mgmt_lab import detached
from kubernetes_mgmt_lab.errors import LabError

MODULE = 'kubernetes_mgmt_lab.heat_api'


def start(state_file: str, ip: str, port: int, log_path: str) -> int:
    """Start the double listening on ``ip:port``; return its pid once it
    accepts connections."""
    if importlib.util.find_spec(MODULE) is None:
        raise LabError(f'the Heat API double ({MODULE}) is not installed; '
                       'the lab cannot serve Heat without it')
    return detached.start(MODULE, ['--state', state_file,
                                   '--listen', f'{ip}:{port}'],
                          ip, port, log_path, 'the Heat API double')


def is_heat(pid: int | None) -> bool:
    """Whether ``pid`` is (still) a Heat double, not a recycled pid."""
    return detached.runs(pid, MODULE)


def stop(pid: int | None) -> None:
    detached.stop(pid, MODULE)


def log_path(root: str) -> str:
    return os.path.join(root, 'heat.log')

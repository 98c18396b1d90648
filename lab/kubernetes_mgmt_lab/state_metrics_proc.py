"""Starting and stopping a lab cluster's kube-state-metrics stand-in
(``emulated.state_metrics``) as a detached process."""
from __future__ import annotations

import os

from kubernetes_mgmt_lab import detached

MODULE = 'kubernetes_mgmt_lab.emulated.state_metrics'


def log_path(root: str) -> str:
    return os.path.join(root, 'state-metrics.log')


def start(root: str, ip: str, port: int, cluster_dir: str,
          allowed: list[str]) -> int:
    """Serve the cluster's node series on ``ip:port``; the pid once it
    accepts connections."""
    allow = [a for key in allowed for a in ('--allow', key)]
    return detached.start(MODULE, ['--address', ip, '--port', str(port),
                                   '--cluster-dir', cluster_dir, *allow],
                          ip, port, log_path(root),
                          "the lab's kube-state-metrics stand-in")


def runs(pid: int | None) -> bool:
    return detached.runs(pid, MODULE)


def stop(pid: int | None) -> None:
    detached.stop(pid, MODULE)

"""Knobs of the emulation, read from ``<cluster_dir>/config.json``."""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

from kubernetes_mgmt_lab.emulated import store
from kubernetes_mgmt_lab.releases import KUBERNETES_RELEASES

CONFIG_FILE = 'config.json'
DAY = 86400.0


@dataclass
class LabConfig:
    # Emulated time spent by each apt-get install that installs
    # something new: the fixed per-node install cost of a benchmark.
    install_delay: float = 0.0
    # Per host name, instead of install_delay: nodes that take different
    # times to prepare (tests and benchmarks of the step schedule).
    install_delays: dict[str, float] = field(default_factory=dict)
    # Version installed when a package is not pinned (no "v" prefix).
    kubernetes_version: str = '1.31.4'
    # How long kubeadm init/join keep trying to reach the control-plane
    # endpoint. Real kubeadm retries for minutes; 10 s failed HA inits
    # (VIP not yet up) when the lab's 2 cores were busy. Tests of an
    # unreachable endpoint set a short one.
    join_timeout: float = 60.0
    # Replicas of a demo Deployment created at init, so drains have
    # ordinary pods to evict.
    demo_replicas: int = 2
    # Minor -> patch release of the packages the lab's repository has.
    releases: dict[str, str] = field(
        default_factory=lambda: dict(KUBERNETES_RELEASES))
    # Seconds the lab's clock is ahead of the machine's, for whatever
    # judges certificates (kubeadm certs, upgrade's renewal): a test ages
    # the cluster's certificates without waiting a year.
    clock_offset: float = 0.0
    # True (the lab's air-gapped clusters): kubeadm init and join need
    # their images in the VM's real containerd (emulated/ctr.py) and fail
    # their preflight as real kubeadm does when it cannot pull them; the
    # lab reaches no registry.k8s.io. False: images are taken as present.
    images_from_containerd: bool = False

    def install_seconds(self, host: str) -> float:
        return self.install_delays.get(host, self.install_delay)

    @classmethod
    def load(cls, cluster_dir: str) -> LabConfig:
        data = store.load_json(os.path.join(cluster_dir, CONFIG_FILE), {})
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def update_config(cluster_dir: str, **values) -> None:
    names = {f.name for f in dataclasses.fields(LabConfig)}
    unknown = set(values) - names
    if unknown:
        raise KeyError(f'unknown config keys: {sorted(unknown)}')
    with store.locked_file(cluster_dir, CONFIG_FILE, {}) as data:
        data.update(values)


def set_install_delay(cluster_dir: str, seconds: float) -> None:
    update_config(cluster_dir, install_delay=float(seconds))


def set_install_delays(cluster_dir: str, seconds: dict[str, float]) -> None:
    """Each named host's install time (others keep install_delay)."""
    update_config(cluster_dir, install_delays={
        name: float(s) for name, s in seconds.items()})


def set_clock_offset(cluster_dir: str, days: float = 0.0,
                     seconds: float = 0.0) -> None:
    """Move the lab's clock ``days`` + ``seconds`` ahead of the machine's
    (0 puts it back)."""
    update_config(cluster_dir, clock_offset=float(days) * DAY +
                  float(seconds))

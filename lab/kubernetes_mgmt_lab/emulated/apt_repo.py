"""The Kubernetes apt repository a host is configured with, and what it
offers. pkgs.k8s.io has one repository per minor
(``.../core:/stable:/v1.37/deb/``), so does the lab's site mirror
(``.../apt/v1.37/``): a host whose kubernetes.list names a minor can
install that minor's kubelet, kubeadm and kubectl only. A repository URL
that names no minor (or no kubernetes.list, as on the unit tests' hosts)
offers every version, as the lab always did."""
from __future__ import annotations

import re

from kubernetes_mgmt_lab.emulated import packages
from kubernetes_mgmt_lab.emulated.host import host_path

SOURCES = '/etc/apt/sources.list.d/kubernetes.list'
_MINOR = re.compile(r'/v(\d+\.\d+)/')


class NotFound(Exception):
    """apt has no such version: the message is apt's."""


def repository_minor() -> str | None:
    """The minor the host's Kubernetes repository is for, if it names
    one."""
    try:
        with open(host_path(SOURCES), encoding='utf-8') as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return None
    for line in lines:
        words = line.split('#', 1)[0].split()
        if not words or words[0] != 'deb':
            continue
        for word in words[1:]:
            if '://' in word:
                found = _MINOR.search(word.rstrip('/') + '/')
                if found:
                    return found.group(1)
    return None


def _minor_of(version: str) -> str:
    return '.'.join(version.split('-')[0].split('.')[:2])


def _patch(version: str) -> int:
    parts = version.split('-')[0].split('.')
    return int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else 0


def check_offered(name: str, wanted: str | None, version: str,
                  releases: dict[str, str]) -> None:
    """Raise NotFound unless the host's repository has ``version`` of
    ``name`` (what ``name=wanted`` resolved to)."""
    if name not in packages.KUBE_PACKAGES:
        return
    minor = repository_minor()
    if minor is None:
        return
    newest = releases.get(minor)
    offered = _minor_of(version) == minor and (
        newest is None or _patch(version) <= _patch(newest))
    if not offered:
        raise NotFound(f"E: Version '{wanted or version}' for '{name}' "
                       'was not found')

"""The host's installed packages (a dpkg stand-in database)."""
from __future__ import annotations

from kubernetes_mgmt_lab.emulated import hoststate

DB = 'packages'
# Packages built from the Kubernetes release share its version.
KUBE_PACKAGES = ('kubelet', 'kubeadm', 'kubectl')
PKG_REVISION = '1.1'


def installed() -> dict[str, dict]:
    return hoststate.read(DB)


def any_installed(names: tuple[str, ...]) -> bool:
    have = installed()
    return any(n in have for n in names)


def version_of(name: str) -> str | None:
    entry = installed().get(name)
    return entry['version'] if entry else None


def kube_version(name: str, default: str) -> str:
    """``v1.31.4`` for an installed kubelet/kubeadm/kubectl (``default``:
    the lab's Kubernetes version, for one not installed)."""
    raw = version_of(name) or default
    return 'v' + raw.split('-')[0].split('~')[0]


def release_of(minor: str, default: str,
               releases: dict[str, str] | None) -> str:
    """The patch release the lab's repository has of ``minor``: the one
    configured for it, else ``default``'s patch number under it."""
    known = (releases or {}).get(minor)
    return known or f'{minor}.{default.split(".")[-1]}'


def resolve_version(name: str, wanted: str | None, default: str,
                    releases: dict[str, str] | None = None,
                    repo_minor: str | None = None) -> str:
    """The version apt would pick for ``name[=wanted]`` (``default``: the
    lab's Kubernetes version; ``releases``: minor -> patch release the
    repository has; ``repo_minor``: the minor the host's repository is
    for, whose release an unpinned install gets)."""
    if name not in KUBE_PACKAGES:
        return wanted or '1.0-1'
    if not wanted:
        upstream = release_of(repo_minor, default, releases) \
            if repo_minor else default
        return f'{upstream}-{PKG_REVISION}'
    upstream, _, revision = wanted.partition('-')
    if '*' in upstream:
        # apt's version glob: the newest release of that minor.
        minor = '.'.join(upstream.split('.')[:2])
        upstream = release_of(minor, default, releases)
    if not revision or '*' in revision:
        revision = PKG_REVISION
    return f'{upstream}-{revision}'

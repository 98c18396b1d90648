"""Kubernetes versions and the rules of moving a cluster between them,
as kubeadm and Kubernetes' version skew policy state them: one minor at
a time, never down, and no kubelet newer than the API server it talks
to. Checked before an upgrade touches any host."""
from __future__ import annotations

import re
from dataclasses import dataclass

from kubernetes_mgmt.errors import Problem

# '1.37', 'v1.37.2', and apt's '1.37.2-1.1' all name the minor 1.37.
_VERSION = re.compile(r'v?(\d+)\.(\d+)(?:\.\d+)?(?:-[0-9A-Za-z.~+]+)?\Z')
# A minor written as [kubernetes_mgmt] kubernetes_version and the
# request's kubernetes_version take it (their own patterns say the same).
_EXACT_MINOR = re.compile(r'1\.[0-9]{2,3}\Z')


@dataclass(frozen=True, order=True)
class Minor:
    """A Kubernetes minor release, e.g. 1.37."""

    major: int
    minor: int

    @classmethod
    def parse(cls, text: object) -> Minor | None:
        """The minor ``text`` names, or None if it names none."""
        found = _VERSION.match(text.strip()) if isinstance(text, str) \
            else None
        return cls(int(found[1]), int(found[2])) if found else None

    @classmethod
    def exact(cls, text: object) -> Minor | None:
        """The minor ``text`` is when it is written as one, like
        ``'1.37'``; None otherwise: ``'v1.37.2'``, or ``'1.0'`` (the
        software_version of a package that names no Kubernetes minor,
        such as the v1 sample's)."""
        if not isinstance(text, str) or not _EXACT_MINOR.match(text):
            return None
        return cls.parse(text)

    def next(self) -> Minor:
        return Minor(self.major, self.minor + 1)

    def __str__(self) -> str:
        return f'{self.major}.{self.minor}'


def upgrade_problem(current: str, target: str, where: str
                    ) -> Problem | None:
    """Why a cluster at ``current`` cannot move to ``target`` (``where``:
    the field that asks for ``target``), or None if it can (the same
    minor included: nothing to upgrade)."""
    now, wanted = Minor.parse(current), Minor.parse(target)
    if wanted is None:
        return Problem(where, f'{target!r} is not a Kubernetes version '
                       '(e.g. 1.37)')
    if now is None:
        return Problem(where, f'the cluster\'s version {current!r} is not '
                       'known; the driver cannot judge the upgrade')
    if wanted < now:
        return Problem(where, f'{wanted} is older than the cluster\'s '
                       f'{now}: a cluster is never downgraded')
    if wanted.major != now.major:
        return Problem(where, f'{now} to {wanted} changes the major '
                       'version, which kubeadm does not upgrade')
    if wanted.minor > now.minor + 1:
        return Problem(where, f'{now} to {wanted} skips '
                       f'{wanted.minor - now.minor - 1} minor version(s): '
                       f'upgrade one minor at a time, to {now.next()} '
                       'first')
    return None


def kubelet_problem(node: str, kubelet: str, api_server: str
                    ) -> Problem | None:
    """A kubelet newer than the API server is refused (the skew policy
    allows it older, never newer)."""
    mine, server = Minor.parse(kubelet), Minor.parse(api_server)
    if mine is None or server is None or mine <= server:
        return None
    return Problem(node, f'kubelet {mine} would be newer than the API '
                   f'server {server}: upgrade the control plane first')


REQUEST_FIELD = ('additionalParams.k8s_cluster_installation_param.'
                 'kubernetes_version')


def package_problem(requested: str | None, software_version: str | None
                    ) -> Problem | None:
    """A request may repeat the minor its VNF package names (the VNF's
    software_version) but not name another: the package's upgrades go by
    it. A package whose software_version is no minor (the v1 sample's
    '1.0') leaves the choice to the request."""
    package = Minor.exact(software_version)
    if requested is None or package is None or \
            Minor.parse(requested) == package:
        return None
    return Problem(REQUEST_FIELD, (
        f'{requested} is not {package}, the Kubernetes minor the VNF '
        "package installs (its VNF's software_version): leave "
        'kubernetes_version out or give the package\'s minor, or use a '
        'package built with kubernetes-mgmt package build '
        f'--kubernetes-version {requested}'))


def chosen_minor(requested: str | None, software_version: str | None,
                 configured: str) -> str:
    """The minor a new cluster installs: the request's, else the
    package's (when its software_version is a minor), else the
    configuration's ([kubernetes_mgmt] kubernetes_version)."""
    package = Minor.exact(software_version)
    return requested or (str(package) if package else configured)

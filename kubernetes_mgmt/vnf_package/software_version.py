"""The Kubernetes minor a cluster package installs: its VNF's
``software_version`` (e.g. ``'1.37'``), in every place it is set.

Tacker shows it as the instance's vnfSoftwareVersion. Instantiate
installs it unless the request names the minor itself (and then only the
same one); a ChangeCurrentVnfPackage to a package naming the next minor
upgrades the cluster. A package for Tacker's v2 API must name a minor:
its upgrades depend on it. The v1 sample says ``'1.0'``, which names
none (v1 has no ChangeCurrentVnfPackage): its clusters install the
request's or the configuration's minor, unless the package is built with
``--kubernetes-version``, which sets the minor in v1 packages too.
``package build --kubernetes-version`` sets every place (``vnf_property``
says why there are several).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubernetes_mgmt.params.versions import Minor
from kubernetes_mgmt.vnf_package import vnf_property
from kubernetes_mgmt.vnf_package.vnf_property import Site

PROPERTY = 'software_version'
OPTION = '--kubernetes-version'


def minor_problem(value: str) -> str | None:
    """Why ``value`` cannot be a package's Kubernetes minor; None if it
    can."""
    if Minor.exact(value):
        return None
    parsed = Minor.parse(value)
    if parsed is not None and Minor.exact(str(parsed)):
        return f'{OPTION} {value!r}: give the minor only, as {parsed}'
    return (f'{OPTION} {value!r} is not a Kubernetes minor: give the '
            'minor the package\'s clusters install, e.g. 1.37')


KUBERNETES_VERSION = vnf_property.VnfProperty(
    name=PROPERTY, label='the Kubernetes version (software_version)',
    option=OPTION, metavar='MINOR', noun='minor', problem=minor_problem)


def sites(documents: Mapping[str, Any]) -> list[Site]:
    """Every site of software_version in the parsed templates."""
    return vnf_property.sites(documents, KUBERNETES_VERSION)


def settle(texts: Mapping[str, str], minor: str | None, v2: bool
           ) -> tuple[dict[str, str], str | None]:
    """The templates with every site set to ``minor`` when given, and
    the package's software_version; PropertyError as ``vnf_property``
    says, or for a ``v2`` package that names no minor."""
    settled, value = vnf_property.settle(texts, KUBERNETES_VERSION, minor)
    trouble = problems(sites(vnf_property.parse(settled)), v2)
    if trouble:
        raise vnf_property.PropertyError(trouble[0])
    return settled, value


def problems(found: list[Site], v2: bool) -> list[str]:
    """The sites disagree; or, in a v2 package, the value Tacker takes is
    no Kubernetes minor (the file and the value named)."""
    trouble = vnf_property.problems(found, KUBERNETES_VERSION)
    chosen = vnf_property.chosen_site(found)
    if trouble or not v2 or (chosen and Minor.exact(chosen.values[0])):
        return trouble
    where = f'{chosen.file} {chosen.field} is {chosen.values[0]!r}' \
        if chosen else 'no template sets the VNF\'s software_version'
    return [f'{where}: a v2 cluster package names the Kubernetes minor its '
            "clusters install (e.g. '1.37'; a change-vnfpkg to a package "
            'naming the next minor upgrades them): rebuild it with '
            f'kubernetes-mgmt package build {OPTION} MINOR']


def summary(value: str | None) -> str:
    """What a package's software_version means for its clusters."""
    if Minor.exact(value):
        return (f'{value} (software_version: the minor its clusters '
                'install)')
    shown = f'software_version {value!r}' if value else 'no software_version'
    return (f'not named ({shown} is no minor: the request\'s '
            'kubernetes_version or [kubernetes_mgmt] kubernetes_version '
            'chooses)')

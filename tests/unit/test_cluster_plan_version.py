"""The Kubernetes minor a new cluster installs: the request's, else its
VNF package's (the VNF's software_version, when that is a minor), else
[kubernetes_mgmt] kubernetes_version; a request naming another minor
than its package is refused before any host is touched. A cluster with a
record keeps following it."""
from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from kubernetes_mgmt.cluster.cluster_plan import build_plan
from kubernetes_mgmt.errors import ValidationError
from kubernetes_mgmt.vnf_package import layout

# package, options, cluster_params, topology_of: tests/unit/conftest.py
FIELD = 'additionalParams.k8s_cluster_installation_param.kubernetes_version'


def _with_sample(package: Path, sample: Path, software_version: str | None
                 = None) -> Path:
    """``package`` (the install script) with the sample's descriptors;
    ``software_version`` replaces the sample's in all three places."""
    for name in ('TOSCA-Metadata', 'Definitions'):
        shutil.copytree(sample / name, package / name)
    if software_version:
        for path in (package / 'Definitions').glob('*.yaml'):
            path.write_text(path.read_text().replace(
                "'1.37'", f"'{software_version}'"))
    return package


@pytest.fixture
def v2_package(package):
    """A v2 package naming 1.36 (the sample's VNFD, rebuilt so)."""
    return _with_sample(package, layout.sample_v2_package_dir(), '1.36')


@pytest.fixture
def v1_package(package):
    """The v1 sample's descriptors: software_version '1.0', no minor."""
    return _with_sample(package, layout.sample_package_dir())


def _plan(params, topology_of, root, requested=None, record=None):
    params = dataclasses.replace(params, kubernetes_version=requested)
    return build_plan('inst-1', params, topology_of(), root, record=record)


def test_the_package_s_minor_beats_the_configuration(
        v2_package, options, cluster_params, topology_of):
    options(kubernetes_version='1.37')
    plan = _plan(cluster_params, topology_of, v2_package)
    assert plan.kubernetes_version == '1.36'
    assert plan.freeze().kubernetes_version == '1.36'


def test_a_request_may_repeat_the_package_s_minor(
        v2_package, options, cluster_params, topology_of):
    options(kubernetes_version='1.37')
    plan = _plan(cluster_params, topology_of, v2_package, '1.36')
    assert plan.kubernetes_version == '1.36'


def test_a_request_naming_another_minor_than_the_package_is_refused(
        v2_package, cluster_params, topology_of):
    with pytest.raises(ValidationError) as caught:
        _plan(cluster_params, topology_of, v2_package, '1.37')
    assert [str(p) for p in caught.value.problems] == [
        f'{FIELD}: 1.37 is not 1.36, the Kubernetes minor the VNF package '
        "installs (its VNF's software_version): leave kubernetes_version "
        "out or give the package's minor, or use a package built with "
        'kubernetes-mgmt package build --kubernetes-version 1.37']


@pytest.mark.parametrize('requested, expected', [(None, '1.38'),
                                                 ('1.36', '1.36')])
def test_a_package_naming_no_minor_leaves_it_to_request_and_configuration(
        v1_package, options, cluster_params, topology_of, requested,
        expected):
    options(kubernetes_version='1.38')
    plan = _plan(cluster_params, topology_of, v1_package, requested)
    assert plan.kubernetes_version == expected


def test_a_cluster_with_a_record_follows_it_not_its_new_package(
        v1_package, package, options, cluster_params, topology_of):
    # Built at 1.37 (request), then the instance moved to a package naming
    # 1.36: its stored request no longer matches, and is not refused.
    record = _plan(cluster_params, topology_of, v1_package, '1.37').freeze()
    shutil.rmtree(package / 'Definitions')
    shutil.rmtree(package / 'TOSCA-Metadata')
    moved = _with_sample(package, layout.sample_v2_package_dir(), '1.36')
    plan = _plan(cluster_params, topology_of, moved, '1.37', record=record)
    assert plan.kubernetes_version == '1.37'

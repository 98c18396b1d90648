"""Fixtures shared by the unit tests: the VNF package tests' and a cluster
plan's inputs (the complex sample request, a 3+1 topology, a package
directory holding the real install script, option overrides).

The ETSI SOL001 type files come from ``KMGMT_SOL001_DIR`` when set (a
developer without network), else as ``package build`` finds them: the
installed tacker package, else the tacker wheel downloaded once into the
user's cache. A failed download fails the tests: nothing is skipped.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from oslo_config import cfg

from kubernetes_mgmt.params.validate import parse_cluster_params
from kubernetes_mgmt.topology.model import Host, Role, Topology
from kubernetes_mgmt.vnf_package import sol001
from kubernetes_mgmt.vnf_package.build import BuildOptions, build

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope='session')
def sol001_dir() -> Path:
    return sol001.locate(os.environ.get('KMGMT_SOL001_DIR')).directory


@pytest.fixture(scope='session')
def built_package(tmp_path_factory, sol001_dir) -> Path:
    """A package built from the sample with the placeholder image."""
    output = tmp_path_factory.mktemp('csar') / 'package.zip'
    build(BuildOptions(output=output, sol001_dir=sol001_dir))
    return output


@pytest.fixture
def cluster_params():
    """The complex sample request's parameters, placeholders filled."""
    body = json.loads((REPO / 'samples/requests/'
                       'complex_kubernetes_param_file.json').read_text())
    body = json.loads(json.dumps(body).replace('REPLACE_WITH_', 'x'))
    return parse_cluster_params(body['additionalParams'])


def _topology(stack='stack-1', vip='10.0.0.100'):
    masters = tuple(Host(Role.MASTER, f'm{i}', f'masterNode{i}',
                         f'10.0.0.{10 + i}', f'10.0.0.{10 + i}',
                         member_name=f'm{i}') for i in range(3))
    workers = (Host(Role.WORKER, 'w0', 'workerNode', '10.0.0.20',
                    '10.0.0.20', member_name='w0'),)
    return Topology(stack, masters, workers, cluster_ip=vip)


@pytest.fixture
def topology_of():
    """``topology_of(stack='stack-1', vip='10.0.0.100')``: 3 masters and
    a worker."""
    return _topology


@pytest.fixture
def package(tmp_path):
    (tmp_path / 'Scripts').mkdir()
    # The package's script is the real one: it declares its contract.
    (tmp_path / 'Scripts/install_k8s_cluster.sh').write_bytes(
        (REPO / 'scripts/install_k8s_cluster.sh').read_bytes())
    return tmp_path


@pytest.fixture
def options():
    """``options(name=value, ...)``: [kubernetes_mgmt] overrides, undone
    after the test."""
    changed = []

    def set_(**values):
        for key, value in values.items():
            cfg.CONF.set_override(key, value, 'kubernetes_mgmt')
            changed.append(key)
    yield set_
    for key in changed:
        cfg.CONF.clear_override(key, 'kubernetes_mgmt')


@pytest.fixture
def state_key(tmp_path):
    """The site key that signs the driver's state (and seals the v2
    instantiate parameters), in a file of this test only."""
    path = tmp_path / 'state.key'
    cfg.CONF.set_override('state_key_file', str(path), 'kubernetes_mgmt')
    yield path
    cfg.CONF.clear_override('state_key_file', 'kubernetes_mgmt')

"""Fixtures shared by the VNF package tests.

The ETSI SOL001 type files come from ``KMGMT_SOL001_DIR`` when set (a
developer without network), else as ``package build`` finds them: the
installed tacker package, else the tacker wheel downloaded once into the
user's cache. A failed download fails the tests: nothing is skipped.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubernetes_mgmt.vnf_package import sol001
from kubernetes_mgmt.vnf_package.build import BuildOptions, build


@pytest.fixture(scope='session')
def sol001_dir() -> Path:
    return sol001.locate(os.environ.get('KMGMT_SOL001_DIR')).directory


@pytest.fixture(scope='session')
def built_package(tmp_path_factory, sol001_dir) -> Path:
    """A package built from the sample with the placeholder image."""
    output = tmp_path_factory.mktemp('csar') / 'package.zip'
    build(BuildOptions(output=output, sol001_dir=sol001_dir))
    return output

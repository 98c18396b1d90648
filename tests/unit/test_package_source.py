"""Where the driver reads the VNF package: ``[kubernetes_mgmt]
vnf_package_source`` names an entry point (the product's ``tacker``, the
lab's ``directory``)."""
from __future__ import annotations

import builtins
import types

import pytest

from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.params.package_file import package_file
from kubernetes_mgmt.shim import package_source as package
from kubernetes_mgmt_lab import conf as lab_conf

INSTANCE = types.SimpleNamespace(vnfd_id='vnfd-1')


@pytest.fixture
def source():
    def choose(name: str, directory: str | None = None) -> None:
        CONF.set_override('vnf_package_source', name, 'kubernetes_mgmt')
        CONF.set_override('vnf_package_dir', directory, lab_conf.GROUP)
    yield choose
    CONF.clear_override('vnf_package_source', 'kubernetes_mgmt')
    CONF.clear_override('vnf_package_dir', lab_conf.GROUP)


def test_the_labs_directory_is_the_package(source, tmp_path):
    (tmp_path / 'Scripts').mkdir()
    (tmp_path / 'Scripts' / 'install.sh').write_text('#!/bin/sh\n')
    source('directory', str(tmp_path))
    root = package.package_dir(None, INSTANCE)
    assert root == tmp_path
    assert package_file(root, 'Scripts/install.sh') == \
        tmp_path / 'Scripts' / 'install.sh'


def test_the_labs_directory_must_be_set(source):
    source('directory')
    with pytest.raises(MgmtDriverError,
                       match=r'\[kubernetes_mgmt_lab\] vnf_package_dir'):
        package.package_dir(None, INSTANCE)


def test_tackers_source_without_tacker_says_so(source, monkeypatch):
    real_import = builtins.__import__

    def no_tacker(name, *args, **kwargs):
        if name == 'tacker' or name.startswith('tacker.'):
            raise ImportError(f'No module named {name!r}')
        return real_import(name, *args, **kwargs)

    source('tacker')
    monkeypatch.setattr(builtins, '__import__', no_tacker)
    with pytest.raises(MgmtDriverError,
                       match='vnf_package_source = tacker needs Tacker'):
        package.package_dir(None, INSTANCE)


def test_an_unknown_source_names_the_option_and_the_choices(source):
    source('csar')
    with pytest.raises(MgmtDriverError) as err:
        package.package_dir(None, INSTANCE)
    assert "[kubernetes_mgmt] vnf_package_source = 'csar'" in str(err.value)
    assert 'available: directory, tacker' in str(err.value)

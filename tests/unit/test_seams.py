"""Seams: implementations chosen by entry-point name."""
from __future__ import annotations

import sys

import pytest
from stevedore import extension

from kubernetes_mgmt import seams
from kubernetes_mgmt.errors import MgmtDriverError


@pytest.fixture
def broken_plugin(tmp_path, monkeypatch):
    """An installed distribution whose Heat client factory cannot be
    imported."""
    info = tmp_path / 'broken_plugin-0.1.dist-info'
    info.mkdir()
    (info / 'METADATA').write_text('Metadata-Version: 2.1\n'
                                   'Name: broken-plugin\nVersion: 0.1\n')
    (info / 'entry_points.txt').write_text(
        f'[{seams.HEAT_CLIENTS.group}]\n'
        'broken = no_such_module_anywhere:factory\n')
    monkeypatch.setattr(sys, 'path', [str(tmp_path), *sys.path])
    # stevedore keeps each group's entry points for the process's life;
    # forget what earlier tests read.
    monkeypatch.setattr(extension.ExtensionManager, 'ENTRY_POINT_CACHE', {})
    return 'broken'


def test_names_come_from_installed_distributions(broken_plugin):
    assert {'broken', 'lab', 'tacker'} <= set(
        seams.available(seams.HEAT_CLIENTS))


def test_a_plugin_that_cannot_load_says_which_and_why(broken_plugin):
    with pytest.raises(MgmtDriverError) as err:
        seams.load(seams.HEAT_CLIENTS, broken_plugin)
    text = str(err.value)
    assert "[kubernetes_mgmt] heat_client = 'broken'" in text
    assert 'no_such_module_anywhere:factory' in text


def test_the_products_own_implementations_are_there():
    from kubernetes_mgmt.shim import package_source as package
    from kubernetes_mgmt.topology import heat_client
    from kubernetes_mgmt.vim import registry

    assert seams.load(seams.HEAT_CLIENTS, 'tacker') is \
        heat_client.tacker_heat_client
    assert seams.load(seams.VIM_REGISTRIES, 'tacker') is \
        registry.tacker_registry
    assert seams.load(seams.PACKAGE_SOURCES, 'tacker') is \
        package.tacker_package_dir

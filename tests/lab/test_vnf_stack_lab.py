"""The VNF stacks that the hook tests run on (openstack/vnf_stack.py): a
stack the real Heat fails to create leaves nothing behind. Real: Keystone,
Heat; emulated: the compute and network APIs below Heat."""
from __future__ import annotations

import os
import secrets

import pytest

from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.openstack import access, cloud, vnf_stack
from kubernetes_mgmt_lab.openstack.layout import Root
from kubernetes_mgmt_lab.openstack.vnf_templates import Layout
from kubernetes_mgmt_lab.testing import free_subnet

pytestmark = pytest.mark.lab


def _names(conn) -> set[str]:
    return {n.name for n in conn.network.networks()}


def test_a_stack_heat_fails_to_create_leaves_nothing(site):
    # Four workers in an anti-affinity group over three compute hosts:
    # Nova finds no valid host for the fourth, and Heat fails the stack.
    name = 'kt' + secrets.token_hex(3)
    labs = cloud.labs_dir(Root(site))
    before = set(os.listdir(labs)) if os.path.isdir(labs) else set()
    layout = Layout(1, 4, anti_affinity=True)
    with pytest.raises(LabError, match='CREATE_FAILED'):
        vnf_stack.up(site, layout, name, free_subnet())
    checked = access.Site.of(site)
    assert name not in _names(checked.connection())
    assert f'vnflcm_{name}' not in {
        s.stack_name for s in checked.heat().stacks.list()}
    assert (set(os.listdir(labs)) if os.path.isdir(labs) else set()) \
        == before

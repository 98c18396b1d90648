"""Fixtures of the lab tests: one lab for the whole session.

The session lab has its own name, subnet and root (under /var/tmp, as a
developer's lab is), so that it never touches a lab the developer runs.
"""
from __future__ import annotations

import secrets
import shutil

import pytest

from kubernetes_mgmt_lab.testing import new_lab_args, unavailable_reason

SESSION_MASTERS = 2
SESSION_WORKERS = 3


def require_lab() -> None:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)


@pytest.fixture
def lab_args() -> dict:
    """Name, root and subnet for a throw-away lab of one test."""
    require_lab()
    return new_lab_args()


@pytest.fixture(scope='session')
def lab():
    """A running lab: 2 masters and 3 workers (VMs, no Heat stack).

    Tests that change hosts must put them back (or use hosts they add).
    """
    require_lab()
    from kubernetes_mgmt_lab.manager import Lab

    args = new_lab_args()
    try:
        the_lab = Lab.up(masters=SESSION_MASTERS, workers=SESSION_WORKERS,
                         password='pw-' + secrets.token_hex(8), **args)
    except BaseException:
        shutil.rmtree(args['root'], ignore_errors=True)
        raise
    try:
        yield the_lab
    finally:
        the_lab.down()


# -- a registry's CA and a small real image, for the registry modules ------
# Each such module defines its own ``reg`` (where the registry listens
# differs); ``pushed`` puts the image into that one.

@pytest.fixture(scope='module')
def ca():
    """The site CA that signs the module's registry certificate."""
    from kubernetes_mgmt_lab import pki

    return pki.Authority.new('kubernetes-mgmt-lab-site-ca')


@pytest.fixture(scope='module')
def layout(tmp_path_factory):
    """``lab/true:1.0``: a one-layer image of a small static program."""
    from kubernetes_mgmt_lab import oci_images

    return oci_images.build(str(tmp_path_factory.mktemp('layout')),
                            'lab/true', '1.0')


@pytest.fixture(scope='module')
def pushed(reg, layout) -> str:
    """``layout`` in the module's registry under its own name and tag;
    its manifest digest."""
    from kubernetes_mgmt_lab import oci_images

    return oci_images.push(layout, reg, f'{layout.name}:{layout.tag}')

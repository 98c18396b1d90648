"""Checks run with Tacker 16.0.0's own code (``tox -e tacker``).

The main suite has no Tacker: there this directory is not collected at
all. The tox env sets ``KMGMT_REQUIRE_TACKER=1``: there a Tacker that does
not import is an error, never a silent skip.

The fixtures onboard the VNF package the way tacker-conductor does, minus
its database: ``kubernetes-mgmt package build`` writes the CSAR, Tacker's
``csar_utils.load_csar_data`` validates and unpacks it under
``[vnf_package] vnf_package_csar_path``, and the one database read that
maps a VNFD id to that directory returns the row the conductor would have
inserted.
"""
from __future__ import annotations

import copy
import datetime
import json
import logging
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest

try:
    import tacker  # noqa: F401
except ImportError as exc:
    if os.environ.get('KMGMT_REQUIRE_TACKER') == '1':
        raise ImportError(
            f'KMGMT_REQUIRE_TACKER=1 but Tacker does not import ({exc}); '
            'run these checks with "tox -e tacker"') from exc
    # Paths relative to this directory: nothing here is collected.
    collect_ignore_glob = ['test_*.py']

MGMT_DRIVERS = ['vnflcm_noop', 'mgmt-drivers-kubernetes']


@dataclass(frozen=True)
class Onboarded:
    """What load_csar_data returned, and where it unpacked the CSAR."""

    package_uuid: str
    root: Path                 # <vnf_package_csar_path>/<package_uuid>
    vnf_data: dict
    flavours: dict             # flavour_id -> Tacker's flavour dict
    artifacts: list

    @property
    def vnfd_id(self) -> str:
        return self.vnf_data['descriptor_id']

    def vnfd_row(self) -> dict:
        """The vnf_package_vnfd row the conductor inserts on upload
        (conductor_server._onboard_vnf_package)."""
        return {'id': str(uuid.uuid5(uuid.NAMESPACE_URL, self.package_uuid)),
                'package_uuid': self.package_uuid,
                'vnfd_id': self.vnfd_id,
                'vnf_provider': self.vnf_data.get('provider'),
                'vnf_product_name': self.vnf_data.get('product_name'),
                'vnf_software_version':
                    self.vnf_data.get('software_version'),
                'vnfd_version': self.vnf_data.get('descriptor_version'),
                # Columns every Tacker table has (TackerPersistentObject).
                'created_at': datetime.datetime(2026, 1, 1),
                'updated_at': None, 'deleted_at': None, 'deleted': False}


@pytest.fixture(scope='session', autouse=True)
def _log_errors_like_the_conductor():
    """Let a log call with a bad format string print and carry on.

    Tacker 16 installed from PyPI has no ``etc/etsi-nfv/sol001`` next to
    its package, so every CSAR load logs "No SOL001 def file found '%'"
    (tacker/tosca/utils.py) -- a broken format string. The stdlib prints
    the formatting error and continues, as tacker-conductor does; pytest's
    log capture would raise it instead and fail the upload.
    """
    saved = logging.raiseExceptions
    logging.raiseExceptions = False
    yield
    logging.raiseExceptions = saved


@pytest.fixture(scope='session')
def tacker_context():
    from tacker import context

    # A project member with admin rights, as the conductor's context of
    # an LCM operation is.
    return context.Context(user_id=uuid.uuid4().hex,
                           project_id=uuid.uuid4().hex, is_admin=True)


@pytest.fixture(scope='session')
def tacker_conf():
    """Tacker's cfg.CONF, with its options registered and the Mgmt
    Drivers of README.rst's tacker.conf configured."""
    import tacker.conf  # noqa: F401  (registers Tacker's options)
    from oslo_config import cfg
    from tacker import objects
    from tacker.vnflcm import vnflcm_driver  # noqa: F401  ([tacker] opts)

    objects.register_all()
    cfg.CONF.set_override('vnflcm_mgmt_driver', MGMT_DRIVERS, 'tacker')
    yield cfg.CONF
    cfg.CONF.clear_override('vnflcm_mgmt_driver', 'tacker')


@pytest.fixture(scope='session')
def csar_file(tmp_path_factory) -> Path:
    """The CSAR, built by the real command of the installed plugin."""
    out = tmp_path_factory.mktemp('csar') / 'kubernetes_mgmt.zip'
    for argv in (['build', '-o', str(out)], ['verify', str(out)]):
        done = subprocess.run(
            [sys.executable, '-m', 'kubernetes_mgmt.cli', 'package', *argv],
            capture_output=True, text=True, check=False)
        assert done.returncode == 0, (
            f'kubernetes-mgmt package {argv[0]} failed:\n{done.stdout}'
            f'{done.stderr}')
    return out


@pytest.fixture(scope='session')
def csar_path(tacker_conf, tmp_path_factory) -> Path:
    """``[vnf_package] vnf_package_csar_path``: where Tacker unpacks."""
    path = tmp_path_factory.mktemp('vnfpackages')
    tacker_conf.set_override('vnf_package_csar_path', str(path),
                             'vnf_package')
    yield path
    tacker_conf.clear_override('vnf_package_csar_path', 'vnf_package')


@pytest.fixture(scope='session')
def onboarded(csar_file, csar_path, tacker_context) -> Onboarded:
    from tacker.common import csar_utils

    package_uuid = str(uuid.uuid4())
    vnf_data, flavours, artifacts = csar_utils.load_csar_data(
        tacker_context.elevated(), package_uuid, str(csar_file))
    return Onboarded(package_uuid=package_uuid,
                     root=csar_path / package_uuid, vnf_data=vnf_data,
                     flavours={f['flavour_id']: f for f in flavours},
                     artifacts=artifacts)


@pytest.fixture(scope='session')
def vnfd_query(onboarded):
    """A context manager that answers Tacker's VNFD-id lookup (a database
    query) with the row the conductor inserted on upload. Everything
    around that query is Tacker's code (VnfPackageVnfd.get_by_id,
    vnflcm utils' _get_vnf_package_path, _get_vnfd_dict)."""
    from tacker.common import exceptions
    from tacker.objects import vnf_package_vnfd

    def query(context, vnfd_id):
        if vnfd_id != onboarded.vnfd_id:
            raise exceptions.VnfPackageVnfdNotFound(id=vnfd_id)
        return onboarded.vnfd_row()

    return lambda: mock.patch.object(
        vnf_package_vnfd, '_vnf_package_vnfd_get_by_id', query)


@pytest.fixture
def vnfd_in_db(onboarded, vnfd_query) -> Onboarded:
    with vnfd_query():
        yield onboarded


@pytest.fixture(scope='session')
def lcm_driver(tacker_conf):
    """Tacker's own VnfLcmDriver, built by its real ``__init__``: it loads
    the infra and Mgmt Drivers with Tacker's DriverManager and hashes the
    Mgmt Drivers. Only its RPC client (needs a message bus) and the VNFM
    service plugin lookup (needs the API service's plugin config) are
    replaced; neither is used by the hash check or the hook calls."""
    from tacker.vnflcm import vnflcm_driver

    with mock.patch.object(vnflcm_driver.vnf_lcm_rpc, 'VNFLcmRPCAPI'), \
            mock.patch.object(vnflcm_driver.manager.TackerManager,
                              'get_service_plugins',
                              return_value={'VNFM': None}):
        return vnflcm_driver.VnfLcmDriver()


@pytest.fixture(scope='session')
def request_body():
    """A request sample shipped with the plugin (samples/requests), with
    its placeholders filled in."""
    from kubernetes_mgmt.vnf_package import layout

    def load(name: str, **replace: str) -> dict:
        path = layout.request_samples_dir() / name
        text = path.read_text(encoding='utf-8')
        for placeholder, value in replace.items():
            text = text.replace(placeholder, value)
        return json.loads(text)
    return load


@pytest.fixture(scope='session')
def tacker_request(tacker_context):
    """A request object built from a body the way Tacker's v1 API
    controller does (camelCase -> snake_case, then the object's
    obj_from_primitive), sent through the RPC serialisation to the
    conductor (obj_to_primitive / obj_from_primitive)."""
    from tacker import objects
    from tacker.common import utils

    def build(kind: str, body: dict):
        cls = getattr(objects, kind)
        req_body = utils.convert_camelcase_to_snakecase(copy.deepcopy(body))
        if kind == 'HealVnfRequest':     # the controller's _heal
            request = cls(context=tacker_context, **req_body)
        else:
            request = cls.obj_from_primitive(req_body,
                                             context=tacker_context)
        return cls.obj_from_primitive(request.obj_to_primitive(),
                                      tacker_context)
    return build

"""The ChangeCurrentVnfPackage request that upgrades a cluster (Tacker
v2, ``openstack vnflcm change-vnfpkg``), checked before any host is
touched.

Tacker 16 accepts only ``upgrade_type: RollingUpdate`` and rebuilds the
VMs of each VDU named in ``vdu_params``. The driver upgrades the nodes in
place instead (kubeadm, one minor at a time), so the request names no
VDU: ``vdu_params: []``. The driver's own options: ``max_unavailable``
(workers drained and upgraded at once) and ``drain_timeout`` (seconds a
node's drain may take before the operation stops, the node left
cordoned on its old version).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator

from kubernetes_mgmt.errors import Problem, ValidationError
from kubernetes_mgmt.params.paths import render
from kubernetes_mgmt.params.schema import NAME_MAX, findings

DEFAULT_MAX_UNAVAILABLE = 1
DEFAULT_DRAIN_TIMEOUT = 300
DRAIN_TIMEOUT_MAX = 86400

_ADDITIONAL = {
    'type': 'object', 'description': 'additional parameters',
    'properties': {
        'upgrade_type': {'enum': ['RollingUpdate'],
                         'description': 'the only type Tacker accepts'},
        'vdu_params': {'type': 'array',
                       'description': 'an empty list: the VDUs Tacker '
                                      'would rebuild'},
        'max_unavailable': {'type': 'integer', 'minimum': 1,
                            'maximum': 1000,
                            'description': 'workers upgraded at once'},
        'drain_timeout': {'type': 'integer', 'minimum': 1,
                          'maximum': DRAIN_TIMEOUT_MAX,
                          'description': 'seconds a drain may take'}},
    'required': ['upgrade_type', 'vdu_params']}

REQUEST = {
    'type': 'object', 'description': 'ChangeCurrentVnfPkgRequest',
    'properties': {
        'vnfdId': {'type': 'string', 'minLength': 1, 'maxLength': NAME_MAX,
                   'description': 'the VNFD of the package to move to'},
        'additionalParams': _ADDITIONAL},
    'required': ['vnfdId', 'additionalParams']}

_VALIDATOR = Draft202012Validator(REQUEST)


@dataclass(frozen=True)
class UpgradeOptions:
    """How the nodes are taken through the upgrade."""

    max_unavailable: int = DEFAULT_MAX_UNAVAILABLE
    drain_timeout: int = DEFAULT_DRAIN_TIMEOUT     # seconds, per node


def problems(body: Any) -> list[Problem]:
    """Every problem of the request, by field path."""
    found = [Problem(render('', path), message)
             for path, message in findings(_VALIDATOR, body)]
    params = body.get('additionalParams') if isinstance(body, dict) \
        else None
    vdus = params.get('vdu_params') if isinstance(params, dict) else None
    if isinstance(vdus, list) and vdus:
        found.append(Problem('additionalParams.vdu_params', (
            f'names {len(vdus)} VDU(s) for Tacker to rebuild; the driver '
            'upgrades the VMs in place: give an empty list')))
    return found


def parse(body: Any) -> UpgradeOptions:
    """The options of a valid request; else a ValidationError naming
    every problem."""
    found = problems(body)
    if found:
        raise ValidationError(found)
    params = body['additionalParams']
    return UpgradeOptions(
        params.get('max_unavailable', DEFAULT_MAX_UNAVAILABLE),
        params.get('drain_timeout', DEFAULT_DRAIN_TIMEOUT))

"""The other request bodies a user writes: scale, heal and terminate.

Tacker's API checks these before any hook runs; they are described here
so ``kubernetes-mgmt validate-request`` can check a file offline (the
samples in ``samples/requests/``), with the same messages as the
Instantiate request. Fields follow ETSI SOL003 as Tacker's v1 API takes
them.
"""
from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator

from kubernetes_mgmt.params import registries, rotation
from kubernetes_mgmt.params.schema import (
    NAME_MAX,
    PARAM_KEY,
    Finding,
    findings,
)

INSTANTIATE = 'instantiate'
SCALE = 'scale'
HEAL = 'heal'
TERMINATE = 'terminate'
KINDS = (INSTANTIATE, SCALE, HEAL, TERMINATE)

_ADDITIONAL = {'type': 'object', 'description': 'additional parameters'}
VNFCS_MAX = 1024        # VNFCs one heal names
CAUSE_MAX = 1024


def _request(properties: dict, required: list[str], name: str,
             additional: dict = _ADDITIONAL) -> dict:
    return {'type': 'object', 'description': name,
            'properties': {**properties, 'additionalParams': additional},
            'required': required, 'additionalProperties': False}


# A scale or heal may replace the cluster's registries (params.rotation).
_NEW_REGISTRIES = {registries.REGISTRIES_KEY: {
    **registries.REGISTRIES,
    'description': 'the private registries from now on, replacing those '
                   'of instantiate (v2 API; [] removes them all)'}}
_SCALE_ADDITIONAL = {**_ADDITIONAL, 'properties': _NEW_REGISTRIES}
_HEAL_ADDITIONAL = {
    **_ADDITIONAL,
    'properties': {'force': {
        'type': 'boolean',
        'description': 'true: heal even a node that recovered, beyond '
                       'heal_max_unhealthy or heal_repeat_limit (never '
                       "beyond etcd's quorum)"},
        **_NEW_REGISTRIES}}


SCALE_REQUEST = _request(
    {'type': {'enum': ['SCALE_OUT', 'SCALE_IN'],
              'description': 'the direction'},
     'aspectId': {'type': 'string', 'minLength': 1, 'maxLength': NAME_MAX,
                  'description': "the aspect to scale: the worker "
                                 "group's, worker_instance in the sample "
                                 "VNFD"},
     'numberOfSteps': {'type': 'integer', 'minimum': 1, 'maximum': 1000,
                       'description': 'steps of the aspect (default 1)'}},
    ['type', 'aspectId'], 'ScaleVnfRequest', _SCALE_ADDITIONAL)

HEAL_REQUEST = _request(
    {'vnfcInstanceId': {'type': 'array', 'maxItems': VNFCS_MAX,
                        'items': {'type': 'string', 'minLength': 1,
                                  'maxLength': NAME_MAX,
                                  'description': 'a VNFC instance id'},
                        'description': 'the VNFCs to heal; none or an '
                                       'empty list heals the whole VNF'},
     'cause': {'type': 'string', 'maxLength': CAUSE_MAX,
               'description': 'why'}},
    [], 'HealVnfRequest', _HEAL_ADDITIONAL)

TERMINATE_REQUEST = _request(
    {'terminationType': {'enum': ['FORCEFUL', 'GRACEFUL'],
                         'description': 'how to terminate'},
     'gracefulTerminationTimeout': {
         'type': 'integer', 'minimum': 0, 'maximum': 86400,
         'description': 'seconds to wait with GRACEFUL'}},
    ['terminationType'], 'TerminateVnfRequest')

_VALIDATORS = {kind: Draft202012Validator(schema) for kind, schema in (
    (SCALE, SCALE_REQUEST), (HEAL, HEAL_REQUEST),
    (TERMINATE, TERMINATE_REQUEST))}

# A key only one kind of request has, in the order they are tried.
_TELLING_KEYS = ((INSTANTIATE, ('flavourId',)),
                 (SCALE, ('aspectId', 'numberOfSteps')),
                 (TERMINATE, ('terminationType',
                              'gracefulTerminationTimeout')),
                 (HEAL, ('vnfcInstanceId', 'cause')))


def guess_kind(body: Any) -> str | None:
    """The kind of request ``body`` is, judged by its keys; None when no
    key tells (then the caller must be told the kind)."""
    if not isinstance(body, dict):
        return None
    for kind, keys in _TELLING_KEYS:
        if any(key in body for key in keys):
            return kind
    additional = body.get('additionalParams')
    if isinstance(additional, dict) and PARAM_KEY in additional:
        return INSTANTIATE
    return None


def request_findings(kind: str, body: Any) -> list[Finding]:
    """Problems of a scale, heal or terminate request: its structure,
    then the content of the registries a scale or heal gives."""
    found = findings(_VALIDATORS[kind], body)
    if not found and kind in (SCALE, HEAL):
        found = [(('additionalParams', *path), message) for path, message
                 in rotation.registry_findings(body.get('additionalParams'))]
    return found


def summary(kind: str, body: dict) -> list[str]:
    """What a valid request asks for, one line each."""
    if kind == SCALE:
        steps = body.get('numberOfSteps', 1)
        return [f"  operation:       {body['type']} of aspect "
                f"{body['aspectId']} by {steps} step(s)"]
    if kind == HEAL:
        vnfcs = body.get('vnfcInstanceId') or []
        target = (f'{len(vnfcs)} VNFC(s)' if vnfcs
                  else 'the whole VNF (a new stack)')
        return [f'  operation:       heal {target}']
    timeout = body.get('gracefulTerminationTimeout')
    return [f"  operation:       terminate, {body['terminationType']}"
            + (f' (timeout {timeout} s)' if timeout is not None else '')]

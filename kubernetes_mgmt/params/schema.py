"""JSON Schemas of the request and their translation into plain problems.

The schemas check structure only: required keys, unknown keys, JSON types,
non-empty strings and lists, and sizes.  What a string must look like
(CIDR, path, user name...) is checked in ``checks``/``validate`` so that
each message can say precisely what is wrong.

Every string and list has an upper bound far above any real value (the
``*_MAX`` constants), so a request of absurd size - a megabyte password,
a list of a million exports - is refused with its path before anything
reads it further.

jsonschema's own messages echo the offending value, which could be a
password, so they are never shown; ``_translate`` writes its own.
"""
from __future__ import annotations

import difflib
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError as SchemaError

from kubernetes_mgmt.params.paths import Path, show
from kubernetes_mgmt.params.registries import (
    SCHEMA_PROPERTIES as REGISTRY_KEYS,
)

PARAM_KEY = 'k8s_cluster_installation_param'
# Tacker's two VNF LCM APIs: a request differs in shape (vimConnectionInfo
# a list or a map, v2's extra SOL003 keys) and in one rule of ours (v1's
# user data sizes node groups by their aspect_id).
API_V1 = 'v1'
API_V2 = 'v2'
APIS = (API_V1, API_V2)
USER_DATA_KEY = 'lcm-operation-user-data'
USER_DATA_CLASS_KEY = 'lcm-operation-user-data-class'

Finding = tuple[Path, str]

# Upper bounds of request values.
NAME_MAX = 255          # resource, VIM and user names, ids, class names
PASSWORD_MAX = 512
PATH_MAX = 1024         # files in the package, directories on a VM
URL_MAX = 2048
NO_PROXY_MAX = 8192     # a comma-separated list
CIDR_MAX = 64           # the longest IPv6 CIDR has 43 characters
LIST_MAX = 256          # exports, volumes, PVs, links


def _text(description: str, max_length: int = NAME_MAX) -> dict:
    return {'type': 'string', 'minLength': 1, 'maxLength': max_length,
            'description': description}


def _object(properties: dict, required: list[str],
            description: str) -> dict:
    return {'type': 'object', 'description': description,
            'properties': properties, 'required': required,
            'additionalProperties': False}


def _integer(description: str, minimum: int, maximum: int,
             not_: int | None = None) -> dict:
    schema: dict[str, Any] = {'type': 'integer', 'minimum': minimum,
                              'maximum': maximum, 'description': description}
    if not_ is not None:
        schema['not'] = {'const': not_}
    return schema


def _list_of(item: dict, description: str, min_items: int = 1) -> dict:
    return {'type': 'array', 'minItems': min_items, 'maxItems': LIST_MAX,
            'items': item, 'description': description}


_NODE_COMMON = {
    'aspect_id': _text('aspect id of the node group (Heat resource name)'),
    'ssh_cp_name': _text('name of the port whose IP is used for SSH'),
    'nic_cp_name': _text('name of the port whose IP the cluster uses'),
    'username': _text('user name for SSH to the VMs'),
    # Optional: the driver logs in with its own key where the VMs took
    # the package's user data; the password is the fallback.
    'password': _text('password for SSH to the VMs (and their sudo), if '
                      'they do not take the driver\'s key', PASSWORD_MAX),
}
_NODE_REQUIRED = ['ssh_cp_name', 'nic_cp_name', 'username']

MASTER_NODE = _object(
    {**_NODE_COMMON,
     'pod_cidr': _text('pod network CIDR, e.g. 192.168.0.0/16', CIDR_MAX),
     'cluster_cidr': _text('service network CIDR, e.g. 10.96.0.0/12',
                           CIDR_MAX),
     'cluster_cp_name': _text('name of the port of the cluster IP, '
                              'the VIP port in HA'),
     'cluster_fip_name': _text('name of the floating IP resource of the '
                               'cluster IP'),
     'lb_port': _integer('HAProxy port for the API server in HA, not '
                         '6443', 1024, 65535, not_=6443),
     'virtual_router_id': _integer('VRRP router id of the VIP; unique per '
                                   'network', 1, 255)},
    [*_NODE_REQUIRED, 'cluster_cp_name'],
    'master node group')

WORKER_NODE = _object(dict(_NODE_COMMON), list(_NODE_REQUIRED),
                      'worker node group')

PROXY = _object(
    {'http_proxy': _text('proxy URL, e.g. http://user:pass@host:port',
                         URL_MAX),
     'https_proxy': _text('proxy URL, e.g. http://user:pass@host:port',
                          URL_MAX),
     'no_proxy': _text('comma-separated hosts, IPs, CIDRs or domains',
                       NO_PROXY_MAX),
     'k8s_node_cidr': _text('CIDR of the node network, e.g. 10.10.0.0/24',
                            CIDR_MAX)},
    [], 'proxy settings of the VMs')

VOLUME_SETUP = _object(
    {'volume_resource_id': _text('Heat resource id of the Cinder volume'),
     'mount_to': _text('absolute directory to mount the volume on',
                       PATH_MAX)},
    ['volume_resource_id', 'mount_to'], 'Cinder volume to set up')

WIDE_EXPORT_KEY = 'allow_wide_export'

NFS_EXPORT = _object(
    {'export_dir': _text('absolute directory to export over NFS',
                         PATH_MAX),
     'export_to': _text('network allowed to mount, e.g. 10.10.0.0/24',
                        CIDR_MAX),
     WIDE_EXPORT_KEY: {'type': 'boolean',
                       'description': 'true: export_to may be a network '
                                      'wider than /8 (IPv6: /32), such as '
                                      '0.0.0.0/0, on purpose'}},
    ['export_dir', 'export_to'], 'NFS export')

STORAGE_SERVER = _object(
    {'ssh_cp_name': _text('name of the port whose IP is used for SSH'),
     'username': _text('user name for SSH to the storage server'),
     'password': _text('password for SSH to the storage server',
                       PASSWORD_MAX),
     'cinder_volume_setup_params': _list_of(VOLUME_SETUP,
                                            'Cinder volumes to set up'),
     'nfs_server_setup_params': _list_of(NFS_EXPORT,
                                         'directories to export')},
    ['ssh_cp_name', 'username', 'cinder_volume_setup_params',
     'nfs_server_setup_params'],
    'storage server VM')

PV_REGISTRATION = _object(
    {'pv_manifest_file_path': _text('path of the PV manifest in the VNF '
                                    'package', PATH_MAX),
     'nfs_server_cp': _text('name of the port of the NFS server')},
    ['pv_manifest_file_path', 'nfs_server_cp'],
    'PersistentVolume to register')

CLUSTER_PARAM = _object(
    {'script_path': _text('path of the install script in the VNF package',
                          PATH_MAX),
     'vim_name': _text('name of the VIM to register'),
     'kubernetes_version': {'type': 'string', 'maxLength': 16,
                            'pattern': r'^1\.[0-9]{2,3}$',
                            'description': 'Kubernetes minor version, '
                                           'e.g. 1.37'},
     'master_node': MASTER_NODE,
     'worker_node': WORKER_NODE,
     'proxy': PROXY,
     'storage_server': STORAGE_SERVER,
     'pv_registration_params': _list_of(PV_REGISTRATION,
                                        'PersistentVolumes to register',
                                        min_items=0),
     **REGISTRY_KEYS},
    ['script_path', 'master_node', 'worker_node'],
    'Kubernetes cluster installation parameters')

# additionalParams is free-form KeyValuePairs (other drivers and the CNF
# namespace feature put their own keys there), so only our keys are typed.
ADDITIONAL_PARAMS = {
    'type': 'object',
    'description': 'additional parameters (KeyValuePairs)',
    'properties': {
        PARAM_KEY: CLUSTER_PARAM,
        USER_DATA_KEY: _text('path of the user data script in the VNF '
                             'package, e.g. ./UserData/file.py', PATH_MAX),
        USER_DATA_CLASS_KEY: _text('class name of the user data script'),
    },
    'required': [PARAM_KEY],
}

# SOL003 InstantiateVnfRequest as users write it; additionalParams is
# checked with ADDITIONAL_PARAMS separately so its problems carry the
# same paths whichever entry point is used.
_REQUEST_PROPERTIES = {
    'flavourId': _text('deployment flavour id from the VNFD'),
    'instantiationLevelId': _text('instantiation level id'),
    'extVirtualLinks': {'type': 'array', 'items': {'type': 'object'},
                        'maxItems': LIST_MAX,
                        'description': 'external virtual links'},
    'extManagedVirtualLinks': {'type': 'array',
                               'items': {'type': 'object'},
                               'maxItems': LIST_MAX,
                               'description': 'externally managed '
                                              'virtual links'},
    # A list in the v1 API (a map keyed by id in the v2 API, below).
    'vimConnectionInfo': {'type': 'array', 'items': {'type': 'object'},
                          'maxItems': LIST_MAX,
                          'description': 'VIM connection information, a '
                                         'list in the v1 API'},
    'localizationLanguage': _text('localization language'),
    'additionalParams': {'type': 'object',
                         'description': 'additional parameters'},
}
INSTANTIATE_REQUEST = _object(_REQUEST_PROPERTIES,
                              ['flavourId', 'additionalParams'],
                              'InstantiateVnfRequest')
INSTANTIATE_REQUEST_V2 = _object(
    {**_REQUEST_PROPERTIES,
     'vimConnectionInfo': {'type': 'object', 'maxProperties': LIST_MAX,
                           'description': 'VIM connection information, '
                                          'a map keyed by id in the v2 '
                                          'API'},
     'extensions': {'type': 'object',
                    'description': 'extensions (KeyValuePairs)'},
     'vnfConfigurableProperties': {
         'type': 'object',
         'description': 'configurable properties (KeyValuePairs)'}},
    ['flavourId', 'additionalParams'],
    'InstantiateVnfRequest of the v2 API')

for _schema in (ADDITIONAL_PARAMS, INSTANTIATE_REQUEST,
                INSTANTIATE_REQUEST_V2):
    Draft202012Validator.check_schema(_schema)

_ADDITIONAL_VALIDATOR = Draft202012Validator(ADDITIONAL_PARAMS)
_REQUEST_VALIDATORS = {API_V1: Draft202012Validator(INSTANTIATE_REQUEST),
                       API_V2: Draft202012Validator(INSTANTIATE_REQUEST_V2)}

_JSON_TYPES = {
    'object': 'an object', 'array': 'a list', 'string': 'a string',
    'integer': 'an integer', 'number': 'a number', 'boolean': 'a boolean',
    'null': 'null',
}


def api_of(body: Any) -> tuple[str, str]:
    """(API, why) of an Instantiate request body: its vimConnectionInfo
    is a list in Tacker's v1 API and a map keyed by id in the v2 API."""
    info = body.get('vimConnectionInfo') if isinstance(body, dict) else None
    if isinstance(info, dict):
        return API_V2, 'vimConnectionInfo is a map'
    if isinstance(info, list):
        return API_V1, 'vimConnectionInfo is a list'
    return API_V1, 'no vimConnectionInfo; --api v2 for the v2 API'


def additional_params_findings(instance: Any) -> list[Finding]:
    """Structural problems of ``additionalParams``."""
    return findings(_ADDITIONAL_VALIDATOR, instance)


def request_findings(instance: Any, api: str = API_V1) -> list[Finding]:
    """Structural problems of the request body (not of additionalParams)
    as Tacker's ``api`` takes it."""
    return findings(_REQUEST_VALIDATORS[api], instance)


def findings(validator: Draft202012Validator,
             instance: Any) -> list[Finding]:
    """Structural problems of ``instance`` under ``validator``'s schema,
    in this module's words (never echoing a value)."""
    found: list[Finding] = []
    for error in validator.iter_errors(instance):
        found.extend(_translate(error))
    return found


def _translate(error: SchemaError) -> list[Finding]:
    where: Path = tuple(error.absolute_path)
    kind = error.validator
    if kind == 'additionalProperties':
        return _unknown_keys(where, error.instance, error.schema)
    if kind == 'required':
        return _missing_keys(where, error.instance, error.schema)
    if kind == 'type':
        return [(where, _type_message(error))]
    if kind == 'minLength':
        return [(where, 'must be a non-empty string'
                 + _hint(error.schema))]
    if kind == 'maxLength':
        return [(where, f'must be at most {error.validator_value} '
                 'characters long')]
    if kind == 'minItems':
        return [(where, 'must be a list with at least '
                 f'{error.validator_value} entry' + _hint(error.schema))]
    if kind in ('maxItems', 'maxProperties'):
        return [(where, 'must have at most '
                 f'{error.validator_value} entries')]
    if kind in ('minimum', 'maximum'):
        return [(where, f'must be between {error.schema["minimum"]} and '
                 f'{error.schema["maximum"]}' + _hint(error.schema))]
    if kind == 'not':
        return [(where, 'must not be '
                 f'{error.validator_value["const"]}' + _hint(error.schema))]
    if kind == 'enum':
        return [(where, 'must be one of: '
                 + ', '.join(map(str, error.validator_value))
                 + _hint(error.schema))]
    if kind == 'pattern':
        return [(where, 'has the wrong format' + _hint(error.schema))]
    # Not reached with the schemas above; kept generic and value-free.
    return [(where, f'does not satisfy "{kind}"')]


def _hint(schema: Any) -> str:
    description = schema.get('description') if isinstance(
        schema, dict) else None
    return f' ({description})' if description else ''


def _type_message(error: SchemaError) -> str:
    wanted = error.validator_value
    names = [wanted] if isinstance(wanted, str) else list(wanted)
    expected = ' or '.join(_JSON_TYPES.get(n, n) for n in names)
    actual = _JSON_TYPES[_json_type(error.instance)]
    return f'must be {expected}{_hint(error.schema)}, not {actual}'


def _json_type(value: Any) -> str:
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'boolean'
    if isinstance(value, int):
        return 'integer'
    if isinstance(value, float):
        return 'number'
    if isinstance(value, str):
        return 'string'
    if isinstance(value, list):
        return 'array'
    return 'object'


def _unknown_keys(where: Path, instance: dict,
                  schema: dict) -> list[Finding]:
    known = list(schema.get('properties', {}))
    found: list[Finding] = []
    for key in instance:
        if key in known:
            continue
        found.append(((*where, key), _unknown_key_message(key, known)))
    return found


def _unknown_key_message(key: str, known: list[str]) -> str:
    match = suggest(key, known)
    if match:
        return f"unknown key; did you mean '{match}'?"
    return 'unknown key; expected one of: ' + ', '.join(sorted(known))


def suggest(key: str, candidates: list[str]) -> str | None:
    """The candidate closest to a mistyped ``key``, if any is close."""
    # Case and separator mistakes (podCidr, pod-cidr) first, then spelling.
    by_shape = {_shape(c): c for c in candidates}
    if _shape(key) in by_shape:
        return by_shape[_shape(key)]
    by_lower = {c.lower(): c for c in candidates}
    close = difflib.get_close_matches(key.lower(), list(by_lower), n=1,
                                      cutoff=0.6)
    return by_lower[close[0]] if close else None


def _shape(key: str) -> str:
    return key.lower().replace('_', '').replace('-', '')


def _missing_keys(where: Path, instance: dict,
                  schema: dict) -> list[Finding]:
    # jsonschema reports each missing key separately; list them all here
    # and let the caller drop duplicates.
    properties = schema.get('properties', {})
    found: list[Finding] = []
    for key in schema.get('required', []):
        if key in instance:
            continue
        message = 'is required' + _hint(properties.get(key, {}))
        stray = suggest(key, [k for k in instance if k not in properties])
        if stray is not None:
            message += f'; found {show(stray)} instead'
        found.append(((*where, key), message))
    return found

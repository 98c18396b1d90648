"""``kubernetes-mgmt validate-request FILE``: check a request offline.

Reads a request body (the file given to ``openstack vnflcm instantiate``,
``scale``, ``heal`` or ``terminate``) and validates it without contacting
anything: an Instantiate request exactly like the driver will under the
Tacker API it is for (v1 or v2: told by its vimConnectionInfo, a list or a
map, or given with --api), a CNF's (Kubernetes VIMs, resource files) as
the kubernetes-namespaced driver does without the package, the others
against their SOL003 shape. Fields
that still hold a sample's
``REPLACE_WITH_...`` placeholder are named. Exit status: 0 valid, 1
invalid request, 2 the file cannot be read, is not JSON or its kind
cannot be told.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from kubernetes_mgmt.cnf import request_check as cnf_request
from kubernetes_mgmt.errors import ValidationError
from kubernetes_mgmt.params import checks, lcm_requests
from kubernetes_mgmt.params import cluster_params as model
from kubernetes_mgmt.params.paths import Path, render, sort_key
from kubernetes_mgmt.params.schema import API_V1, APIS, api_of
from kubernetes_mgmt.params.validate import parse_instantiate_request

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_UNREADABLE = 2

PLACEHOLDER = 'REPLACE_WITH_'
_PLACEHOLDER_WORD = re.compile(PLACEHOLDER + '[A-Z0-9_]+')


class _FileProblem(Exception):
    """The file is not a JSON document; the message is one line."""


class _DuplicateKey(ValueError):
    """An object repeats a key."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        'validate-request',
        help='validate a request JSON file (instantiate, scale, heal, '
             'terminate) offline',
        description='Validate the body of an Instantiate, Scale, Heal or '
                    'Terminate VNF request (the files in samples/requests) '
                    'without contacting any host: an Instantiate request '
                    '(flavourId, additionalParams.'
                    'k8s_cluster_installation_param...) exactly as the '
                    'driver will, the others against their ETSI SOL003 '
                    'shape. Fields still holding a REPLACE_WITH_... '
                    'placeholder are reported. Exit status 0: valid, '
                    '1: invalid, 2: unreadable, not JSON, or of a kind '
                    'that cannot be told (give --kind).')
    parser.add_argument('file', metavar='FILE',
                        help='JSON file with the request body')
    parser.add_argument('--kind', choices=lcm_requests.KINDS,
                        help='the kind of request (default: told by its '
                             'keys, e.g. flavourId: instantiate, aspectId: '
                             'scale, terminationType: terminate, '
                             'vnfcInstanceId or cause: heal)')
    parser.add_argument('--api', choices=APIS,
                        help="the Tacker VNF LCM API the Instantiate "
                             'request is for (default: told by its '
                             'vimConnectionInfo, a list: v1, a map: v2; '
                             'without one, v1). Under v2 the node groups '
                             'need no aspect_id for the user data')
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        body = load_json(args.file)
    except _FileProblem as exc:
        print(f'error: {exc}', file=sys.stderr)
        return EXIT_UNREADABLE
    kind = args.kind or lcm_requests.guess_kind(body)
    if kind is None and not isinstance(body, dict):
        kind = lcm_requests.INSTANTIATE   # says: must be an object
    if kind is None:
        print(f'error: {args.file}: cannot tell which request this is; '
              'give --kind (one of: ' + ', '.join(lcm_requests.KINDS)
              + ')', file=sys.stderr)
        return EXIT_UNREADABLE
    problems, text = _check(kind, args.file, body, args.api)
    held = placeholders(body)
    # A placeholder is no CIDR, say: the one line to act on is its own.
    problems = [p for p in problems
                if not any(p.startswith(f'{render("", path)}: ')
                           for path, _ in held)]
    problems += [f'{render("", path)}: still holds the sample\'s '
                 f'placeholder {word}; replace it' for path, word in held]
    if problems:
        for problem in problems:
            print(problem, file=sys.stderr)
        return EXIT_INVALID
    print(text)
    return EXIT_OK


def _check(kind: str, file_name: str, body: Any,
           api: str | None = None) -> tuple[list[str], str]:
    """(problems, summary) of ``body`` as a request of ``kind``."""
    if kind == lcm_requests.INSTANTIATE and cnf_request.is_cnf_instantiate(
            body):
        return _check_cnf(file_name, body)
    if kind == lcm_requests.INSTANTIATE:
        api, why = (api, '--api') if api else api_of(body)
        try:
            params = parse_instantiate_request(body, api)
        except ValidationError as exc:
            return [str(problem) for problem in exc.problems], ''
        return [], summary(file_name, body, params, f'{api} ({why})')
    found = lcm_requests.request_findings(kind, body)
    if found:
        found.sort(key=lambda finding: sort_key(finding[0]))
        return [f'{render("", path)}: {message}'
                for path, message in found], ''
    return [], '\n'.join([f'{file_name}: valid {kind} request',
                          *lcm_requests.summary(kind, body)])


def _check_cnf(file_name: str, body: dict) -> tuple[list[str], str]:
    """A CNF's Instantiate request, as far as the kubernetes-namespaced
    driver can check it without the package."""
    params = body.get('additionalParams')
    problems = cnf_request.shape_problems(params)
    if problems:
        return [str(p) for p in problems], ''
    return [], '\n'.join([
        f'{file_name}: valid instantiate request for the '
        'kubernetes-namespaced CNF driver',
        f'  namespace:       {params.get("namespace") or "(from the files)"}',
        f'  resource files:  {len(params[cnf_request.FILES_KEY])}; '
        'their objects are checked against the package by '
        f'"kubernetes-mgmt package verify PACKAGE --request {file_name}"'])


def placeholders(node: Any, at: Path = ()) -> list[tuple[Path, str]]:
    """Paths of the strings that still hold a ``REPLACE_WITH_...``
    placeholder, with the placeholder word."""
    if isinstance(node, dict):
        return [found for key, value in node.items()
                for found in placeholders(value, (*at, key))]
    if isinstance(node, list):
        return [found for index, value in enumerate(node)
                for found in placeholders(value, (*at, index))]
    if isinstance(node, str) and PLACEHOLDER in node:
        # Messages never show a password field's value, not even this.
        if at and isinstance(at[-1], str) and 'password' in at[-1].lower():
            return [(at, PLACEHOLDER + '...')]
        # Only the placeholder's own word: the rest of a string (a proxy
        # URL) may hold a credential.
        word = _PLACEHOLDER_WORD.search(node)
        return [(at, word.group(0)[:60] if word else PLACEHOLDER + '...')]
    return []


def load_json(file_name: str) -> Any:
    """Parse ``file_name``; raise _FileProblem with a one-line reason."""
    try:
        with open(file_name, encoding='utf-8-sig') as stream:
            text = stream.read()
    except OSError as exc:
        raise _FileProblem(
            f'cannot read {file_name}: {exc.strerror or exc}') from None
    except UnicodeDecodeError as exc:
        raise _FileProblem(f'{file_name} is not UTF-8 text (byte '
                           f'{exc.start})') from None
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as exc:
        raise _FileProblem(_json_error(file_name, exc)) from None
    except _DuplicateKey as exc:
        raise _FileProblem(f'{file_name}: key {exc} appears twice in the '
                           'same object') from None
    except RecursionError:
        raise _FileProblem(f'{file_name}: JSON nested too deeply') from None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    # Python keeps the last of repeated keys silently; a repeated key in a
    # hand-written request is a mistake worth stopping for.
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(json.dumps(key))
        result[key] = value
    return result


def _json_error(file_name: str, exc: json.JSONDecodeError) -> str:
    where = f'{file_name}: line {exc.lineno} column {exc.colno}'
    if exc.doc[exc.pos:exc.pos + 1] == '#' or \
            exc.doc[exc.pos:exc.pos + 2] in ('//', '/*'):
        return (f'{where}: comments are not allowed in JSON; remove the '
                f'comment on line {exc.lineno}')
    return f'{where}: invalid JSON: {exc.msg}'


def summary(file_name: str, body: dict, params: model.ClusterParams,
            api: str = API_V1) -> str:
    """A short human summary of a valid request; never any secret."""
    master, worker = params.master, params.worker
    lines = [
        f'{file_name}: valid',
        f'  API:             {api}',
        f"  flavour:         {body['flavourId']}",
        f'  VIM name:        {params.vim_name or "(not set)"}',
        f'  master group:    {_group(master)}, cluster CP '
        f'{master.cluster_cp_name}'
        + (f', FIP {master.cluster_fip_name}'
           if master.cluster_fip_name else ''),
        f'  worker group:    {_group(worker)}',
        f'  pod CIDR:        {master.pod_cidr}',
        f'  service CIDR:    {master.cluster_cidr}',
        f'  Kubernetes:      {_kubernetes(params.kubernetes_version)}',
        f'  proxy:           {_proxy(params.proxy)}',
        f'  storage server:  {_storage(params.storage_server)}',
        f'  PVs to register: {len(params.pv_registrations)}',
    ]
    return '\n'.join(lines)


def _kubernetes(requested: str | None) -> str:
    # The package is not at hand here: package verify --request compares.
    if requested:
        return (f'{requested} (the request\'s: a VNF package naming '
                'another minor in its software_version refuses it)')
    return ('not set: the VNF package\'s software_version when it is a '
            'minor, else [kubernetes_mgmt] kubernetes_version')


def _group(node: model.NodeGroupParams) -> str:
    aspect = node.aspect_id or '(no aspect_id)'
    return (f'{aspect} (ssh CP {node.ssh_cp_name}, nic CP '
            f'{node.nic_cp_name}, user {node.username})')


def _proxy(proxy: model.ProxyParams | None) -> str:
    if proxy is None or not (proxy.http_proxy or proxy.https_proxy):
        return 'off'
    kinds = [name for name, url in (('http', proxy.http_proxy),
                                    ('https', proxy.https_proxy)) if url]
    return 'on (' + ', '.join(kinds) + ')'


def _storage(storage: model.StorageServerParams | None) -> str:
    if storage is None:
        return 'no'
    wide = [e.export_to for e in storage.exports if e.allow_wide_export
            and checks.too_wide(e.export_to)]
    return (f'yes (ssh CP {storage.ssh_cp_name}, '
            f'{len(storage.volumes)} volume(s), '
            f'{len(storage.exports)} NFS export(s)'
            + (f', wide on purpose to {", ".join(wide)}' if wide else '')
            + ')')

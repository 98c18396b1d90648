"""``kubernetes-mgmt validate-request FILE``: check a request offline.

Reads an InstantiateVnfRequest body (the file given to ``openstack vnflcm
instantiate``) and validates it exactly like the driver will, without
contacting anything.  Exit status: 0 valid, 1 invalid request, 2 the file
cannot be read or is not JSON.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kubernetes_mgmt.errors import ValidationError
from kubernetes_mgmt.params import model
from kubernetes_mgmt.params.validate import parse_instantiate_request

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_UNREADABLE = 2


class _FileProblem(Exception):
    """The file is not a JSON document; the message is one line."""


class _DuplicateKey(ValueError):
    """An object repeats a key."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        'validate-request',
        help='validate an InstantiateVnfRequest JSON file offline',
        description='Validate the body of an Instantiate VNF request '
                    '(flavourId, additionalParams.'
                    'k8s_cluster_installation_param...) without '
                    'contacting any host. Exit status 0: valid, '
                    '1: invalid, 2: unreadable or not JSON.')
    parser.add_argument('file', metavar='FILE',
                        help='JSON file with the request body')
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        body = load_json(args.file)
    except _FileProblem as exc:
        print(f'error: {exc}', file=sys.stderr)
        return EXIT_UNREADABLE
    try:
        params = parse_instantiate_request(body)
    except ValidationError as exc:
        # Messages are built never to contain a secret (see checks).
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return EXIT_INVALID
    print(summary(args.file, body, params))
    return EXIT_OK


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


def summary(file_name: str, body: dict,
            params: model.ClusterParams) -> str:
    """A short human summary of a valid request; never any secret."""
    master, worker = params.master, params.worker
    lines = [
        f'{file_name}: valid',
        f"  flavour:         {body['flavourId']}",
        f'  VIM name:        {params.vim_name or "(not set)"}',
        f'  master group:    {_group(master)}, cluster CP '
        f'{master.cluster_cp_name}'
        + (f', FIP {master.cluster_fip_name}'
           if master.cluster_fip_name else ''),
        f'  worker group:    {_group(worker)}',
        f'  pod CIDR:        {master.pod_cidr}',
        f'  service CIDR:    {master.cluster_cidr}',
        f'  proxy:           {_proxy(params.proxy)}',
        f'  storage server:  {_storage(params.storage_server)}',
        f'  PVs to register: {len(params.pv_registrations)}',
    ]
    return '\n'.join(lines)


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
    return (f'yes (ssh CP {storage.ssh_cp_name}, '
            f'{len(storage.volumes)} volume(s), '
            f'{len(storage.exports)} NFS export(s))')

"""What kubectl's verbs share: the kubeconfig and the connection to the
cluster, namespaces, and ``TYPE NAME`` / ``TYPE/NAME`` arguments."""
from __future__ import annotations

import base64
import os
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import InvalidSignature

from kubernetes_mgmt_lab.emulated import cluster, kinds, kubeconfig, store
from kubernetes_mgmt_lab.emulated import tokens as tokmod
from kubernetes_mgmt_lab.emulated.flags import Flag, Parsed
from kubernetes_mgmt_lab.emulated.host import host_path
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context

GLOBAL = [Flag('kubeconfig'), Flag('namespace', short='n'),
          Flag('context'), Flag('cluster'), Flag('user'),
          Flag('request-timeout'), Flag('v', short='v'),
          Flag('server', short='s'), Flag('token'),
          Flag('insecure-skip-tls-verify', value=False),
          Flag('certificate-authority'), Flag('warnings-as-errors',
                                              value=False)]


class KubectlError(CommandError):
    """``error: ...`` as kubectl prints it."""

    def __init__(self, message: str):
        super().__init__(f'error: {message}', 1)


def not_found(kind: kinds.Kind, name: str) -> CommandError:
    return CommandError(f'Error from server (NotFound): {kind.resource} '
                        f'"{name}" not found', 1)


@dataclass
class Session:
    """A kubectl invocation that reached the (emulated) API server."""
    ctx: Context
    opts: Parsed
    config: kubeconfig.Kubeconfig | None

    @property
    def cluster_dir(self) -> str:
        return self.ctx.cluster_dir

    def namespace(self) -> str:
        return self.opts.get('namespace') or \
            (self.config.namespace if self.config else None) or 'default'

    def read(self) -> dict:
        return store.read(self.cluster_dir)


def _find_config(opts: Parsed) -> kubeconfig.Kubeconfig | None:
    for path in kubeconfig.candidates(opts.get('kubeconfig')):
        if os.path.exists(host_path(path)):
            return kubeconfig.load(path)
        if opts.get('kubeconfig'):
            raise KubectlError(f'stat {path}: no such file or directory')
    return None


def _refused(host: str, port: int) -> CommandError:
    return CommandError(f'The connection to the server {host}:{port} was '
                        'refused - did you specify the right host or '
                        'port?', 1)


def _check_identity(config: kubeconfig.Kubeconfig, state: dict,
                    insecure: bool) -> None:
    ca = state['cluster'].get('ca_pem', '').encode()
    if not insecure and config.ca_pem and ca and config.ca_pem != ca:
        raise CommandError('Unable to connect to the server: tls: failed '
                           'to verify certificate: x509: certificate signed '
                           'by unknown authority', 1)
    user = config.user
    if user.get('token'):
        ok = tokmod.bearer_valid(state, user['token'])
    elif user.get('client-certificate-data') and ca:
        ok = _signed_by(user['client-certificate-data'], ca)
    else:
        ok = True
    if not ok:
        raise CommandError('error: You must be logged in to the server '
                           '(Unauthorized)', 1)


def _signed_by(cert_b64: str, ca_pem: bytes) -> bool:
    try:
        cert = x509.load_pem_x509_certificate(base64.b64decode(cert_b64))
        cert.verify_directly_issued_by(
            x509.load_pem_x509_certificate(ca_pem))
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def connect(ctx: Context, opts: Parsed) -> Session:
    """Find the kubeconfig and really reach its server, as kubectl
    does before any API call."""
    config = _find_config(opts)
    if config is None and not opts.get('server'):
        raise _refused('localhost', 8080)
    if opts.get('server'):
        doc = dict(config.doc) if config else {}
        doc['current-context'] = 'flag'
        doc['contexts'] = [{'name': 'flag', 'context': {
            'cluster': 'flag', 'user': 'flag'}}]
        doc['clusters'] = [{'name': 'flag', 'cluster': {
            'server': opts.get('server'),
            'certificate-authority-data': config.cluster.get(
                'certificate-authority-data') if config else None}}]
        doc['users'] = [{'name': 'flag', 'user': {
            'token': opts.get('token')} if opts.get('token') else
            (config.user if config else {})}]
        config = kubeconfig.Kubeconfig('', doc)
    host, port = config.host_port()
    why = kubeconfig.reachable(host, port, tls=True)
    if why == 'refused':
        raise _refused(host, port)
    if why is not None:
        detail = why if why == 'EOF' else \
            f'dial tcp {host}:{port}: {why.replace("timeout", "i/o timeout")}'
        raise CommandError(f'Unable to connect to the server: {detail}', 1)
    state = store.read(ctx.cluster_dir)
    _check_identity(config, state,
                    bool(opts.get('insecure-skip-tls-verify')))
    return Session(ctx, opts, config)


def resolve_kind(name: str, state: dict | None = None) -> kinds.Kind:
    kind = kinds.lookup(name)
    if kind is not None:
        return kind
    for stored in (state or {}).get('objects', {}):
        candidate = kinds.for_object({'kind': stored})
        if name.lower() in (candidate.plural, stored.lower()):
            return candidate
    raise CommandError(f'error: the server doesn\'t have a resource type '
                       f'"{name}"', 1)


def targets(args: list[str], state: dict | None = None
            ) -> list[tuple[kinds.Kind, str | None]]:
    """``nodes a b`` / ``node/a pv/b`` / ``nodes`` -> (kind, name|None)."""
    if not args:
        raise KubectlError('you must specify the type of resource to get.')
    if '/' in args[0]:
        out = []
        for arg in args:
            if '/' not in arg:
                raise KubectlError('there is no need to specify a resource '
                                   'type as a separate argument when '
                                   'passing arguments in resource/name form')
            kind, _, name = arg.partition('/')
            out.append((resolve_kind(kind, state), name))
        return out
    kind_names = args[0].split(',')
    if len(kind_names) > 1 and len(args) > 1:
        raise KubectlError('arguments in resource/name form must have a '
                           'single resource and name')
    if len(args) == 1:
        return [(resolve_kind(k, state), None) for k in kind_names]
    kind = resolve_kind(args[0], state)
    return [(kind, name) for name in args[1:]]


def scoped_ns(kind: kinds.Kind, namespace: str | None) -> str | None:
    return namespace if kind.namespaced else None


def get_one(state: dict, kind: kinds.Kind, name: str,
            namespace: str | None) -> dict:
    obj = cluster.find(state, kind.kind, name, scoped_ns(kind, namespace))
    if obj is None:
        raise not_found(kind, name)
    return obj

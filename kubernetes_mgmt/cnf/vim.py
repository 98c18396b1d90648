"""The VIM's credentials, and API clients built from them.

Tacker hands a Kubernetes VIM's ``access_info`` (``auth_url``,
``bearer_token``, ``ssl_ca_cert``) to every infra-driver call. Each
operation builds its own ``ApiClient`` (the client's global default
configuration is never touched) and writes the CA to a private 0600 file
that is removed when the operation ends.

The API server is always reached over https and always verified: a
plain http URL is refused, and a VIM without a CA - which Tacker's own
Kubernetes driver takes as "do not verify" - is verified against the
host's trust store, with a warning once per operation.
"""
from __future__ import annotations

import contextlib
import os
import re
import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field

from kubernetes import client as k8s

from kubernetes_mgmt import redact
from kubernetes_mgmt.errors import Problem, ValidationError

LOG = redact.get_logger(__name__)
_NONE = ('', 'None', 'NONE', 'null', 'NULL')   # how Tacker stores "no CA"
# Operations (redaction scopes) already warned about a VIM without a CA.
_WARNED: weakref.WeakSet = weakref.WeakSet()
_WARNED_LOCK = threading.Lock()
_PEM = re.compile(r'-----BEGIN CERTIFICATE-----(.*?)-----END CERTIFICATE-----',
                  re.S)


@dataclass(frozen=True)
class VimAccess:
    auth_url: str
    bearer_token: str = field(repr=False)
    ca_pem: str | None = field(default=None, repr=False)

    @classmethod
    def from_access_info(cls, access_info: dict | None) -> VimAccess:
        info = dict(access_info or {})
        token = info.get('bearer_token')
        redact.register(token)
        problems = []
        url = info.get('auth_url')
        if not isinstance(url, str) or \
                not url.lower().startswith('https://'):
            problems.append(Problem('vimConnectionInfo.accessInfo.auth_url',
                                    _url_problem(url)))
        if not isinstance(token, str) or token in _NONE:
            problems.append(Problem(
                'vimConnectionInfo.accessInfo.bearer_token',
                'required: the kubernetes-namespaced driver authenticates '
                'with a bearer token'))
        if problems:
            raise ValidationError(problems)
        ca = info.get('ssl_ca_cert')
        return cls(url.rstrip('/'), token,
                   None if ca in _NONE or ca is None else normalise_pem(ca))


def _url_problem(url: object) -> str:
    if isinstance(url, str) and url.lower().startswith('http://'):
        return ('is a plain http:// URL: the bearer token would cross '
                'the network unencrypted and the API server would not be '
                'authenticated; register the VIM with the https:// URL '
                'of the Kubernetes API server (and its CA in ssl_ca_cert)')
    return 'must be the https:// URL of the Kubernetes API server'


def normalise_pem(text: str) -> str:
    """Tacker may store the PEM with its newlines turned into spaces;
    rebuild every certificate block with 64-column base64 lines."""
    blocks = []
    for body in _PEM.findall(text):
        data = ''.join(body.split())
        lines = [data[i:i + 64] for i in range(0, len(data), 64)]
        blocks.append('\n'.join(['-----BEGIN CERTIFICATE-----', *lines,
                                 '-----END CERTIFICATE-----']))
    return '\n'.join(blocks) + '\n' if blocks else text


def warn_without_ca(vim: VimAccess) -> None:
    """Once per operation: the VIM has no CA, which Tacker's own driver
    takes as "skip certificate verification". This driver never skips
    it; the system trust store must then hold the cluster's CA."""
    if vim.ca_pem:
        return
    scope = redact.current()
    if scope is not None:
        with _WARNED_LOCK:
            if scope in _WARNED:
                return
            _WARNED.add(scope)
    LOG.warning('VIM %s has no CA certificate (ssl_ca_cert): Tacker\'s own '
                'Kubernetes driver turns certificate verification off for '
                'such a VIM; this driver does not, and verifies the API '
                'server against this host\'s trust store. Register the '
                'VIM with the cluster\'s CA certificate.', vim.auth_url)


@contextlib.contextmanager
def api_client(vim: VimAccess, workdir: str) -> Iterator[k8s.ApiClient]:
    """An ApiClient for one operation. The CA goes to a 0600 file in
    ``workdir``, a private directory the caller removes afterwards."""
    config = k8s.Configuration()
    config.host = vim.auth_url
    config.api_key = {'authorization': f'Bearer {vim.bearer_token}'}
    if vim.ca_pem:
        ca_path = os.path.join(workdir, 'ca.crt')
        descriptor = os.open(ca_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                             0o600)
        with os.fdopen(descriptor, 'w', encoding='ascii') as ca_file:
            ca_file.write(vim.ca_pem)
        config.ssl_ca_cert = ca_path
    # Without a CA the system trust store verifies the server: never
    # silently skip verification.
    config.verify_ssl = True
    client = k8s.ApiClient(configuration=config)
    try:
        yield client
    finally:
        client.close()

"""A real container registry for the lab: Debian's ``docker-registry``
(distribution 2.8) over HTTPS with Basic authentication, as an
air-gapped site runs one.

Real: TLS with a certificate of a lab CA naming the registry's IP,
optionally client certificates (mutual TLS), bcrypt htpasswd
authentication, the v2 API, filesystem storage. Its access log (Combined
Log Format, the registry's stdout) lets a test show which requests
reached it, or that none did.
"""
from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import os
import re
import secrets
import ssl
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field

import bcrypt

from kubernetes_mgmt import redact
from kubernetes_mgmt_lab import childproc, net, pki

BINARY = '/usr/bin/docker-registry'
REALM = 'kubernetes-mgmt-lab-registry'
# The lab registry's only cost is the CPU of the machine running the
# tests: every authenticated request checks the hash. 10 is bcrypt's
# usual cost and keeps a pull's dozen requests cheap.
BCRYPT_ROUNDS = 10
PROBE_TIMEOUT = 5.0

# "GET /v2/lab/true/manifests/1.0 HTTP/1.1" 200 ...
_REQUEST_LINE = re.compile(r'"([A-Z]+) (\S+) HTTP/[\d.]+" (\d{3})')


@dataclass(frozen=True)
class LabRegistry:
    """A running registry and what a client needs to use it."""

    address: str            # IP:PORT, the registry's host in image refs
    url: str                # https://IP:PORT
    ca_pem: bytes = field(repr=False)   # the CA of its certificate
    username: str
    password: str = field(repr=False)
    log_path: str           # the access log
    root: str               # config, certificates, storage, logs
    # Mutual TLS: the registry wants a client certificate of this CA, and
    # the pair below is one (both None when it does not).
    client_cert_pem: bytes | None = field(default=None, repr=False)
    client_key_pem: bytes | None = field(default=None, repr=False)
    child: childproc.Child | None = field(default=None, repr=False,
                                          compare=False)

    @property
    def pid(self) -> int | None:
        return self.child.pid if self.child else None

    @property
    def basic_auth(self) -> str:
        """The Authorization header value of its user."""
        return basic_auth(self.username, self.password)


@dataclass(frozen=True)
class LoggedRequest:
    """One line of the registry's access log."""

    method: str
    path: str
    status: int

    def __str__(self) -> str:
        return f'{self.method} {self.path} {self.status}'


def basic_auth(username: str, password: str) -> str:
    token = base64.b64encode(f'{username}:{password}'.encode()).decode()
    return f'Basic {token}'


def start(root: str, ip: str, port: int, *,
          ca: pki.Authority | None = None, username: str = 'lab',
          password: str | None = None, mutual_tls: bool = False,
          netns: str | None = None) -> LabRegistry:
    """Serve a new registry on ``ip:port`` (reachable from this machine;
    inside lab VM ``netns`` if given), everything under ``root``. ``ca``
    signs its certificate (a new CA when None); with ``mutual_tls`` it
    also asks clients for a certificate of that CA."""
    ca = ca or pki.Authority.new('kubernetes-mgmt-lab-registry-ca')
    password = password or secrets.token_urlsafe(18)
    # Kept out of logs and errors, as the Basic token carrying it.
    redact.register(password, basic_auth(username, password).split()[1])
    os.makedirs(root, mode=0o700, exist_ok=True)
    paths = _write_files(root, ca, ip, port, username, password,
                         mutual_tls)
    client = ca.issue('lab-registry-client') if mutual_tls else (None, None)
    registry = LabRegistry(
        address=f'{ip}:{port}', url=f'https://{ip}:{port}',
        ca_pem=ca.cert_pem, username=username, password=password,
        log_path=paths['access'], root=root,
        client_cert_pem=client[0], client_key_pem=client[1])
    child = childproc.start(
        [BINARY, 'serve', paths['config']], what='the lab registry',
        log_path=os.path.join(root, 'registry.log'),
        stdout_path=paths['access'], netns=netns,
        ready=lambda: _answers_401(registry))
    return dataclasses.replace(registry, child=child)


@contextlib.contextmanager
def running(root: str, ip: str, **options) -> Iterator[LabRegistry]:
    """``start`` on a free port of ``ip`` for the block, then ``stop``."""
    registry = start(root, ip, net.free_port(ip, 0), **options)
    try:
        yield registry
    finally:
        stop(registry)


def stop(registry: LabRegistry) -> None:
    """End the registry (its files stay for a look afterwards)."""
    if registry.child is not None:
        registry.child.stop()


def _write_files(root: str, ca: pki.Authority, ip: str, port: int,
                 username: str, password: str,
                 mutual_tls: bool) -> dict[str, str]:
    paths = {name.partition('.')[0]: os.path.join(root, name)
             for name in ('config.yml', 'server.crt', 'server-key.pem',
                          'ca.crt', 'htpasswd', 'access.log')}
    cert, key = ca.issue(f'lab registry {ip}', ips=(ip,))
    pki.write(paths['server'], cert)
    pki.write(paths['server-key'], key, private=True)
    pki.write(paths['ca'], ca.cert_pem)
    hashed = bcrypt.hashpw(password.encode(),
                           bcrypt.gensalt(BCRYPT_ROUNDS)).decode()
    pki.write(paths['htpasswd'], f'{username}:{hashed}\n'.encode(),
              private=True)
    config = _config(root, f'{ip}:{port}', paths, mutual_tls)
    # JSON is YAML; 0600: it holds the secret that signs upload state.
    pki.write(paths['config'], json.dumps(config, indent=2).encode(),
              private=True)
    return paths


def _config(root: str, addr: str, paths: dict[str, str],
            mutual_tls: bool) -> dict:
    tls = {'certificate': paths['server'], 'key': paths['server-key']}
    if mutual_tls:
        tls['clientcas'] = [paths['ca']]
    return {
        'version': 0.1,
        'log': {'level': 'info', 'formatter': 'text',
                'accesslog': {'disabled': False}},
        'storage': {
            'filesystem': {'rootdirectory': os.path.join(root, 'data')},
            'delete': {'enabled': True},
            # No background sweeps in a registry that lives for a test.
            'maintenance': {'uploadpurging': {'enabled': False}}},
        'http': {'addr': addr, 'secret': secrets.token_hex(32),
                 'tls': tls},
        'auth': {'htpasswd': {'realm': REALM, 'path': paths['htpasswd']}},
    }


def ssl_context(ca_pem: bytes, client_cert_pem: bytes | None = None,
                client_key_pem: bytes | None = None) -> ssl.SSLContext:
    """A client context trusting ``ca_pem`` only, presenting the client
    pair when given (written to a private temporary file: Python's ssl
    loads a pair from files only)."""
    context = ssl.create_default_context(cadata=ca_pem.decode())
    if client_cert_pem and client_key_pem:
        _load_pair(context, client_cert_pem, client_key_pem)
    return context


def _load_pair(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'pair.pem')
        pki.write(path, cert + key, private=True)
        context.load_cert_chain(path)


def status(registry: LabRegistry, path: str = '/v2/',
           authorization: str | None = None,
           ca_pem: bytes | None = None) -> int:
    """The HTTP status of a GET of ``path`` (trusting ``ca_pem``, by
    default the registry's CA), with the Authorization header given."""
    context = ssl_context(ca_pem or registry.ca_pem,
                          registry.client_cert_pem, registry.client_key_pem)
    headers = {'Authorization': authorization} if authorization else {}
    request = urllib.request.Request(registry.url + path,  # noqa: S310
                                     headers=headers)
    try:
        with urllib.request.urlopen(request, context=context,  # noqa: S310
                                    timeout=PROBE_TIMEOUT) as reply:
            return reply.status
    except urllib.error.HTTPError as exc:
        return exc.code


def _answers_401(registry: LabRegistry) -> bool:
    """Ready: the v2 API answers over TLS and asks for credentials."""
    try:
        return status(registry) == 401
    except (OSError, ssl.SSLError):
        return False


def requests(registry: LabRegistry) -> list[LoggedRequest]:
    """The requests the registry logged so far, oldest first."""
    try:
        with open(registry.log_path, encoding='utf-8',
                  errors='replace') as f:
            lines = f.readlines()
    except FileNotFoundError:
        return []
    found = []
    for line in lines:
        match = _REQUEST_LINE.search(line)
        if match:
            found.append(LoggedRequest(match[1], match[2], int(match[3])))
    return found

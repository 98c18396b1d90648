"""Private registries and pinned apt keys of a request: their schema,
their checks and their typed shape.

A registry entry says how every node's containerd reaches one registry
(``registry.k8s.io``, ``reg.site:5000``): its mirrors in order, the CA
that signs their certificates, a client certificate, credentials. All of
it is checked here, before any host: URLs, PEM that parses, a client key
that belongs to its certificate, certificates not expired, credentials
never sent over plain HTTP. Messages never echo a key, a password or a
token.
"""
from __future__ import annotations

import base64
import datetime
import re
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from kubernetes_mgmt.params.paths import Path, select, show

Finding = tuple[Path, str]

REGISTRIES_KEY = 'private_registries'
FINGERPRINTS_KEY = 'apt_key_fingerprints'
PEM_MAX = 65536
MIRRORS_MAX = 16
REGISTRIES_MAX = 64
FINGERPRINTS_MAX = 8

_LABEL = '[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?'
# What containerd names a registry directory after: host[:port].
REGISTRY_NAME = re.compile(rf'{_LABEL}(\.{_LABEL})*(:[0-9]{{1,5}})?')
# The install script's URL pattern (contract 'url'): nothing it would refuse.
MIRROR_URL = re.compile(r'(?P<scheme>https?)://[A-Za-z0-9.-]+(:[0-9]{1,5})?'
                        r'(/[A-Za-z0-9._~:/%+=-]*)?')
_FINGERPRINT = re.compile('[0-9A-F]{40}')
_TOKEN = re.compile(r'[A-Za-z0-9._~+/=-]+')

_PEM_TEXT = {'type': 'string', 'minLength': 1, 'maxLength': PEM_MAX}


def _text(description: str, max_length: int = 255) -> dict:
    return {'type': 'string', 'minLength': 1, 'maxLength': max_length,
            'description': description}


REGISTRY = {
    'type': 'object', 'description': 'private registry',
    'properties': {
        'registry': _text('the registry images name, host[:port], e.g. '
                          'registry.k8s.io or reg.example:5000'),
        'mirrors': {'type': 'array', 'maxItems': MIRRORS_MAX,
                    'items': _text('mirror URL, e.g. '
                                   'https://mirror.example:5000', 2048),
                    'description': 'mirrors, tried in this order before '
                                   'the registry itself'},
        'ca_cert': {**_PEM_TEXT, 'description': 'PEM CA certificate(s) '
                    'that sign the certificates of the registry and its '
                    'mirrors'},
        'client_cert': {**_PEM_TEXT, 'description': 'PEM client '
                        'certificate for TLS client authentication'},
        'client_key': {**_PEM_TEXT, 'description': 'PEM private key of '
                       'client_cert (unencrypted)'},
        'username': _text('user name for the registry'),
        'password': _text('password of username', 512),
        'token': _text('bearer token, instead of username and password',
                       8192),
        'skip_verify': {'type': 'boolean', 'description': 'true: do not '
                        'verify the TLS certificates (warned about at each '
                        'operation)'},
    },
    'required': ['registry'], 'additionalProperties': False,
}

REGISTRIES = {'type': 'array', 'maxItems': REGISTRIES_MAX, 'items': REGISTRY,
              'description': 'private registries and their mirrors'}

FINGERPRINTS = {'type': 'array', 'minItems': 1,
                'maxItems': FINGERPRINTS_MAX,
                'items': _text('OpenPGP fingerprint, 40 hex digits '
                               '(spaces allowed)', 64),
                'description': 'fingerprints of the keys the Kubernetes '
                               'apt repository may be signed with'}

SCHEMA_PROPERTIES = {REGISTRIES_KEY: REGISTRIES,
                     FINGERPRINTS_KEY: FINGERPRINTS}


@dataclass(frozen=True)
class RegistryParams:
    """One registry as every node's containerd reaches it."""
    registry: str
    mirrors: tuple[str, ...] = ()
    ca_cert: str | None = None
    client_cert: str | None = None
    client_key: str | None = field(default=None, repr=False)
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    skip_verify: bool = False

    @property
    def authorization(self) -> str | None:
        """The Authorization header containerd sends, if any."""
        if self.token:
            return f'Bearer {self.token}'
        if self.username and self.password:
            pair = f'{self.username}:{self.password}'.encode()
            return f'Basic {base64.b64encode(pair).decode()}'
        return None

    def secrets(self) -> list[str]:
        """What must be masked: the key (whole and line by line), the
        password, the token and the header that carries them (also in
        its encoded form)."""
        header = self.authorization
        values = [self.client_key, self.password, self.token, header]
        if header:
            values.append(header.split(' ', 1)[1])
        if self.client_key:
            values += [line for line in self.client_key.splitlines()
                       if line and not line.startswith('-----')]
        return [v for v in values if v]


def normalized_fingerprint(value: str) -> str:
    return value.replace(' ', '').upper()


# -- checks -----------------------------------------------------------------

def findings(param: dict, now: datetime.datetime | None = None
             ) -> list[Finding]:
    """Problems of the registries and fingerprints of ``param`` (the
    cluster parameters), paths relative to it. Types were checked by the
    schema; entries of the wrong type are skipped here."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    found: list[Finding] = []
    seen: dict[str, Path] = {}
    for path, entry in select(param, (REGISTRIES_KEY, '*')):
        if isinstance(entry, dict):
            found += _registry_findings(path, entry, now)
            name = entry.get('registry')
            if isinstance(name, str) and name in seen:
                found.append(((*path, 'registry'),
                              f'{show(name)} is given twice'))
            elif isinstance(name, str):
                seen[name] = path
    for path, value in select(param, (FINGERPRINTS_KEY, '*')):
        if isinstance(value, str) and not _FINGERPRINT.fullmatch(
                normalized_fingerprint(value)):
            found.append((path, f'{show(value)} is not an OpenPGP '
                          'fingerprint (40 hex digits, spaces allowed)'))
    return found


def _registry_findings(path: Path, entry: dict,
                       now: datetime.datetime) -> list[Finding]:
    found: list[Finding] = []
    name = entry.get('registry')
    if isinstance(name, str) and not REGISTRY_NAME.fullmatch(name):
        found.append(((*path, 'registry'), f'{show(name)} is not a '
                      'registry name (host[:port] in lowercase, e.g. '
                      'reg.example:5000)'))
    found += _mirror_findings(path, entry)
    found += _pem_findings(path, entry, now)
    found += _credential_findings(path, entry)
    return found


def _mirror_findings(path: Path, entry: dict) -> list[Finding]:
    found: list[Finding] = []
    seen: set[str] = set()
    for where, url in select(entry, ('mirrors', '*')):
        if not isinstance(url, str):
            continue
        if not MIRROR_URL.fullmatch(url):
            found.append(((*path, *where), f'{show(url)} is not a mirror '
                          'URL (http(s)://host[:port][/path], no query or '
                          'user info)'))
        elif url in seen:
            found.append(((*path, *where), f'{show(url)} is given twice'))
        seen.add(url)
    return found


def _pem_findings(path: Path, entry: dict,
                  now: datetime.datetime) -> list[Finding]:
    found: list[Finding] = []
    ca = entry.get('ca_cert')
    if isinstance(ca, str):
        found += [((*path, 'ca_cert'), m) for m in _certs_problems(ca, now)]
    cert, key = entry.get('client_cert'), entry.get('client_key')
    if (cert is None) != (key is None):
        missing = 'client_key' if key is None else 'client_cert'
        found.append(((*path, missing), 'is required with '
                      f"'{'client_cert' if key is None else 'client_key'}'"))
    if isinstance(cert, str):
        found += [((*path, 'client_cert'), m)
                  for m in _certs_problems(cert, now)]
    if isinstance(key, str):
        found += [((*path, 'client_key'), m)
                  for m in _key_problems(key, cert)]
    return found


def _certs_problems(pem: str, now: datetime.datetime) -> list[str]:
    try:
        certs = x509.load_pem_x509_certificates(pem.encode())
    except ValueError:
        return ['is not a PEM certificate (-----BEGIN CERTIFICATE----- '
                '...)']
    problems = []
    for cert in certs:
        subject = cert.subject.rfc4514_string() or 'no subject'
        if cert.not_valid_after_utc <= now:
            problems.append(f'the certificate {subject!r} expired on '
                            f'{cert.not_valid_after_utc:%Y-%m-%d}')
        elif cert.not_valid_before_utc > now:
            problems.append(f'the certificate {subject!r} is not valid '
                            f'before {cert.not_valid_before_utc:%Y-%m-%d}')
    return problems


def _key_problems(pem: str, cert_pem: Any) -> list[str]:
    try:
        key = serialization.load_pem_private_key(pem.encode(), None)
    except (ValueError, TypeError):
        return ['is not an unencrypted PEM private key']
    if not isinstance(cert_pem, str):
        return []
    try:
        cert = x509.load_pem_x509_certificates(cert_pem.encode())[0]
    except ValueError:
        return []   # client_cert's own finding says why
    if _public_der(key.public_key()) != _public_der(cert.public_key()):
        return ['does not belong to client_cert (their public keys '
                'differ)']
    return []


def _public_der(public_key) -> bytes:
    return public_key.public_bytes(
        serialization.Encoding.DER,
        serialization.PublicFormat.SubjectPublicKeyInfo)


def _credential_findings(path: Path, entry: dict) -> list[Finding]:
    found: list[Finding] = []
    user, password = entry.get('username'), entry.get('password')
    if (user is None) != (password is None):
        missing = 'password' if password is None else 'username'
        found.append(((*path, missing), 'is required with '
                      f"'{'username' if password is None else 'password'}'"))
    if user is not None and entry.get('token') is not None:
        found.append(((*path, 'token'), 'give either a token or a '
                      'username and password, not both'))
    if isinstance(user, str) and ':' in user:
        found.append(((*path, 'username'), "must not contain ':'"))
    token = entry.get('token')
    if isinstance(token, str) and not _TOKEN.fullmatch(token):
        found.append(((*path, 'token'), 'must be a bearer token of '
                      "[A-Za-z0-9._~+/=-]"))
    if (user is not None or token is not None) and any(
            isinstance(u, str) and u.startswith('http://')
            for _, u in select(entry, ('mirrors', '*'))):
        found.append(((*path, 'mirrors'), 'a mirror is plain http://: the '
                      'credentials would cross the network in clear; use '
                      'https:// mirrors with credentials'))
    return found


# -- the typed shape ---------------------------------------------------------

def build(param: dict) -> tuple[tuple[RegistryParams, ...], tuple[str, ...]]:
    """(registries, apt key fingerprints) of valid cluster parameters."""
    registries = tuple(
        RegistryParams(registry=e['registry'],
                       mirrors=tuple(e.get('mirrors', ())),
                       ca_cert=e.get('ca_cert'),
                       client_cert=e.get('client_cert'),
                       client_key=e.get('client_key'),
                       username=e.get('username'),
                       password=e.get('password'), token=e.get('token'),
                       skip_verify=e.get('skip_verify') is True)
        for e in param.get(REGISTRIES_KEY, ()))
    prints = tuple(normalized_fingerprint(f)
                   for f in param.get(FINGERPRINTS_KEY, ()))
    return registries, prints

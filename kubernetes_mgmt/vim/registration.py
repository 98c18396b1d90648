"""What a VIM registration needs and what it yields."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from kubernetes_mgmt import redact
from kubernetes_mgmt.errors import MgmtDriverError


class VimError(MgmtDriverError):
    """Registering, finding or deleting a VIM failed."""


@dataclass(frozen=True)
class VimSpec:
    """A Kubernetes cluster to register as a VIM."""

    name: str
    auth_url: str                                 # https://host:port
    bearer_token: str = field(repr=False)
    ssl_ca_cert: str = field(repr=False)          # PEM of the cluster CA
    tenant_id: str | None = None  # Keystone project; None: the context's
    description: str = ''

    def __post_init__(self) -> None:
        # Whoever builds a spec holds a token: mask it from then on.
        redact.register(self.bearer_token)


@dataclass(frozen=True)
class VimRecord:
    """A registered VIM."""

    id: str
    name: str
    auth_url: str


def same_url(one: str, other: str) -> bool:
    return one.rstrip('/') == other.rstrip('/')


_PEM_BODY = re.compile(r'-----BEGIN CERTIFICATE-----(.*?)'
                       r'-----END CERTIFICATE-----', re.S)
_NO_CA = ('', 'None', 'NONE', 'null', 'NULL')   # how Tacker stores "no CA"


def _certificates(text: str | None) -> tuple[str, ...]:
    """The certificates of a CA text, each as its base64 body without
    whitespace (Tacker may store a PEM with its newlines changed)."""
    if text is None or text.strip() in _NO_CA:
        return ()
    bodies = _PEM_BODY.findall(text)
    if not bodies:
        return (text.strip(),)
    return tuple(''.join(body.split()) for body in bodies)


def same_ca(one: str | None, other: str | None) -> bool:
    return _certificates(one) == _certificates(other)


def reuse(existing: VimRecord, spec: VimSpec,
          existing_ca: str | None) -> VimRecord:
    """``existing`` (whose stored CA is ``existing_ca``) when it is the
    same cluster - same URL and same CA - else a clear error: a name may
    not silently point at two clusters, and a VIM of another cluster at
    the same address (a rebuilt one, an address given out again) holds
    that cluster's CA and token."""
    if not same_url(existing.auth_url, spec.auth_url):
        raise VimError(
            f'a VIM named {spec.name!r} already exists ({existing.id}) for '
            f'{existing.auth_url}, not for {spec.auth_url}; choose another '
            'vim_name or delete that VIM')
    if not same_ca(existing_ca, spec.ssl_ca_cert):
        raise VimError(
            f'a VIM named {spec.name!r} already exists ({existing.id}) for '
            f'{spec.auth_url}, but its CA certificate (ssl_ca_cert) is not '
            "this cluster's: it was registered for another cluster at "
            'that address, or before this cluster got a new CA, and its '
            'token is not valid here. Delete VIM '
            f'{existing.id} if nothing uses that cluster any more '
            f'(openstack vim delete {existing.id}), or choose another '
            'vim_name; then retry')
    return existing

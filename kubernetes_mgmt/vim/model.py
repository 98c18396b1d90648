"""What a VIM registration needs and what it yields."""
from __future__ import annotations

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


def reuse(existing: VimRecord, spec: VimSpec) -> VimRecord:
    """``existing`` when it is the same cluster, else a clear error: a
    name may not silently point at two clusters."""
    if same_url(existing.auth_url, spec.auth_url):
        return existing
    raise VimError(
        f'a VIM named {spec.name!r} already exists ({existing.id}) for '
        f'{existing.auth_url}, not for {spec.auth_url}; choose another '
        'vim_name or delete that VIM')

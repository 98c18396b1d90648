"""Short-lived cluster secrets the driver generates for kubeadm and VRRP.

Each is registered for masking the moment it exists, in the scope of the
running operation (``redact``).
"""
from __future__ import annotations

import secrets
import string

from kubernetes_mgmt import redact

_TOKEN_ALPHABET = string.ascii_lowercase + string.digits


def _pick(n: int, alphabet: str = _TOKEN_ALPHABET) -> str:
    return ''.join(secrets.choice(alphabet) for _ in range(n))


def bootstrap_token() -> str:
    """A kubeadm bootstrap token: ``[a-z0-9]{6}.[a-z0-9]{16}``."""
    token = f'{_pick(6)}.{_pick(16)}'
    redact.register(token, token.split('.')[1])
    return token


def certificate_key() -> str:
    """Key that encrypts the control-plane certificates kubeadm uploads."""
    key = secrets.token_hex(32)
    redact.register(key)
    return key


def vrrp_password() -> str:
    """VRRP PASS authentication allows at most 8 characters."""
    password = _pick(8, string.ascii_letters + string.digits)
    redact.register(password)
    return password

"""Bootstrap tokens and upload-certs certificate keys."""
from __future__ import annotations

import re
import secrets
import string
import time

TOKEN_RE = re.compile(r'^[a-z0-9]{6}\.[a-z0-9]{16}$')
CERT_KEY_TTL = 2 * 3600     # kubeadm deletes uploaded certs after 2 h
DEFAULT_TTL = 24 * 3600
_ALPHABET = string.ascii_lowercase + string.digits


def new_token() -> str:
    def pick(n):
        return ''.join(secrets.choice(_ALPHABET) for _ in range(n))
    return f'{pick(6)}.{pick(16)}'


def new_certificate_key() -> str:
    return secrets.token_hex(32)


def parse_duration(text: str) -> float:
    """Go durations: ``24h0m0s``, ``30s``, ``1.5h``, ``0`` ."""
    if text in ('0', ''):
        return 0.0
    total, pos = 0.0, 0
    units = {'h': 3600, 'm': 60, 's': 1, 'ms': 1e-3, 'us': 1e-6,
             'ns': 1e-9}
    for match in re.finditer(r'(\d+(?:\.\d+)?)(ms|us|ns|h|m|s)', text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * units[match.group(2)]
        pos = match.end()
    if pos != len(text) or pos == 0:
        raise ValueError(f'time: invalid duration "{text}"')
    return total


def add_token(cluster: dict, token: str | None, ttl: float,
              description: str = '',
              usages: tuple[str, ...] = ('authentication', 'signing'),
              groups: tuple[str, ...] = (
                  'system:bootstrappers:kubeadm:default-node-token',),
              ) -> str:
    token = token or new_token()
    if not TOKEN_RE.match(token):
        raise ValueError(f'the bootstrap token "{token}" was not of the '
                         'form "^([a-z0-9]{6})\\.([a-z0-9]{16})$"')
    entry = {'token': token, 'expires': time.time() + ttl if ttl else None,
             'description': description, 'usages': list(usages),
             'groups': list(groups)}
    cluster['tokens'] = [t for t in live_tokens(cluster)
                         if t['token'] != token] + [entry]
    _remember(cluster, 'token_history', token)
    return token


def _remember(cluster: dict, key: str, secret: str) -> None:
    """Every token and certificate key the cluster ever accepted, kept
    after they expire: what tests look for on the VMs."""
    seen = cluster.setdefault(key, [])
    if secret not in seen:
        seen.append(secret)


def live_tokens(cluster: dict) -> list[dict]:
    """Tokens not yet expired (the token cleaner drops the others)."""
    now = time.time()
    return [t for t in cluster.get('tokens', [])
            if t['expires'] is None or t['expires'] > now]


def token_valid(cluster: dict, token: str) -> bool:
    return any(t['token'] == token for t in live_tokens(cluster))


def set_certificate_key(cluster: dict, key: str | None) -> str:
    key = key or new_certificate_key()
    if not re.fullmatch(r'[0-9a-f]{64}', key):
        raise ValueError('invalid certificate key: must be 64 hex '
                         'characters')
    cluster['certificate_key'] = {'key': key,
                                  'expires': time.time() + CERT_KEY_TTL}
    _remember(cluster, 'certificate_key_history', key)
    return key


def certificate_key_state(cluster: dict, key: str) -> str:
    """'ok', 'expired' (the kubeadm-certs Secret is gone) or 'wrong'."""
    current = cluster.get('certificate_key')
    if not current or current['expires'] <= time.time():
        return 'expired'
    return 'ok' if secrets.compare_digest(current['key'], key) else 'wrong'

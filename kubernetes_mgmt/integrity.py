"""Signatures that make edits of the driver's stored state detectable.

The state lives in the VNF instance's ``vnf_metadata``, into which Tacker
merges the metadata of ``PATCH /vnf_instances/{id}``: anyone allowed to
modify an instance could rewrite host keys, the pending heal or the VIM
id the driver trusts. Each field, and each entry of a dict field, is
signed with HMAC-SHA256 under a site key that Tacker never exposes (a
file beside tacker.conf, like Tacker's own VIM fernet keys), bound to the
instance id so that state copied from another instance does not verify.
A mismatch names the field, so the operator sees what was edited.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Mapping
from typing import Any

from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import MgmtDriverError

_KEY_BYTES = 32


class StateKeyError(MgmtDriverError):
    """The signing key cannot be read or created."""


def key_path() -> str:
    return CONF.kubernetes_mgmt.state_key_file


def load_key(*, create: bool, path: str | None = None) -> bytes:
    """The site key (of ``path``, default ``state_key_file``), read anew
    on every call: no secret is cached in the long-lived conductor. With
    ``create`` a missing key file is made."""
    path = path or key_path()
    try:
        with open(path, 'rb') as f:
            return _parse_key(f.read(), path)
    except FileNotFoundError:
        if not create:
            raise StateKeyError(
                f'the key that signs this driver\'s stored state is missing '
                f'({path}, [kubernetes_mgmt] state_key_file): restore it '
                'from a backup or another tacker-conductor host; every '
                'conductor needs the same file') from None
    except OSError as exc:
        raise StateKeyError(f'cannot read the state key {path}: '
                            f'{exc.strerror or exc}') from None
    return _create_key(path)


def _parse_key(data: bytes, path: str) -> bytes:
    text = data.strip()
    try:
        key = bytes.fromhex(text.decode('ascii'))
    except (UnicodeDecodeError, ValueError):
        key = b''
    if len(key) < 16:
        raise StateKeyError(f'{path} does not hold a state key (at least '
                            '32 hex digits expected)')
    return key


def _create_key(path: str) -> bytes:
    os.makedirs(os.path.dirname(path) or '.', mode=0o700, exist_ok=True)
    key = secrets.token_bytes(_KEY_BYTES)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:     # another operation made it first
        return load_key(create=False, path=path)
    with os.fdopen(fd, 'w') as f:
        f.write(key.hex() + '\n')
    return key


def entries(fields: Mapping[str, Any]) -> dict[str, Any]:
    """What is signed: each field, and each entry of a dict field (so a
    mismatch can name ``host_keys['10.0.0.5']`` rather than a field)."""
    out: dict[str, Any] = {}
    for name, value in fields.items():
        out[name] = value
        if isinstance(value, dict):
            for key, item in value.items():
                out[f'{name}[{key!r}]'] = item
    return out


def _mac(key: bytes, instance_id: str, path: str, value: Any) -> str:
    message = '\0'.join((instance_id, path, json.dumps(
        value, sort_keys=True, separators=(',', ':'))))
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


def sign(key: bytes, instance_id: str,
         fields: Mapping[str, Any]) -> dict[str, str]:
    return {path: _mac(key, instance_id, path, value)
            for path, value in entries(fields).items()}


def tampered(key: bytes, instance_id: str, fields: Mapping[str, Any],
             macs: Mapping[str, str]) -> list[str]:
    """The paths whose value does not verify: changed, added or removed.
    A field is named only when no entry of it explains the mismatch."""
    expected = sign(key, instance_id, fields)
    bad = sorted(path for path in set(expected) | set(macs)
                 if not hmac.compare_digest(expected.get(path, ''),
                                            str(macs.get(path, ''))))
    entry_fields = {p.split('[', 1)[0] for p in bad if '[' in p}
    return [p for p in bad if '[' in p or p not in entry_fields]

"""Signatures that make edits of the driver's stored state detectable.

The state lives in the VNF instance's ``vnf_metadata``, into which Tacker
merges the metadata of ``PATCH /vnf_instances/{id}``: anyone allowed to
modify an instance could rewrite host keys, the pending heal or the VIM
id the driver trusts. Each field, and each entry of a dict field, is
signed with HMAC-SHA256 under a site key that Tacker never exposes (a
file beside tacker.conf, like Tacker's own VIM fernet keys), bound to the
instance id so that state copied from another instance does not verify,
and (format 3) to the state's generation, so that fields of different
saves cannot be mixed; one more signature covers the generation and the
names of the fields, so that a field removed with its signatures, or a
generation changed, is noticed too. A mismatch names the field, so the
operator sees what was edited.

The key is copied, not fetched: every tacker-conductor host of a site
holds the same file. (Barbican, which a site runs for its Kubernetes
VIMs, would put a network call and a service's availability in front of
every state load, and in the v2 LCM script, which runs without Tacker's
keystone context.)
"""
from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping
from typing import Any

from kubernetes_mgmt import redact
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.state import durable, generations

LOG = redact.get_logger(__name__)
_KEY_BYTES = 32
# The signature of the generation and the field names (format 3): no
# field's path starts with '@'.
GENERATION_PATH = '@generation'
_FORMAT3 = 'kubernetes_mgmt state 3'


class StateKeyError(MgmtDriverError):
    """The signing key cannot be read or created, or is not the key the
    stored state was signed with."""


def key_path() -> str:
    return CONF.kubernetes_mgmt.state_key_file


def key_id(key: bytes) -> str:
    """What names a key in stored state and messages, not the key: the
    first 16 hex digits of its SHA-256."""
    return hashlib.sha256(key).hexdigest()[:16]


def load_key(*, create: bool, path: str | None = None) -> bytes:
    """The site key (of ``path``, default ``state_key_file``), read anew
    on every call: no secret is cached in the long-lived conductor. With
    ``create`` a missing key file is made, unless this host has verified
    stored state before (then the key was lost, and a new one would
    disown every VNF's state)."""
    path = path or key_path()
    try:
        with open(path, 'rb') as f:
            return _parse_key(f.read(), path)
    except FileNotFoundError:
        if not create:
            raise StateKeyError(missing_key(path)) from None
    except OSError as exc:
        raise StateKeyError(f'cannot read the state key {path} '
                            '([kubernetes_mgmt] state_key_file): '
                            f'{exc.strerror or exc}') from None
    return _create_key(path)


def missing_key(path: str, consequence: str = 'so the stored driver state '
                'cannot be verified') -> str:
    return (f'the key that signs this driver\'s stored state is missing on '
            f'this tacker-conductor host ({path}, [kubernetes_mgmt] '
            f'state_key_file), {consequence}. Copy that file (mode 0600, '
            'owned by the user tacker runs as) from another '
            'tacker-conductor host of the site, or restore it from a '
            'backup: every conductor needs the same file, kept like '
            'Tacker\'s fernet keys. Nothing was changed')


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
    floors = generations.floors(path)
    if floors.any_recorded():
        raise StateKeyError(missing_key(
            path, f'yet this host has verified state signed with it before '
                  f'(their generations are in {floors.directory}): a new '
                  'key would disown every VNF\'s stored state'))
    key = secrets.token_bytes(_KEY_BYTES)
    try:
        made = durable.create(path, key.hex().encode() + b'\n')
    except OSError as exc:
        raise StateKeyError(f'cannot create the state key {path} '
                            '([kubernetes_mgmt] state_key_file): '
                            f'{exc.strerror or exc}') from None
    if not made:        # another operation made it first
        return load_key(create=False, path=path)
    LOG.warning('created the key that signs this driver\'s stored state: '
                '%s (key id %s). A site with several tacker-conductor '
                'hosts must copy this file to each of them before they '
                'serve VNFs; a conductor with another key refuses the '
                'state this one signs', path, key_id(key))
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


def _mac(key: bytes, instance_id: str, path: str, value: Any,
         generation: int | None) -> str:
    parts = [instance_id, path, json.dumps(value, sort_keys=True,
                                           separators=(',', ':'))]
    if generation is not None:
        parts = [_FORMAT3, instance_id, str(generation), *parts[1:]]
    message = '\0'.join(parts)
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


def sign(key: bytes, instance_id: str, fields: Mapping[str, Any],
         generation: int | None = None) -> dict[str, str]:
    """The signatures of ``fields``; with a ``generation`` (format 3)
    bound to it, plus the signature of the generation and field names."""
    macs = {path: _mac(key, instance_id, path, value, generation)
            for path, value in entries(fields).items()}
    if generation is not None:
        macs[GENERATION_PATH] = _mac(key, instance_id, GENERATION_PATH,
                                     sorted(fields), generation)
    return macs


def tampered(key: bytes, instance_id: str, fields: Mapping[str, Any],
             macs: Mapping[str, str],
             generation: int | None = None) -> list[str]:
    """The paths whose value does not verify: changed, added or removed
    (``generation`` when the generation or the set of fields does not).
    A field is named only when no entry of it explains the mismatch."""
    expected = sign(key, instance_id, fields, generation)
    bad = sorted(path for path in set(expected) | set(macs)
                 if not hmac.compare_digest(expected.get(path, ''),
                                            str(macs.get(path, ''))))
    entry_fields = {p.split('[', 1)[0] for p in bad if '[' in p}
    named = [p for p in bad if '[' in p or p not in entry_fields]
    return ['generation' if p == GENERATION_PATH else p for p in named]

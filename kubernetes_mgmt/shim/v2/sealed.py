"""The instantiate request's parameters, kept for later operations.

Tacker's v2 API keeps no ``additionalParams`` of an instantiate, and its
scale and heal requests should not carry SSH passwords again. So the
driver keeps them in the instance's ``metadata``, which anyone allowed to
read the instance sees: sealed with AES-GCM under a key derived from the
site's state key (never exposed by Tacker), bound to the instance id, so
the text shown is opaque and a copy or an edit does not open.
"""
from __future__ import annotations

import base64
import json
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.state import integrity

PREFIX = 'aesgcm1:'
_PURPOSE = b'kubernetes_mgmt v2 instantiate parameters'
_NONCE_BYTES = 12


class SealError(MgmtDriverError):
    """Sealed parameters that do not open (edited, copied, other key)."""


def _cipher(create: bool) -> AESGCM:
    # Read anew each time: nothing secret stays in the process. Only
    # sealing may create the site key; opening needs the one that sealed.
    key = integrity.load_key(create=create)
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                   info=_PURPOSE).derive(key)
    return AESGCM(derived)


def seal(instance_id: str, params: dict) -> str:
    nonce = os.urandom(_NONCE_BYTES)
    data = json.dumps(params, sort_keys=True).encode()
    sealed = _cipher(create=True).encrypt(nonce, data,
                                          instance_id.encode())
    return PREFIX + base64.b64encode(nonce + sealed).decode('ascii')


def unseal(instance_id: str, text: str, where: str) -> dict:
    """The parameters sealed for ``instance_id``; SealError naming
    ``where`` when they do not open."""
    if not isinstance(text, str) or not text.startswith(PREFIX):
        raise SealError(f'{where} is not sealed parameters of this driver')
    try:
        raw = base64.b64decode(text[len(PREFIX):], validate=True)
        data = _cipher(create=False).decrypt(
            raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], instance_id.encode())
    except (ValueError, InvalidTag):
        raise SealError(
            f'{where} does not open with this site\'s state key for '
            f'instance {instance_id}: it was edited, copied from another '
            'instance, or sealed under another key ([kubernetes_mgmt] '
            'state_key_file). Nothing was changed.') from None
    return json.loads(data)

"""Stable identifiers for lab resources that the state file does not hold.

Heat would store them; the double derives them from names instead, so the
same lab state always yields the same ids across requests and restarts.
"""
from __future__ import annotations

import datetime
import hashlib
import uuid

_NAMESPACE = uuid.UUID('7b0f2c4e-8f55-4d0c-9a55-1f0c3a8e6d21')
_EPOCH = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
_ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567'


def uid(*parts: object) -> str:
    """A UUID that depends only on ``parts``."""
    return str(uuid.uuid5(_NAMESPACE, '/'.join(str(p) for p in parts)))


def short_id(*parts: object) -> str:
    """12 lowercase characters, like Heat's generated name suffixes."""
    digest = hashlib.sha256('/'.join(map(str, parts)).encode()).digest()
    return ''.join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:12])


def mac(*parts: object) -> str:
    """A locally administered MAC address (Neutron uses fa:16:3e:...)."""
    digest = hashlib.sha256('/'.join(map(str, parts)).encode()).digest()
    return 'fa:16:3e:' + ':'.join(f'{b:02x}' for b in digest[:3])


def timestamp(ordinal: int) -> str:
    """Heat's ISO time format; ``ordinal`` orders creation."""
    moment = _EPOCH + datetime.timedelta(minutes=ordinal)
    return moment.strftime('%Y-%m-%dT%H:%M:%SZ')


def now() -> str:
    utc = datetime.datetime.now(datetime.timezone.utc)
    return utc.strftime('%Y-%m-%dT%H:%M:%SZ')

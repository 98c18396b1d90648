"""The SSH host keys a VM printed to its console at first boot.

cloud-init's ``keys_to_console`` module prints a block of fingerprints
(``-----BEGIN SSH HOST KEY FINGERPRINTS-----``, lines such as ``256
SHA256:... root@vm (ED25519)``) and a block of the public keys themselves
(``-----BEGIN SSH HOST KEY KEYS-----``). Nova keeps the console and
serves it to the project (``os-getConsoleOutput``); someone who merely
answers on the VM's address cannot write to it. Each line may carry a
prefix (``ec2:``, a timestamp, a syslog tag): only what follows it
counts.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass

FINGERPRINTS = ('-----BEGIN SSH HOST KEY FINGERPRINTS-----',
                '-----END SSH HOST KEY FINGERPRINTS-----')
KEYS = ('-----BEGIN SSH HOST KEY KEYS-----',
        '-----END SSH HOST KEY KEYS-----')
_SHA256 = re.compile(r'\bSHA256:([A-Za-z0-9+/]{43})\b')
_KEY = re.compile(r'\b(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(?:256|384|521))'
                  r' ([A-Za-z0-9+/]+={0,2})(?:\s|$)')


def fingerprint(key_blob: bytes) -> str:
    """OpenSSH's SHA256 fingerprint of a public key blob."""
    digest = base64.b64encode(hashlib.sha256(key_blob).digest())
    return 'SHA256:' + digest.decode().rstrip('=')


@dataclass(frozen=True)
class PublishedKeys:
    """The fingerprints a VM published (from its last complete block)."""

    fingerprints: frozenset[str]

    def __contains__(self, fp: str) -> bool:
        return fp in self.fingerprints

    def __str__(self) -> str:
        return ', '.join(sorted(self.fingerprints))


def parse(console: str) -> PublishedKeys | None:
    """The host keys the console shows, from its last complete keys
    block, else its last fingerprints block; None when it has neither
    (cloud-init has not printed them yet, or never will)."""
    lines = console.splitlines()
    keys = _last_block(lines, KEYS)
    if keys:
        found = {fingerprint(blob) for blob in _key_blobs(keys)}
        if found:
            return PublishedKeys(frozenset(found))
    prints = _last_block(lines, FINGERPRINTS)
    found = {f'SHA256:{m.group(1)}' for line in prints or ()
             for m in _SHA256.finditer(line)}
    return PublishedKeys(frozenset(found)) if found else None


def _last_block(lines: list[str], markers: tuple[str, str]
                ) -> list[str] | None:
    """The lines between the last begin marker that has an end marker
    after it (a block still being printed is not trusted yet)."""
    begin, end = markers
    block: list[str] | None = None
    current: list[str] | None = None
    for line in lines:
        if begin in line:
            current = []
        elif end in line:
            if current is not None:
                block = current
            current = None
        elif current is not None:
            current.append(line)
    return block


def _key_blobs(lines: list[str]) -> list[bytes]:
    blobs = []
    for line in lines:
        match = _KEY.search(line)
        if match is None:
            continue
        try:
            blobs.append(base64.b64decode(match.group(2), validate=True))
        except (binascii.Error, ValueError):
            continue
    return blobs

"""Streaming digests (images can be gigabytes)."""
from __future__ import annotations

import hashlib
from typing import BinaryIO

CHUNK = 1 << 20

# TOSCA.meta algorithm names (as Tacker accepts them) -> hashlib names.
ALGORITHMS = {'sha-224': 'sha224', 'sha-256': 'sha256',
              'sha-384': 'sha384', 'sha-512': 'sha512'}


def digests(stream: BinaryIO, *names: str) -> dict[str, str]:
    """Hex digests of everything ``stream`` yields, one per hashlib name."""
    hashes = {name: hashlib.new(name) for name in names}
    while chunk := stream.read(CHUNK):
        for one in hashes.values():
            one.update(chunk)
    return {name: one.hexdigest() for name, one in hashes.items()}

"""``kubectl exec``: the pods/exec subresource over a WebSocket.

kubectl (1.30 and later) upgrades the request to a WebSocket speaking
the ``v5.channel.k8s.io`` protocol: every binary message starts with its
channel (1 stdout, 2 stderr, 3 the final Status), and the command's exit
code comes as that Status. What a command does is up to the test or lab
that registered it for the pod (:data:`Runner`); the double runs no
containers.
"""
from __future__ import annotations

import base64
import hashlib
import json
import struct
from collections.abc import Callable
from dataclasses import dataclass

from kubernetes_mgmt_lab.kube_api.status import ApiError

PROTOCOLS = ('v5.channel.k8s.io', 'v4.channel.k8s.io')
_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'
STDOUT, STDERR, ERROR = 1, 2, 3


@dataclass(frozen=True)
class Result:
    returncode: int
    stdout: bytes = b''
    stderr: bytes = b''


# argv -> what the command printed and its exit code.
Runner = Callable[[list[str]], Result]


def accept_key(client_key: str) -> str:
    digest = hashlib.sha1((client_key + _GUID).encode()).digest()  # noqa: S324 - RFC 6455
    return base64.b64encode(digest).decode()


def protocol(offered: str) -> str:
    """The channel protocol to speak, from the client's offer."""
    wanted = [p.strip() for p in offered.split(',')]
    for name in PROTOCOLS:
        if name in wanted:
            return name
    raise ApiError(400, 'unable to upgrade: no supported protocol in '
                   f'{offered!r}')


def frame(payload: bytes, opcode: int = 0x2) -> bytes:
    """One unmasked, final server frame."""
    size = len(payload)
    if size < 126:
        head = struct.pack('!BB', 0x80 | opcode, size)
    elif size < 1 << 16:
        head = struct.pack('!BBH', 0x80 | opcode, 126, size)
    else:
        head = struct.pack('!BBQ', 0x80 | opcode, 127, size)
    return head + payload


def status(argv: list[str], returncode: int) -> dict:
    if returncode == 0:
        return {'metadata': {}, 'status': 'Success'}
    return {'metadata': {}, 'status': 'Failure',
            'message': f'command terminated with non-zero exit code: '
                       f'error executing command {argv}, exit code '
                       f'{returncode}',
            'reason': 'NonZeroExitCode',
            'details': {'causes': [{'reason': 'ExitCode',
                                    'message': str(returncode)}]}}


def messages(argv: list[str], result: Result) -> list[bytes]:
    """The frames of one finished command, the close frame last."""
    out = []
    for channel, data in ((STDOUT, result.stdout), (STDERR, result.stderr)):
        if data:
            out.append(frame(bytes([channel]) + data))
    out.append(frame(bytes([ERROR]) + json.dumps(
        status(argv, result.returncode)).encode()))
    out.append(frame(struct.pack('!H', 1000), opcode=0x8))
    return out

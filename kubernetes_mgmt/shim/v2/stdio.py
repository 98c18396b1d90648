"""The child's standard streams as Tacker reads them.

tacker-conductor unpickles the whole of the script's stdout; one stray
byte (a print, a library's warning, a command's output) makes it drop the
result silently, and with it the driver's state. So the pickle gets file
descriptor 1 to itself: everything else written to stdout, by Python or
by a child process, goes to stderr instead.
"""
from __future__ import annotations

import contextlib
import os
import pickle
import sys
from collections.abc import Iterator
from typing import Any, BinaryIO


@contextlib.contextmanager
def result_channel() -> Iterator[BinaryIO]:
    """A binary file on the original stdout; fd 1 and ``sys.stdout``
    point at stderr until the block ends."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    python_stdout, sys.stdout = sys.stdout, sys.stderr
    try:
        with os.fdopen(saved, 'wb') as channel:
            yield channel
    finally:
        sys.stdout = python_stdout


def read_input(stream: BinaryIO | None = None) -> dict:
    """The operation's inputs that tacker-conductor pickled to stdin."""
    # The conductor that started this process wrote them: not untrusted.
    data = pickle.load(stream or sys.stdin.buffer)  # noqa: S301
    if not isinstance(data, dict) or 'operation' not in data:
        raise ValueError('stdin holds no LCM script input (a pickled dict '
                         'with "operation")')
    return data


def write_result(channel: BinaryIO, result: dict[str, Any]) -> None:
    pickle.dump(result, channel)
    channel.flush()

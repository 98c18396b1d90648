"""A command whose reader went away (``kubernetes-mgmt ... | head``)
stops quietly, as programs killed by SIGPIPE do, instead of printing a
BrokenPipeError traceback. Python ignores SIGPIPE, so the write raises;
a broken pipe that is not our standard output (a child's stdin, a
socket) is still an error and is raised again."""
from __future__ import annotations

import os
import select
import signal
import sys
from collections.abc import Callable

# What a shell reports for a process SIGPIPE ended (set -o pipefail).
STATUS = 128 + signal.SIGPIPE


def quietly(run: Callable[[], int]) -> int:
    """``run()``'s status, or STATUS once standard output has no
    reader."""
    try:
        status = run()
        sys.stdout.flush()      # a closed pipe shows here, not at exit
        return status
    except BrokenPipeError:
        if not _reader_gone():
            raise
        # The interpreter flushes stdout once more on exit: let it write
        # to nowhere rather than fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())
        os.close(devnull)
        return STATUS


def _reader_gone() -> bool:
    """Whether standard output is a pipe (or socket) no one reads."""
    try:
        fd = sys.__stdout__.fileno()
    except (AttributeError, ValueError, OSError):
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    # Linux reports POLLERR on a pipe's write end once it has no reader.
    return any(events & select.POLLERR for _, events in poller.poll(0))

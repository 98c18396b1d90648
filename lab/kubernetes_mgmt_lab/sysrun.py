"""Run machine commands for the lab: argv lists only, errors that say what
failed and what the command printed."""
from __future__ import annotations

import subprocess
from collections.abc import Sequence

from kubernetes_mgmt.redact import get_logger, redact
from kubernetes_mgmt_lab.errors import LabError

LOG = get_logger(__name__)

DEFAULT_TIMEOUT = 120.0


def run(argv: Sequence[str], *, input: str | None = None,
        check: bool = True, timeout: float = DEFAULT_TIMEOUT,
        env: dict[str, str] | None = None,
        cwd: str | None = None) -> subprocess.CompletedProcess:
    """Run ``argv`` and capture its output as text.

    With ``check`` a non-zero exit raises LabError carrying stderr, so the
    caller never has to guess why a step failed.
    """
    LOG.debug('lab: running %s', redact(' '.join(argv)))
    try:
        proc = subprocess.run(
            list(argv), input=input, capture_output=True, text=True,
            timeout=timeout, env=env, cwd=cwd,
            stdin=None if input is not None else subprocess.DEVNULL)
    except FileNotFoundError as exc:
        raise LabError(f'command not found: {argv[0]}') from exc
    except subprocess.TimeoutExpired as exc:
        raise LabError(f'{argv[0]} did not finish within {timeout:g} s: '
                       f'{redact(" ".join(argv))}') from exc
    if check and proc.returncode != 0:
        detail = (proc.stderr.strip() or proc.stdout.strip())[-2000:]
        raise LabError(f'{redact(" ".join(argv))} exited with status '
                       f'{proc.returncode}: {redact(detail)}')
    return proc

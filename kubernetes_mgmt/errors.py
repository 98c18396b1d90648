"""Exceptions raised by the driver.

Every error says what failed; remote errors also name the host and the step,
so an operator reading Tacker's error message knows where to look.
Messages are masked when the error is built, with the secrets of the
operation that raises it (the attributes keep the data as it was).
"""
from __future__ import annotations

from dataclasses import dataclass

from kubernetes_mgmt import redact


class MgmtDriverError(Exception):
    """Base class of every error this plugin raises on purpose."""

    def __init__(self, *args):
        super().__init__(*(redact.redact(a) if isinstance(a, str) else a
                           for a in args))


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a request: where (JSON path) and what."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ValidationError(MgmtDriverError):
    """The request is invalid; nothing was changed anywhere."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(
            f"invalid request ({len(self.problems)} problem(s)):\n{lines}")


class RemoteError(MgmtDriverError):
    """Something failed on a remote host."""

    def __init__(self, host: str, step: str, detail: str):
        self.host = host
        self.step = step
        self.detail = detail
        super().__init__(f"[{host}] {step}: {detail}")


class ConnectError(RemoteError):
    """The host could not be reached or logged into before the deadline."""


class HostKeyMismatch(RemoteError):
    """The host presented a key that differs from the remembered one."""


class CommandFailed(RemoteError):
    """A remote command exited non-zero."""

    def __init__(self, host: str, step: str, exit_status: int,
                 stdout: str, stderr: str):
        self.exit_status = exit_status
        self.stdout = stdout
        self.stderr = stderr
        tail = (stderr.strip() or stdout.strip())[-2000:]
        detail = f"exited with status {exit_status}"
        if tail:
            detail += f": {tail}"
        super().__init__(host, step, detail)


class CommandTimeout(RemoteError):
    """A remote command ran longer than its timeout (the message says
    whether it was killed on the host)."""


class Unresponsive(RemoteError):
    """The host's SSH server stopped answering: a channel or a request on
    it got no reply before the deadline."""


class TransferTimeout(RemoteError):
    """A file transfer (SFTP) did not finish within its deadline."""


class TopologyError(MgmtDriverError):
    """The Heat stack does not hold what the request says it should."""

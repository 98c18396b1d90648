"""Errors of CNF operations. Request problems use the project's
``ValidationError`` (a JSON path per problem); these say which call on
which object failed, in which namespace, and why."""
from __future__ import annotations

from kubernetes_mgmt.errors import MgmtDriverError


class CnfError(MgmtDriverError):
    """A CNF operation failed."""


class KubernetesCallFailed(CnfError):
    """The API server refused or failed a call."""

    def __init__(self, action: str, status: int | None, detail: str):
        self.action = action
        self.status = status
        self.detail = detail
        super().__init__(self._message())

    def _message(self) -> str:
        code = f' (HTTP {self.status})' if self.status else ''
        return f'{self.action} failed{code}: {self.detail}'


class AccessDenied(KubernetesCallFailed):
    """HTTP 403: the VIM's credentials do not allow the call."""

    def _message(self) -> str:
        return (f'{self.action} failed: the VIM credentials are not '
                f'allowed to do this (HTTP 403): {self.detail}')


class CnfTimeout(CnfError):
    """Something did not reach the wanted state before its deadline."""

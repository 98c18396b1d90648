"""What the HTTP server needs from whoever keeps the API's objects: the
in-memory double of the CNF tests, or a lab cluster's shared state."""
from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from kubernetes_mgmt_lab.kube_api.controllers import Timing
from kubernetes_mgmt_lab.kube_api.exec_stream import Result
from kubernetes_mgmt_lab.kube_api.rbac import Identity
from kubernetes_mgmt_lab.kube_api.store import Store


@dataclass(frozen=True)
class RequestRecord:
    """One request as the API saw it, for tests to assert on."""

    method: str
    path: str
    query: dict[str, str]
    user: str | None
    code: int
    body: object = None
    user_agent: str = ''

    @property
    def mutating(self) -> bool:
        if self.method == 'GET' or self.query.get('dryRun') == 'All':
            return False
        return not self.path.endswith('/selfsubjectaccessreviews')


class Backend(Protocol):
    version: str            # what /version reports
    timing: Timing

    def transaction(self) -> AbstractContextManager[Store]:
        """The objects, held for one request (saved after it)."""

    def live_store(self) -> Store | None:
        """The store itself when it lives in this process (watches then
        wait on its changes); None when it is shared through a file."""

    def authenticate(self, token: str) -> Identity | None:
        """Who a bearer token is, or None."""

    def run_in_pod(self, namespace: str, pod: str, argv: list[str]
                   ) -> Result:
        """What ``kubectl exec`` into ``pod`` prints and returns."""

    def record(self, record: RequestRecord) -> None:
        """Keep a request for the audit log."""

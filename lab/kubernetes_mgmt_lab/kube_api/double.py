"""``KubeApiDouble``: start, configure and inspect the API double."""
from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Iterator

from kubernetes_mgmt_lab.kube_api import (
    catalog,
    controllers,
    rbac,
    server,
    volumes,
)
from kubernetes_mgmt_lab.kube_api.backend import RequestRecord
from kubernetes_mgmt_lab.kube_api.controllers import Timing
from kubernetes_mgmt_lab.kube_api.exec_stream import Result, Runner
from kubernetes_mgmt_lab.kube_api.store import Store
from kubernetes_mgmt_lab.kube_api.tls import ServingCert, issue

SYSTEM_NAMESPACES = ('default', 'kube-system', 'kube-public')


class KubeApiDouble:
    """An in-memory Kubernetes API server on 127.0.0.1 (random port).

    Use as a context manager. ``add_token`` decides who may do what;
    ``names``/``objects`` and ``requests`` let a test check what exists
    where and which calls were made.
    """

    def __init__(self, timing: Timing | None = None, tls: bool = False,
                 nodes: tuple[str, ...] = ('node-1',),
                 version: str = 'v1.37.1'):
        self.timing = timing or Timing()
        self.version = version          # what /version reports
        self.store = Store()
        self._tokens: dict[str, rbac.Identity] = {}
        self._log: list[RequestRecord] = []
        self._log_lock = threading.Lock()
        self._cert: ServingCert | None = issue() if tls else None
        self._server = None
        self._runners: dict[tuple[str, str], Runner] = {}
        for name in SYSTEM_NAMESPACES:
            self.put('Namespace', {'metadata': {'name': name},
                                   'status': {'phase': 'Active'}})
        for name in nodes:
            self.put('Node', {'metadata': {'name': name}})
        # As kind and minikube clusters have: claims get volumes made.
        self.put('StorageClass', {
            'metadata': {'name': 'standard', 'annotations': {
                volumes.DEFAULT_CLASS: 'true'}},
            'provisioner': 'lab.kubernetes-mgmt/provisioner'})

    # -- lifecycle ------------------------------------------------------
    def start(self) -> KubeApiDouble:
        context = self._cert.server_context() if self._cert else None
        self._server = server.serve(self, context)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> KubeApiDouble:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        scheme = 'https' if self._cert else 'http'
        return f'{scheme}://127.0.0.1:{self._server.server_port}'

    @property
    def ca_pem(self) -> str | None:
        return self._cert.ca_pem if self._cert else None

    def client_certificate(self, user: str, group: str | None = None
                           ) -> tuple[bytes, bytes]:
        """Certificate and key (PEM) of a client of this API's CA."""
        if self._cert is None:
            raise ValueError('client certificates need tls=True')
        return self._cert.client(user, group)

    # -- who may call ---------------------------------------------------
    def add_token(self, token: str, identity: rbac.Identity) -> str:
        self._tokens[token] = identity
        return token

    # -- the server's backend --------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[Store]:
        with self.store.lock:
            yield self.store

    def live_store(self) -> Store:
        return self.store

    def authenticate(self, token: str) -> rbac.Identity | None:
        return self._tokens.get(token)

    def record(self, record: RequestRecord) -> None:
        with self._log_lock:
            self._log.append(record)

    def access_info(self, token: str) -> dict:
        """A Kubernetes VIM's access info as Tacker hands it to drivers."""
        return {'auth_url': self.url, 'bearer_token': token,
                'ssl_ca_cert': self.ca_pem or 'None'}

    # -- what runs in pods -----------------------------------------------
    def on_exec(self, namespace: str, pod: str, runner: Runner) -> None:
        """Let ``kubectl exec`` into ``pod`` run commands by ``runner``."""
        self._runners[(namespace, pod)] = runner

    def run_in_pod(self, namespace: str, pod: str, argv: list[str]
                   ) -> Result:
        runner = self._runners.get((namespace, pod))
        if runner is None:
            return Result(126, stderr=f'{argv[0] if argv else "(none)"}: '
                          f'nothing runs in pod {namespace}/{pod} in this '
                          'API double\n'.encode())
        return runner(argv)

    # -- state ----------------------------------------------------------
    def put(self, kind: str, obj: dict) -> dict:
        """Create an object directly (test setup), bypassing RBAC."""
        with self.store.lock:
            return self.store.put_new(catalog.by_kind(kind),
                                      copy.deepcopy(obj))

    def objects(self, kind: str, namespace: str | None = None) -> list[dict]:
        with self.store.lock:
            controllers.advance(self.store, self.timing)
            return copy.deepcopy(self.store.of_kind(kind, namespace))

    def names(self, kind: str, namespace: str | None = None) -> list[str]:
        return [o['metadata']['name'] for o in self.objects(kind, namespace)]

    def namespaces_in_use(self, kinds: tuple[str, ...] | None = None
                          ) -> set[str]:
        """Namespaces holding at least one object (of ``kinds``)."""
        with self.store.lock:
            controllers.advance(self.store, self.timing)
            return {ns for kind, ns, _ in self.store.objects
                    if ns and (kinds is None or kind in kinds)}

    @property
    def requests(self) -> list[RequestRecord]:
        with self._log_lock:
            return list(self._log)

    def mutations(self) -> list[RequestRecord]:
        """Requests that changed (or tried to change) something."""
        return [r for r in self.requests if r.mutating]

"""One conversation with the Kubernetes API, through the dynamic client.

Every kind is handled the same way: API discovery says where it lives
(its URL and whether it is namespaced), so there is no per-kind code.
Failed calls become ``KubernetesCallFailed`` (``AccessDenied`` for 403)
naming the action, object and namespace. Every request, discovery's
included, is bounded by ``[kubernetes_cnf] request_timeout``.
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from typing import TypeVar

from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ResourceNotFoundError
from kubernetes.dynamic.resource import Resource
from urllib3.exceptions import HTTPError

from kubernetes_mgmt.cnf import vim as vim_access
from kubernetes_mgmt.cnf.errors import AccessDenied, KubernetesCallFailed
from kubernetes_mgmt.cnf.settings import Timings

T = TypeVar('T')
_MERGE_PATCH = 'application/merge-patch+json'


def _detail(exc: ApiException) -> str:
    try:
        status = json.loads(exc.body or '')
        return status.get('message') or exc.reason or str(exc.status)
    except (TypeError, ValueError, AttributeError):
        return exc.reason or str(exc.status)


def call(action: str, fn: Callable[[], T]) -> T:
    """Run one API call; describe a failure by ``action``."""
    try:
        return fn()
    except ApiException as exc:
        kind = AccessDenied if exc.status == 403 else KubernetesCallFailed
        raise kind(action, exc.status, _detail(exc)) from None
    except (HTTPError, OSError, ValueError) as exc:
        raise KubernetesCallFailed(action, None, str(exc)) from None


def where(namespace: str | None) -> str:
    return f' in namespace {namespace!r}' if namespace else ''


class _BoundedClient(DynamicClient):
    """A DynamicClient whose every request has a timeout: its discovery
    (``/version``, ``/apis``, each group) calls ``request`` without one,
    and would wait forever on a server that accepts but never answers."""

    def __init__(self, api_client, cache_file: str, timeout: float):
        self._timeout = timeout     # discovery may start in __init__
        super().__init__(api_client, cache_file=cache_file)

    def request(self, method, path, body=None, **params):
        params.setdefault('_request_timeout', self._timeout)
        return super().request(method, path, body, **params)


class KubeSession:
    """The API calls the driver makes, on one ApiClient."""

    def __init__(self, api_client, discovery_cache: str, timings: Timings):
        self._api_client = api_client
        self._cache = discovery_cache
        self._timeout = timings.request
        self._dynamic: DynamicClient | None = None
        self._resources: dict[tuple[str, str], Resource | None] = {}

    @property
    def dynamic(self) -> DynamicClient:
        if self._dynamic is None:
            self._dynamic = call('API discovery', lambda: _BoundedClient(
                self._api_client, self._cache, self._timeout))
        return self._dynamic

    def resource(self, api_version: str, kind: str) -> Resource | None:
        """The served resource for an object's apiVersion and kind."""
        key = (api_version, kind)
        if key not in self._resources:
            self._resources[key] = self._discover(api_version, kind)
        return self._resources[key]

    def _discover(self, api_version: str, kind: str) -> Resource | None:
        # The core group lives under /api: saying so spares a walk
        # through every group that happens to have a 'v1'.
        prefix = None if '/' in api_version else 'api'
        try:
            return call(f'API discovery of {api_version} {kind}',
                        lambda: self.dynamic.resources.get(
                            prefix=prefix, api_version=api_version,
                            kind=kind))
        except KubernetesCallFailed as exc:
            if exc.status == 404:
                return None
            raise
        except ResourceNotFoundError:
            return None

    def get(self, res: Resource, name: str, namespace: str | None
            ) -> dict | None:
        try:
            return call(f'read {res.kind}/{name}{where(namespace)}',
                        lambda: self.dynamic.get(
                            res, name=name, namespace=namespace).to_dict())
        except KubernetesCallFailed as exc:
            if exc.status == 404:
                return None
            raise

    def list(self, res: Resource, namespace: str | None,
             label_selector: str | None = None) -> list[dict]:
        reply = call(f'list {res.kind}{where(namespace)}',
                     lambda: self.dynamic.get(
                         res, namespace=namespace,
                         label_selector=label_selector).to_dict())
        return reply.get('items') or []

    def create(self, res: Resource, body: dict, namespace: str | None,
               dry_run: bool = False) -> dict:
        name = body['metadata']['name']
        verb = 'check (dry run) creating' if dry_run else 'create'
        return call(f'{verb} {res.kind}/{name}{where(namespace)}',
                    lambda: self.dynamic.create(
                        res, body=body, namespace=namespace,
                        dry_run='All' if dry_run else None).to_dict())

    def delete(self, res: Resource, name: str, namespace: str | None,
               grace_seconds: int | None = None) -> bool:
        """Delete with foreground propagation; False if already gone."""
        options = {'kind': 'DeleteOptions', 'apiVersion': 'v1',
                   'propagationPolicy': 'Foreground'}
        if grace_seconds is not None:
            options['gracePeriodSeconds'] = grace_seconds
        try:
            call(f'delete {res.kind}/{name}{where(namespace)}',
                 lambda: self.dynamic.delete(
                     res, name=name, namespace=namespace, body=options))
        except KubernetesCallFailed as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def read_scale(self, res: Resource, name: str, namespace: str) -> dict:
        return call(f'read the scale of {res.kind}/{name}{where(namespace)}',
                    lambda: self.dynamic.get(
                        res.subresources['scale'], name=name,
                        namespace=namespace).to_dict())

    def set_replicas(self, res: Resource, name: str, namespace: str,
                     replicas: int) -> dict:
        return call(
            f'scale {res.kind}/{name}{where(namespace)} to {replicas}',
            lambda: self.dynamic.patch(
                res.subresources['scale'], body={'spec': {
                    'replicas': replicas}}, name=name, namespace=namespace,
                content_type=_MERGE_PATCH).to_dict())


@contextlib.contextmanager
def open_session(vim: vim_access.VimAccess, timings: Timings
                 ) -> Iterator[KubeSession]:
    """A session whose client, CA file and discovery cache are private
    to it and gone when it ends."""
    vim_access.warn_without_ca(vim)
    with tempfile.TemporaryDirectory(prefix='kmgmt-cnf-') as workdir, \
            vim_access.api_client(vim, workdir) as client:
        yield KubeSession(client, os.path.join(workdir, 'discovery.json'),
                          timings)

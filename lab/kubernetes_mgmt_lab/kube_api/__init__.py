"""A Kubernetes API double for tests and demos.

An in-memory HTTP server (stdlib ``http.server`` in a thread, on
127.0.0.1, plain HTTP or TLS with a throwaway CA) that speaks enough of
the Kubernetes REST API for the real ``kubernetes`` client, typed and
dynamic, to run unchanged: discovery, namespaced CRUD, namespaces, the
scale subresource, pods run by tiny workload controllers, deletion with
propagation and RBAC by bearer token. It needs no root.
"""
from __future__ import annotations

import importlib

# Loaded on first use: the lab's node agents import single modules of
# this package (the store, the controllers) on every start and should not
# pay for the HTTP server, TLS and certificates they never use.
_LAZY = {
    'Timing': 'controllers', 'KubeApiDouble': 'double',
    'CNF_DRIVER_RULES': 'rbac', 'Identity': 'rbac', 'Rule': 'rbac',
    'cluster_admin': 'rbac', 'namespace_role': 'rbac',
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        module = importlib.import_module(f'{__name__}.{_LAZY[name]}')
        return getattr(module, name)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')

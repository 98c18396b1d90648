"""A Kubernetes API double for tests and demos.

An in-memory HTTP server (stdlib ``http.server`` in a thread, on
127.0.0.1, plain HTTP or TLS with a throwaway CA) that speaks enough of
the Kubernetes REST API for the real ``kubernetes`` client, typed and
dynamic, to run unchanged: discovery, namespaced CRUD, namespaces, the
scale subresource, pods run by tiny workload controllers, deletion with
propagation and RBAC by bearer token. It needs no root.
"""
from __future__ import annotations

from kubernetes_mgmt_lab import lazy

# Loaded on first use: the lab's node agents import single modules of
# this package (the store, the controllers) on every start and should not
# pay for the HTTP server, TLS and certificates they never use.
_LAZY = {
    'Timing': 'controllers', 'KubeApiDouble': 'double',
    'CNF_DRIVER_RULES': 'rbac', 'Identity': 'rbac', 'Rule': 'rbac',
    'cluster_admin': 'rbac', 'namespace_role': 'rbac',
}

__all__ = sorted(_LAZY)
__getattr__ = lazy.exports(__name__, _LAZY)

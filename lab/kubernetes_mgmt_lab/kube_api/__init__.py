"""A Kubernetes API double for tests and demos.

An in-memory HTTP server (stdlib ``http.server`` in a thread, on
127.0.0.1, plain HTTP or TLS with a throwaway CA) that speaks enough of
the Kubernetes REST API for the real ``kubernetes`` client, typed and
dynamic, to run unchanged: discovery, namespaced CRUD, namespaces, the
scale subresource, pods run by tiny workload controllers, deletion with
propagation and RBAC by bearer token. It needs no root.
"""
from kubernetes_mgmt_lab.kube_api.controllers import Timing
from kubernetes_mgmt_lab.kube_api.double import KubeApiDouble
from kubernetes_mgmt_lab.kube_api.rbac import (
    CNF_DRIVER_RULES,
    Identity,
    Rule,
    cluster_admin,
    namespace_role,
)

__all__ = ['CNF_DRIVER_RULES', 'Identity', 'KubeApiDouble', 'Rule',
           'Timing', 'cluster_admin', 'namespace_role']

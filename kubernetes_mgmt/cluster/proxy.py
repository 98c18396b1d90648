"""Proxy settings for the nodes.

Cluster-internal traffic must bypass the proxy: pod and service networks,
the API endpoint, the nodes (as one CIDR when the request gives one, never
one entry per address of it) and the usual local names.
"""
from __future__ import annotations

from collections.abc import Iterable

from kubernetes_mgmt.params.cluster_params import ClusterParams

_ALWAYS = ('localhost', '127.0.0.1', '.svc', '.cluster.local')


def no_proxy(params: ClusterParams, cluster_ips: Iterable[str],
             node_ips: Iterable[str]) -> str:
    """The NO_PROXY value for every node (the request is not changed)."""
    proxy = params.proxy
    entries: list[str] = []
    if proxy and proxy.no_proxy:
        entries += [e.strip() for e in proxy.no_proxy.split(',')]
    entries += [params.master.pod_cidr, params.master.cluster_cidr]
    entries += list(cluster_ips)
    if proxy and proxy.k8s_node_cidr:
        entries.append(proxy.k8s_node_cidr)
    else:
        entries += list(node_ips)
    entries += _ALWAYS
    return ','.join(dict.fromkeys(e for e in entries if e))

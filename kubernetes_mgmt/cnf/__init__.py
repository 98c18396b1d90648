"""A Kubernetes infra driver for CNFs that keeps each VNF in one
namespace (entry point ``kubernetes-namespaced`` in
``tacker.tacker.vnfm.drivers``).

Modules: ``plan`` validates a request offline (``manifests``,
``namespaces``, ``scope``); ``kube`` talks to the cluster; ``deploy``,
``scaling``, ``healing`` and ``teardown`` do the work; ``driver`` maps
Tacker's infra-driver calls onto them; ``tacker_store`` is the only
module that imports Tacker.
"""

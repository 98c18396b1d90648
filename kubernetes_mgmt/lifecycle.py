"""The name the v1 driver class imports (``kubernetes_mgmt.py``, whose
copy in every VNF package Tacker hashes, so it never changes): the hooks
live in the shim (``shim.v1_hooks``)."""
from kubernetes_mgmt.shim.v1_hooks import Lifecycle

__all__ = ['Lifecycle']

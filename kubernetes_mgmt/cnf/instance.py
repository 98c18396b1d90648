"""The namespace of a VNF instance lives in ``vnf_metadata``."""
from __future__ import annotations

from kubernetes_mgmt.cnf import fields, namespaces
from kubernetes_mgmt.cnf.errors import CnfError


def namespace_of(vnf_instance) -> str:
    """The instance's namespace; a clear error if it has none."""
    metadata = fields.value(vnf_instance, 'vnf_metadata', {}) or {}
    namespace = metadata.get('namespace')
    instance_id = fields.value(vnf_instance, 'id', '?')
    if not namespace:
        raise CnfError(
            f"VNF instance {instance_id} has no vnf_metadata['namespace']: "
            'it was not instantiated by the kubernetes-namespaced driver '
            '(or its metadata was changed), so the driver cannot tell '
            'where its objects are')
    problem = namespaces.label_problem(
        namespace, f"VNF instance {instance_id} vnf_metadata['namespace']")
    if problem:
        raise CnfError(str(problem))
    return namespace


def remember_namespace(vnf_instance, namespace: str) -> None:
    metadata = dict(fields.value(vnf_instance, 'vnf_metadata', {}) or {})
    metadata['namespace'] = namespace
    # Tacker's API policy reads the 'tenant' of a CNF from here
    # (enhanced tenant policy), as its own driver sets it.
    metadata['tenant'] = namespace
    vnf_instance.vnf_metadata = metadata

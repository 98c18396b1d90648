"""What the driver keeps in a VNF instance's ``vnf_metadata``: its
namespace, and during a terminate the pods' grace period (between
``delete`` and ``delete_wait``, which may run in another conductor)."""
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


GRACE_KEY = 'termination_grace_seconds'
_MAX_GRACE = 86400


def remember_grace(vnf_instance, grace: int | None) -> None:
    """Keep the grace period ``delete`` asked for (Tacker saves the
    instance before ``delete_wait``). vnf_metadata holds strings only."""
    metadata = dict(fields.value(vnf_instance, 'vnf_metadata', {}) or {})
    if grace is None:
        metadata.pop(GRACE_KEY, None)
    else:
        metadata[GRACE_KEY] = str(grace)
    vnf_instance.vnf_metadata = metadata


def grace_of(vnf_instance) -> int | None:
    """The grace period of the running terminate, if it set one."""
    metadata = fields.value(vnf_instance, 'vnf_metadata', {}) or {}
    raw = metadata.get(GRACE_KEY)
    if raw is None:
        return None
    try:
        grace = int(raw)
    except (TypeError, ValueError):
        grace = -1
    if not 0 <= grace <= _MAX_GRACE:
        # Edited through Tacker's API: a retried terminate rewrites it.
        raise CnfError(
            f"VNF instance {fields.value(vnf_instance, 'id', '?')} "
            f"vnf_metadata['{GRACE_KEY}'] is {raw!r}, not a number of "
            f'seconds between 0 and {_MAX_GRACE}; retry the terminate')
    return grace


def forget_grace(vnf_instance) -> None:
    remember_grace(vnf_instance, None)

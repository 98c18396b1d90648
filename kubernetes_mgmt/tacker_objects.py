"""Reading Tacker's objects without importing Tacker.

Hooks receive ``tacker.objects`` instances inside the conductor; tests and
the lab pass look-alikes. Everything the driver reads from them goes
through these accessors.
"""
from __future__ import annotations

from typing import Any

from kubernetes_mgmt.errors import MgmtDriverError


def additional_params(request: Any) -> dict:
    """``additionalParams`` of an LCM request object (or request body)."""
    if request is None:
        return {}
    if isinstance(request, dict):
        value = request.get('additionalParams',
                            request.get('additional_params'))
    else:
        value = getattr(request, 'additional_params', None)
    return dict(value or {})


def stored_additional_params(vnf_instance: Any) -> dict:
    """The instantiate request's additionalParams, as Tacker stored them."""
    info = getattr(vnf_instance, 'instantiated_vnf_info', None)
    return dict(getattr(info, 'additional_params', None) or {})


def stack_id(vnf_instance: Any, vnf: dict | None = None) -> str:
    """The Heat stack Tacker created for this VNF instance."""
    info = getattr(vnf_instance, 'instantiated_vnf_info', None)
    value = getattr(info, 'instance_id', None)
    if not value and vnf:
        value = vnf.get('instance_id')
    if not value:
        raise MgmtDriverError(
            f'VNF instance {getattr(vnf_instance, "id", "?")} has no Heat '
            'stack id (instantiated_vnf_info.instance_id is empty)')
    return str(value)


def instance_id(vnf_instance: Any) -> str:
    return str(getattr(vnf_instance, 'id', ''))

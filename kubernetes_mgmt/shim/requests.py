"""Tacker's hook arguments as the operations' typed requests."""
from __future__ import annotations

from typing import Any

from kubernetes_mgmt.operations.request import (
    OperationRequest,
    ScaleRequest,
)
from kubernetes_mgmt.params.cluster_params import ClusterParams
from kubernetes_mgmt.params.validate import read_stored_params
from kubernetes_mgmt.shim import tacker_objects


def operation_request(vnf_instance: Any, *,
                      params: ClusterParams | None = None,
                      vnf: dict | None = None, grant: Any = None,
                      grant_request: Any = None,
                      registries_replaced: bool = False) -> OperationRequest:
    """What an operation reads of the instance: its id and stack, the
    VNFCs Tacker recorded, the zones a grant gave (``params``: the
    cluster parameters, when the operation needs them)."""
    return OperationRequest(
        instance_id=tacker_objects.instance_id(vnf_instance),
        params=params,
        stack_id=tacker_objects.stack_id_if_any(vnf_instance, vnf),
        vnfcs=tacker_objects.vnfc_resources(vnf_instance),
        zones=tacker_objects.grant_zones(grant, grant_request, vnf_instance),
        autoheal=tacker_objects.autoheal_enabled(vnf_instance),
        registries_replaced=registries_replaced)


def stored_params(vnf_instance: Any) -> ClusterParams | None:
    """The instantiate request's cluster parameters as Tacker stored
    them, validated again; None if it stored none."""
    stored = tacker_objects.stored_additional_params(vnf_instance)
    return read_stored_params(stored) if stored else None


def day2_request(vnf_instance: Any, **kwargs: Any) -> OperationRequest:
    """The request of an operation after instantiate (its parameters are
    the stored ones)."""
    return operation_request(vnf_instance,
                             params=stored_params(vnf_instance), **kwargs)


def scale_request(request: Any) -> ScaleRequest:
    return ScaleRequest(kind=tacker_objects.scale_type(request),
                        aspect_id=tacker_objects.aspect_id(request))

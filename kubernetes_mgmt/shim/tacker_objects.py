"""Reading Tacker's objects without importing Tacker.

Hooks receive ``tacker.objects`` instances inside the conductor (v2: the
instance's dict, seen through ``v2.instance``); tests and the lab pass
look-alikes. Everything the driver reads from them goes through these
accessors, which only the shim uses.
"""
from __future__ import annotations

from typing import Any

from kubernetes_mgmt.errors import MgmtDriverError, Problem, ValidationError
from kubernetes_mgmt.operations.request import Vnfc


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


def set_additional_param(request: Any, key: str, value: Any) -> None:
    """Set one entry of a request's ``additionalParams`` (v1: Tacker
    hands the same request object to the hooks and its infra driver)."""
    if isinstance(request, dict):
        name = 'additionalParams' if 'additionalParams' in request or \
            'additional_params' not in request else 'additional_params'
        request[name] = {**(request.get(name) or {}), key: value}
    else:
        request.additional_params = {**additional_params(request),
                                     key: value}


def set_stored_additional_param(vnf_instance: Any, key: str,
                                value: Any) -> None:
    """Set one entry of the additionalParams Tacker keeps with the
    instance: v1 copies the request's into ``instantiated_vnf_info``
    before instantiate_start runs, and keeps that copy."""
    info = attr(vnf_instance, 'instantiated_vnf_info')
    if info is None:
        return
    stored = attr(info, 'additional_params') or {}
    info.additional_params = {**stored, key: value}


def stored_additional_params(vnf_instance: Any) -> dict:
    """The instantiate request's additionalParams, as Tacker stored them."""
    info = getattr(vnf_instance, 'instantiated_vnf_info', None)
    return dict(getattr(info, 'additional_params', None) or {})


def stack_id_if_any(vnf_instance: Any, vnf: dict | None = None
                    ) -> str | None:
    """The Heat stack Tacker created for this VNF instance, if it has
    one (v1 hands the ``vnf`` dict too, where it may be set first)."""
    info = getattr(vnf_instance, 'instantiated_vnf_info', None)
    value = getattr(info, 'instance_id', None)
    if not value and vnf:
        value = vnf.get('instance_id')
    return str(value) if value else None


def stack_id(vnf_instance: Any, vnf: dict | None = None) -> str:
    """The Heat stack Tacker created for this VNF instance."""
    value = stack_id_if_any(vnf_instance, vnf)
    if not value:
        raise MgmtDriverError(
            f'VNF instance {getattr(vnf_instance, "id", "?")} has no Heat '
            'stack id (instantiated_vnf_info.instance_id is empty)')
    return str(value)


def instance_id(vnf_instance: Any) -> str:
    return str(getattr(vnf_instance, 'id', ''))


def attr(obj: Any, name: str, camel: str | None = None) -> Any:
    """``obj.name``, or ``obj[name]`` / ``obj[camel]`` for a request body
    or a primitive dict."""
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(name, obj.get(camel) if camel else None)
    if callable(getattr(obj, 'obj_attr_is_set', None)):
        # An unset field of a Tacker (oslo) object raises on access.
        try:
            if not obj.obj_attr_is_set(name):
                return None
        except AttributeError:      # not a field of that object
            return getattr(obj, name, None)
    return getattr(obj, name, None)


def scale_type(request: Any) -> str:
    """``SCALE_OUT`` or ``SCALE_IN`` (as given)."""
    return str(attr(request, 'type') or '')


def aspect_id(request: Any) -> str:
    return str(attr(request, 'aspect_id', 'aspectId') or '')


def vnfc_instance_ids(heal_request: Any) -> list[str]:
    """The VNFCs a heal names; empty: heal the whole VNF (SOL003)."""
    value = attr(heal_request, 'vnfc_instance_id', 'vnfcInstanceId')
    return [str(v) for v in value or []]


def heal_force(heal_request: Any) -> bool:
    """``additionalParams.force`` of a heal: true lifts the heal guards
    an operator may overrule (cluster.heal_guard)."""
    value = additional_params(heal_request).get('force', False)
    if not isinstance(value, bool):
        raise ValidationError([Problem(
            'additionalParams.force',
            f'must be true or false, not {value!r}')])
    return value


def autoheal_enabled(vnf_instance: Any) -> bool:
    """``vnfConfigurableProperties.isAutohealEnabled``: Tacker's
    Prometheus plugin heals this instance's VNFCs on alerts."""
    props = attr(vnf_instance, 'vnf_configurable_properties',
                 'vnfConfigurableProperties')
    return isinstance(props, dict) and props.get('isAutohealEnabled') is True


def vnfc_resources(vnf_instance: Any) -> dict[str, Vnfc]:
    """VNFC id -> its server, as Tacker last recorded it (the conductor
    refreshes it after every stack update)."""
    info = getattr(vnf_instance, 'instantiated_vnf_info', None)
    found = {}
    for entry in attr(info, 'vnfc_resource_info') or []:
        compute = attr(entry, 'compute_resource', 'computeResource')
        vnfc_id = str(attr(entry, 'id') or '')
        if vnfc_id:
            found[vnfc_id] = Vnfc(
                id=vnfc_id,
                vdu_id=str(attr(entry, 'vdu_id', 'vduId') or ''),
                server_id=str(attr(compute, 'resource_id', 'resourceId')
                              or ''))
    return found


def grant_zones(grant: Any, grant_request: Any,
                vnf_instance: Any) -> dict[str, str]:
    """Nova server id -> the availability zone a Grant gave its VM.

    A grant's ``add_resources``/``update_resources`` entry names, by
    ``resource_definition_id``, the VNFC (Tacker gives a VNFC the id of
    its resource definition) or a resource definition of the grant
    request whose handle is the server; its ``zone_id`` refers to an
    entry of ``zones`` carrying the zone's name.
    """
    if grant is None:
        return {}
    zones = {str(attr(z, 'id')): str(attr(z, 'zone_id', 'zoneId'))
             for z in attr(grant, 'zones') or []
             if attr(z, 'zone_id', 'zoneId')}
    servers = {vnfc.id: vnfc.server_id
               for vnfc in vnfc_resources(vnf_instance).values()}
    servers.update(_requested_servers(grant_request))
    found = {}
    for name, camel in (('add_resources', 'addResources'),
                        ('update_resources', 'updateResources')):
        for entry in attr(grant, name, camel) or []:
            zone = zones.get(str(attr(entry, 'zone_id', 'zoneId')))
            server = servers.get(str(attr(
                entry, 'resource_definition_id', 'resourceDefinitionId')))
            if zone and server:
                found[server] = zone
    return found


def _requested_servers(grant_request: Any) -> dict[str, str]:
    """Resource definition id -> server id, where the request names
    one (update resources of a heal)."""
    found = {}
    for name, camel in (('add_resources', 'addResources'),
                        ('update_resources', 'updateResources')):
        for entry in attr(grant_request, name, camel) or []:
            handle = attr(entry, 'resource')
            server = attr(handle, 'resource_id', 'resourceId')
            if server:
                found[str(attr(entry, 'id'))] = str(server)
    return found

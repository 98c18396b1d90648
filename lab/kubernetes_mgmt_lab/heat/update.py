"""Stack updates of the double: scale groups and replace unhealthy hosts.

A PATCH (``existing``) update may set a group's size through the parameter
``nfv.VDU.<server resource>.desired_capacity`` or through the template's
``resources.<group>.properties.desired_capacity``; other changes are
ignored. Like Heat's AutoScalingGroup, scale-in removes members marked
unhealthy first, then the oldest; members still unhealthy after that are
replaced. The lab manager does the actual work.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

import yaml

from kubernetes_mgmt_lab.state import LabHost, LabState


class BadRequest(ValueError):
    """The update body cannot be understood."""


class LabMutations(Protocol):
    """What ``kubernetes_mgmt_lab.manager.Lab`` offers for updates."""

    def add_hosts(self, role: str, count: int = 1) -> list[LabHost]: ...
    def remove_host(self, name: str) -> None: ...
    def replace_host(self, name: str) -> LabHost: ...


@dataclass
class UpdatePlan:
    remove: list[str] = field(default_factory=list)    # host names
    replace: list[str] = field(default_factory=list)   # host names
    add: list[str] = field(default_factory=list)       # one role per host

    @property
    def empty(self) -> bool:
        return not (self.remove or self.replace or self.add)


def desired_sizes(state: LabState, body: dict) -> dict[str, int]:
    """Role -> requested group size, from an update body."""
    template = _mapping(_decode(body.get('template')), 'template')
    resources = _mapping(template.get('resources'), 'template.resources')
    params = _mapping(body.get('parameters'), 'parameters')
    nfv = _mapping(_decode(params.get('nfv')), 'parameters.nfv')
    vdus = _mapping(nfv.get('VDU'), 'parameters.nfv.VDU')
    sizes: dict[str, int] = {}
    for layout in state.layouts:
        if not layout.group:
            continue
        where = f'template.resources.{layout.group}'
        group = _mapping(resources.get(layout.group), where)
        props = _mapping(group.get('properties'), f'{where}.properties')
        vdu = _mapping(vdus.get(layout.server),
                       f'parameters.nfv.VDU.{layout.server}')
        # The parameter comes last and wins: Tacker's scale sets it.
        for what, value in ((f'{where}.properties', props),
                            (f'parameters.nfv.VDU.{layout.server}', vdu)):
            size = _size(value.get('desired_capacity'),
                         f'{what}.desired_capacity')
            if size is not None:
                sizes[layout.role] = size
    return sizes


def _decode(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return yaml.safe_load(value)
        except yaml.YAMLError as e:
            raise BadRequest(f'cannot parse {value[:40]!r}: {e}') from e
    return value


def _mapping(value: Any, what: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadRequest(f'{what} must be a mapping')
    return value


def _size(value: Any, what: str) -> int | None:
    if value is None or isinstance(value, dict):
        return None  # absent, or an intrinsic such as get_param
    try:
        size = int(json.loads(value) if isinstance(value, str) else value)
    except (TypeError, ValueError) as e:
        raise BadRequest(f'{what} is not a number: {value!r}') from e
    if size < 0:
        raise BadRequest(f'{what} must not be negative: {size}')
    return size


def plan(state: LabState, sizes: dict[str, int]) -> UpdatePlan:
    result = UpdatePlan()
    grouped = {layout.role for layout in state.layouts if layout.group}
    for role in sorted(grouped):
        members = _removal_order([h for h in state.hosts if h.role == role])
        size = sizes.get(role, len(members))
        cut = max(len(members) - size, 0)
        result.remove += [h.name for h in members[:cut]]
        result.replace += [h.name for h in members[cut:] if h.unhealthy]
        result.add += [role] * max(size - len(members), 0)
    result.replace += [h.name for h in state.hosts
                       if h.unhealthy and h.role not in grouped]
    return result


def _removal_order(members: list[LabHost]) -> list[LabHost]:
    # Heat's group removes failed members first, then the oldest; the lab
    # keeps hosts in creation order.
    return sorted(members, key=lambda h: not h.unhealthy)


def apply(update: UpdatePlan, lab: LabMutations) -> None:
    for name in update.remove:
        lab.remove_host(name)
    for name in update.replace:
        lab.replace_host(name)
    for role in sorted(set(update.add)):
        # New hosts of one role boot in parallel.
        lab.add_hosts(role, update.add.count(role))

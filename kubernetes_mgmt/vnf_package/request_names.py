"""Names an Instantiate request takes from the package, checked there.

A request names the package's connection points, virtual links, VDUs,
aspects and instantiation levels (SOL003 fields, Tacker's user data
parameters) and, in the cluster parameters, Heat resources of the
flavour's BaseHOT the driver looks up by name: the ports to log in on and
to serve the cluster, the floating IP, the storage volume. A name the
package lacks is found by Tacker or the driver only at instantiation,
after VMs were created; verify finds it before the upload.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes_mgmt.params.paths import Path, render, select
from kubernetes_mgmt.params.schema import PARAM_KEY, suggest
from kubernetes_mgmt.vnf_package import basehot
from kubernetes_mgmt.vnf_package.csar import Csar
from kubernetes_mgmt.vnf_package.tosca_types import (
    INSTANTIATION_LEVELS,
    SCALING_ASPECTS,
    VDU,
    VDU_CP,
    VIRTUAL_LINK,
    derives,
    flavour_id,
    node_templates,
    node_types,
    policies,
)

_CAMEL_PARAM_KEY = 'k8sClusterInstallationParam'
# What each kind of name is checked against, for messages.
CP = 'connection point'
LINK = 'virtual link'
VDU_NAME = 'VDU'
ASPECT = 'aspect'
LEVEL = 'instantiation level'
PORT = 'port'                   # Heat resources, by their type
FLOATING_IP = 'floating IP'
VOLUME = 'volume'
_HEAT_TYPES = {PORT: 'OS::Neutron::Port',
               FLOATING_IP: 'OS::Neutron::FloatingIP',
               VOLUME: 'OS::Cinder::Volume'}
_SHOWN = 8          # known names listed when none is close

# (path in the request body, kind); '*' is every entry of a list, '&'
# every key of a map.
_SOL003: tuple[tuple[Path, str], ...] = (
    (('instantiationLevelId',), LEVEL),
    (('extVirtualLinks', '*', 'extCps', '*', 'cpdId'), CP),
    (('extManagedVirtualLinks', '*', 'vnfVirtualLinkDescId'), LINK),
    (('additionalParams', 'nfv', 'VDU', '&'), VDU_NAME),
    (('additionalParams', 'nfv', 'CP', '&'), CP),
)
# Inside k8s_cluster_installation_param.
_CLUSTER: tuple[tuple[Path, str], ...] = (
    (('master_node', 'aspect_id'), ASPECT),
    (('worker_node', 'aspect_id'), ASPECT),
    (('master_node', 'ssh_cp_name'), PORT),
    (('master_node', 'nic_cp_name'), PORT),
    (('master_node', 'cluster_cp_name'), PORT),
    (('master_node', 'cluster_fip_name'), FLOATING_IP),
    (('worker_node', 'ssh_cp_name'), PORT),
    (('worker_node', 'nic_cp_name'), PORT),
    (('storage_server', 'ssh_cp_name'), PORT),
    (('storage_server', 'cinder_volume_setup_params', '*',
      'volume_resource_id'), VOLUME),
    (('pv_registration_params', '*', 'nfs_server_cp'), PORT),
)


@dataclass(frozen=True)
class FlavourNames:
    """What one flavour of the package offers, by kind of name."""

    flavour: str
    names: Mapping[str, frozenset[str]]
    heat_dir: str | None            # BaseHOT/<flavour>, if the package has it

    def where(self, kind: str) -> str:
        if kind in _HEAT_TYPES:
            return (f'{self.heat_dir} (its {_HEAT_TYPES[kind]} resources, '
                    'top and nested templates)')
        return f'flavour {self.flavour} of the VNFD'


def of_flavour(csar: Csar, documents: Mapping[str, Any],
               flavour: str) -> FlavourNames:
    types = node_types(documents.values())
    template = next((d for d in documents.values()
                     if flavour_id(d) == flavour), {})
    nodes = node_templates(template)

    def nodes_of(base: str) -> frozenset[str]:
        return frozenset(n for n, node in nodes.items()
                         if derives(node.get('type'), base, types))

    heat = basehot.inspect(csar, flavour)
    resources = _resources(csar, [heat.top, *heat.nested])
    names = {CP: nodes_of(VDU_CP), LINK: nodes_of(VIRTUAL_LINK),
             VDU_NAME: nodes_of(VDU),
             ASPECT: _policy_keys(template, SCALING_ASPECTS, 'aspects'),
             LEVEL: _policy_keys(template, INSTANTIATION_LEVELS, 'levels'),
             **{kind: frozenset(n for n, t in resources.items()
                                if t == heat_type)
                for kind, heat_type in _HEAT_TYPES.items()}}
    return FlavourNames(flavour, names,
                        heat.top.rsplit('/', 1)[0] if heat.top else None)


def problems(request: str, body: dict, offered: FlavourNames) -> list[str]:
    """One line per name of ``body`` that ``offered`` lacks."""
    found = []
    for path, kind, name in _named(body):
        if kind in _HEAT_TYPES and offered.heat_dir is None:
            continue        # no BaseHOT: the BaseHOT check reports it
        known = offered.names[kind]
        if name not in known:
            found.append(
                f'{request}: {render("", path)} names {kind} {name}, which '
                f'{offered.where(kind)} does not have{_hint(name, known)}')
    return found


def _hint(name: str, known: frozenset[str]) -> str:
    close = suggest(name, sorted(known))
    if close:
        return f'; did you mean {close}?'
    shown = sorted(known)[:_SHOWN]
    more = len(known) - len(shown)
    return f' (it has: {", ".join(shown) or "none"}' + (
        f' and {more} more)' if more else ')')


def _named(body: dict) -> Iterable[tuple[Path, str, str]]:
    for pattern, kind in _SOL003:
        yield from _values(body, pattern, kind, ())
    additional = body.get('additionalParams')
    if not isinstance(additional, dict):
        return
    key = PARAM_KEY if PARAM_KEY in additional else _CAMEL_PARAM_KEY
    for pattern, kind in _CLUSTER:
        yield from _values(additional.get(key), pattern, kind,
                           ('additionalParams', key))


def _values(node: Any, pattern: Path, kind: str,
            base: Path) -> Iterable[tuple[Path, str, str]]:
    if pattern[-1] == '&':          # the keys of a map name things
        for path, value in select(node, pattern[:-1]):
            for key in value if isinstance(value, dict) else ():
                yield (*base, *path, key), kind, str(key)
        return
    for path, value in select(node, pattern):
        if isinstance(value, str) and value:
            yield (*base, *path), kind, value


def _policy_keys(template: Any, policy_type: str,
                 key: str) -> frozenset[str]:
    return frozenset(str(name) for _, policy in policies(template)
                     if policy.get('type') == policy_type
                     for name in ((policy.get('properties') or {}).get(key)
                                  or {}))


def _resources(csar: Csar, templates: list[str | None]) -> dict[str, str]:
    """Resource name -> type, of the flavour's Heat templates."""
    found: dict[str, str] = {}
    for name in templates:
        try:
            template = csar.load_yaml(name) if name else None
        except ValueError:
            continue        # the BaseHOT check reports it
        resources = template.get('resources') if isinstance(
            template, dict) else None
        for resource, body in (resources or {}).items():
            if isinstance(body, dict):
                found[str(resource)] = str(body.get('type'))
    return found

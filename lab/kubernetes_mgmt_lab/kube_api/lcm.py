"""Drive an infra driver through Tacker's v1 LCM call sequences, with
in-memory stand-ins for Tacker's objects and database.

``LcmRunner`` calls the driver methods in the order and with the keyword
arguments Tacker 16's ``VnfLcmDriver`` uses (instantiate, scale, heal,
terminate), so tests and demos exercise the driver as Tacker would,
against the API double, without Tacker installed.
"""
from __future__ import annotations

import copy
import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from kubernetes_mgmt.cnf import vnfd as vnfd_policies
from kubernetes_mgmt.cnf.driver import KubernetesNamespacedDriver
from kubernetes_mgmt.cnf.records import ResourceRecord
from kubernetes_mgmt.cnf.settings import Timings
from kubernetes_mgmt.cnf.vnfcs import VnfcSpec
from kubernetes_mgmt_lab.tacker_shapes import (
    HealVnfRequest,
    InstantiatedVnfInfo,
    InstantiateVnfRequest,
    ResourceHandle,
    ScaleVnfRequest,
    TerminateVnfRequest,
    VimConnectionInfo,
    VnfcResourceInfo,
    VnfInstance,
)


@dataclass
class VnfResource:
    """A VnfResource row; ``create()`` stores it, as Tacker's does."""

    store: MemoryStore = field(repr=False)
    vnf_instance_id: str
    resource_name: str
    resource_type: str

    def create(self) -> None:
        self.store.rows.setdefault(self.vnf_instance_id, []).append(self)


def flavour_vnfd(package_dir: Path, flavour_id: str) -> dict:
    """The VNFD file of a flavour, found as Tacker finds it: a YAML file
    (at the top or one directory down) whose substitution_mappings name
    the flavour."""
    candidates = [p for p in sorted(package_dir.iterdir())
                  if p.suffix in ('.yaml', '.yml')]
    for directory in sorted(p for p in package_dir.iterdir() if p.is_dir()):
        candidates += [p for p in sorted(directory.iterdir())
                       if p.suffix in ('.yaml', '.yml')]
    for path in candidates:
        data = yaml.safe_load(path.read_text(encoding='utf-8')) or {}
        mapping = (data.get('topology_template') or {}).get(
            'substitution_mappings') or {}
        if (mapping.get('properties') or {}).get('flavour_id') == flavour_id:
            return data
    raise LookupError(f'no VNFD of flavour {flavour_id!r} in {package_dir}')


@dataclass
class MemoryStore:
    """``LcmStore`` from memory: packages by VNFD id, instances, rows."""

    packages: dict[str, Path] = field(default_factory=dict)
    instances: dict[str, VnfInstance] = field(default_factory=dict)
    rows: dict[str, list[VnfResource]] = field(default_factory=dict)

    def package_dir(self, context, vnfd_id: str) -> str:
        return str(self.packages[vnfd_id])

    def vnfd(self, context, vnfd_id: str, flavour_id: str) -> dict:
        return flavour_vnfd(self.packages[vnfd_id], flavour_id)

    def load_instance(self, context, vnf_instance_id: str) -> VnfInstance:
        return self.instances[vnf_instance_id]

    def resources(self, context, vnf_instance_id: str
                  ) -> list[ResourceRecord]:
        return [ResourceRecord.from_row(r.resource_type, r.resource_name)
                for r in self.rows.get(vnf_instance_id, [])]

    def new_resource(self, context, vnf_instance,
                     record: ResourceRecord) -> VnfResource:
        return VnfResource(self, vnf_instance.id, record.name,
                           record.resource_type)

    def new_vnfc(self, spec: VnfcSpec) -> VnfcResourceInfo:
        return VnfcResourceInfo(
            id=str(uuid.uuid4()), vdu_id=spec.vdu_id,
            compute_resource=ResourceHandle(
                resource_id=spec.pod_name,
                vim_level_resource_type=spec.kind),
            metadata=dict(spec.metadata))

    def save(self, vnf_instance) -> None:
        vnf_instance.save()


# The double's controllers act within milliseconds: short waits.
QUICK = Timings(ready=10, scale=10, heal=10, delete=10, poll_first=0.01,
                poll_ceiling=0.05, request=10)


@dataclass
class LcmRunner:
    """Tacker's v1 LCM sequences around one infra driver."""

    driver: object
    store: MemoryStore
    access_info: dict
    context: object = None

    @property
    def vim(self) -> VimConnectionInfo:
        return VimConnectionInfo(id=str(uuid.uuid4()), vim_id='vim-1',
                                 vim_type='kubernetes',
                                 access_info=dict(self.access_info))

    def new_instance(self, vnfd_id: str, flavour_id: str = 'simple',
                     additional_params: dict | None = None) -> VnfInstance:
        instance = VnfInstance(id=str(uuid.uuid4()), vnfd_id=vnfd_id)
        instance.instantiated_vnf_info = InstantiatedVnfInfo(
            flavour_id=flavour_id,
            additional_params=dict(additional_params or {}))
        self.store.instances[instance.id] = instance
        return instance

    def instantiate(self, instance: VnfInstance,
                    request: InstantiateVnfRequest) -> None:
        """VnfLcmDriver._instantiate_vnf."""
        vim = self.vim
        package = self.store.package_dir(self.context, instance.vnfd_id)
        resources = self.driver.pre_instantiation_vnf(
            context=self.context, vnf_instance=instance,
            vim_connection_info=vim, vnf_software_images={},
            instantiate_vnf_req=request, vnf_package_path=package)
        for rows in resources.values():
            for row in rows:
                row.create()
        vnf_dict = {'attributes': {}, 'before_error_point': 0}
        instance_id = self.driver.instantiate_vnf(
            context=self.context, plugin=None, vnf_instance=instance,
            vnfd_dict=vnf_dict, grant_response=resources,
            vim_connection_info=vim, vnf_package_path=package,
            instantiate_vnf_req=request)
        instance.instantiated_vnf_info.instance_id = instance_id
        self.driver.create_wait(
            plugin=None, context=self.context, vnf_dict=vnf_dict,
            vnf_id=vnf_dict['instance_id'], auth_attr=vim.access_info)
        self.driver.post_vnf_instantiation(
            context=self.context, vnf_instance=instance,
            vim_connection_info=vim, instantiate_vnf_req=request)

    def scale(self, instance: VnfInstance, request: ScaleVnfRequest) -> None:
        """VnfLcmDriver.scale_vnf for a Kubernetes VIM."""
        vim = self.vim
        action = 'out' if request.type == 'SCALE_OUT' else 'in'
        vnf_info = {'vnf_lcm_op_occ': {'vnf_instance_id': instance.id},
                    'policy_name': request.aspect_id, 'action': action}
        if action == 'in':
            self.driver.get_scale_in_ids(
                plugin=None, context=self.context, vnf_dict=vnf_info,
                is_reverse=None, auth_attr=vim.access_info,
                region_name=None, number_of_steps=request.number_of_steps)
        else:
            self.driver.get_scale_ids(
                plugin=None, context=self.context, vnf_dict=vnf_info,
                auth_attr=vim.access_info, region_name=None)
        vnfd = self.store.vnfd(self.context, instance.vnfd_id,
                               instance.instantiated_vnf_info.flavour_id)
        policy = {'instance_id': instance.instantiated_vnf_info.instance_id,
                  'name': request.aspect_id, 'vnf': vnf_info,
                  'action': action, 'vnf_instance_id': instance.id,
                  'vdu_defs': copy.deepcopy(vnfd_policies.aspect_vdu_defs(
                      vnfd, request.aspect_id)),
                  'delta_num': vnfd_policies.aspect_delta(
                      vnfd, request.aspect_id)}
        for _ in range(request.number_of_steps):
            event = self.driver.scale(
                plugin=None, context=self.context,
                auth_attr=vim.access_info, policy=policy, region_name=None)
            self.driver.scale_wait(
                plugin=None, context=self.context,
                auth_attr=vim.access_info, policy=policy, region_name=None,
                last_event_id=event)
        self.driver.scale_resource_update(
            context=self.context, vnf_instance=instance,
            vnf_info=vnf_info, scale_vnf_request=request,
            vim_connection_info=vim)

    def rollback_scale_out(self, instance: VnfInstance,
                           request: ScaleVnfRequest) -> None:
        """VnfLcmDriver._rollback_vnf of a SCALE operation."""
        vim = self.vim
        vnf_info = {'vnf_lcm_op_occ': {
            'vnf_instance_id': instance.id,
            'operation_params': json.dumps({'aspect_id': request.aspect_id,
                                            'type': request.type})}}
        self.driver.scale_in_reverse(
            plugin=None, context=self.context, auth_attr=vim.access_info,
            vnf_info=vnf_info, scale_vnf_request=request, region_name=None,
            scale_name_list=[], grp_id=None, vnf_instance=instance)
        self.driver.scale_update_wait(
            plugin=None, context=self.context, auth_attr=vim.access_info,
            vnf_info=vnf_info, region_name=None)

    def heal(self, instance: VnfInstance, request: HealVnfRequest) -> None:
        """VnfLcmDriver._heal_vnf (a heal naming VNFC instances), then the
        conductor's _update_instantiated_vnf_info: Tacker 16 calls
        post_heal_vnf twice."""
        kwargs = {'context': self.context, 'vnf_instance': instance,
                  'vim_connection_info': self.vim,
                  'heal_vnf_request': request}
        self.driver.heal_vnf(**kwargs)
        self.driver.heal_vnf_wait(**kwargs)
        self.driver.post_heal_vnf(**kwargs)
        self.driver.post_heal_vnf(**kwargs)

    def terminate(self, instance: VnfInstance,
                  request: TerminateVnfRequest) -> None:
        """VnfLcmDriver._delete_vnf_instance_resources."""
        vim = self.vim
        instance_id = instance.instantiated_vnf_info.instance_id
        self.driver.delete(
            plugin=self, context=self.context, vnf_id=instance_id,
            auth_attr=vim.access_info, vnf_instance=instance,
            terminate_vnf_req=request)
        self.driver.delete_wait(
            plugin=self, context=self.context, vnf_id=instance_id,
            auth_attr=vim.access_info, vnf_instance=instance)
        for row in self.store.rows.pop(instance.id, []):
            self.driver.delete_vnf_instance_resource(
                context=self.context, vnf_instance=instance,
                vim_connection_info=vim, vnf_resource=row)
        instance.instantiated_vnf_info = None


def runner_for(access_info: dict, packages: dict[str, Path],
               timings: Timings = QUICK) -> LcmRunner:
    """The namespaced driver with an in-memory store holding
    ``packages`` (VNFD id -> package directory)."""
    store = MemoryStore(packages=packages)
    return LcmRunner(KubernetesNamespacedDriver(store, timings), store,
                     access_info)

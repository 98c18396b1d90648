"""The ``LcmStore`` of a real Tacker: its database objects and files.

The only module of the driver that imports Tacker (lazily, so the rest
is importable and testable without it).
"""
from __future__ import annotations

from kubernetes_mgmt.cnf.records import ResourceRecord
from kubernetes_mgmt.cnf.vnfcs import VnfcSpec


class TackerStore:
    def package_dir(self, context, vnfd_id: str) -> str:
        from tacker.vnflcm import utils as vnflcm_utils

        return vnflcm_utils._get_vnf_package_path(context, vnfd_id)

    def vnfd(self, context, vnfd_id: str, flavour_id: str) -> dict:
        from tacker.vnflcm import utils as vnflcm_utils

        return vnflcm_utils._get_vnfd_dict(context, vnfd_id, flavour_id)

    def load_instance(self, context, vnf_instance_id: str):
        from tacker import objects

        return objects.VnfInstance.get_by_id(context, vnf_instance_id)

    def resources(self, context, vnf_instance_id: str
                  ) -> list[ResourceRecord]:
        from tacker import objects

        rows = objects.VnfResourceList.get_by_vnf_instance_id(
            context, vnf_instance_id)
        return [ResourceRecord.from_row(r.resource_type, r.resource_name)
                for r in rows]

    def new_resource(self, context, vnf_instance, record: ResourceRecord):
        from tacker.objects import vnf_resources

        return vnf_resources.VnfResource(
            context=context, vnf_instance_id=vnf_instance.id,
            resource_name=record.name, resource_type=record.resource_type,
            resource_identifier='', resource_status='',
            tenant_id=vnf_instance.tenant_id)

    def new_vnfc(self, spec: VnfcSpec):
        from oslo_utils import uuidutils
        from tacker import objects

        return objects.VnfcResourceInfo(
            id=uuidutils.generate_uuid(), vdu_id=spec.vdu_id,
            compute_resource=objects.ResourceHandle(
                resource_id=spec.pod_name,
                vim_level_resource_type=spec.kind),
            metadata=dict(spec.metadata))

    def save(self, vnf_instance) -> None:
        vnf_instance.save()

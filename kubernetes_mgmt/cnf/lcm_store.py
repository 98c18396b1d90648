"""What the driver needs from Tacker besides the objects it is handed.

Tacker's infra-driver calls do not carry everything: ``scale`` gets an
instance id, ``delete`` must find the objects recorded at instantiation,
and the VNFD and package live on Tacker's side. ``tacker_store`` answers
these from Tacker's database and files; tests and the lab answer them
from memory (``kubernetes_mgmt_lab.kube_api.lcm``).
"""
from __future__ import annotations

from typing import Protocol

from kubernetes_mgmt.cnf.records import ResourceRecord
from kubernetes_mgmt.cnf.vnfcs import VnfcSpec


class LcmStore(Protocol):
    def package_dir(self, context, vnfd_id: str) -> str:
        """The unpacked VNF package of ``vnfd_id``."""

    def vnfd(self, context, vnfd_id: str, flavour_id: str) -> dict:
        """The VNFD of one deployment flavour, as a dict."""

    def load_instance(self, context, vnf_instance_id: str):
        """The VnfInstance with this id."""

    def resources(self, context, vnf_instance_id: str
                  ) -> list[ResourceRecord]:
        """The objects recorded for the instance (VnfResource rows)."""

    def new_resource(self, context, vnf_instance, record: ResourceRecord):
        """A VnfResource for ``record``; Tacker saves what
        pre_instantiation_vnf returns."""

    def new_vnfc(self, spec: VnfcSpec):
        """A VnfcResourceInfo for one pod."""

    def save(self, vnf_instance) -> None:
        """Persist changed fields of the instance (vnf_metadata)."""

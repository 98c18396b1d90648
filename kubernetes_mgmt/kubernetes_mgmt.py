# Tacker loads this class and hashes THIS FILE: Tacker compares its SHA-256
# with the VNF package's Scripts/kubernetes_mgmt.py before every LCM hook.
# Any edit here breaks existing VNF instances whose package has the old copy,
# so this module only forwards each hook; the work lives in other modules.
"""Tacker Mgmt Driver ``mgmt-drivers-kubernetes`` (stable shim)."""

from kubernetes_mgmt import lifecycle

try:
    from tacker.vnfm.mgmt_drivers.vnflcm_abstract_driver import (
        VnflcmMgmtAbstractDriver as _Base,
    )
except ImportError:  # Tacker is not installed: tests, CLI, lab
    _Base = object


class KubernetesMgmtDriver(_Base):
    """Builds and maintains a Kubernetes cluster on the VNF's VMs."""

    def __init__(self):
        # Stateless: one instance serves concurrent operations.
        self._lcm = lifecycle.Lifecycle()

    def get_type(self):
        return 'mgmt-drivers-kubernetes'

    def get_name(self):
        return 'mgmt-drivers-kubernetes'

    def get_description(self):
        return 'Tacker VNFMgmt Kubernetes cluster driver'

    def instantiate_start(self, context, vnf_instance,
                          instantiate_vnf_request, grant,
                          grant_request, **kwargs):
        return self._lcm.instantiate_start(
            context, vnf_instance, instantiate_vnf_request, grant,
            grant_request, **kwargs)

    def instantiate_end(self, context, vnf_instance,
                        instantiate_vnf_request, grant,
                        grant_request, **kwargs):
        return self._lcm.instantiate_end(
            context, vnf_instance, instantiate_vnf_request, grant,
            grant_request, **kwargs)

    def terminate_start(self, context, vnf_instance,
                        terminate_vnf_request, grant,
                        grant_request, **kwargs):
        return self._lcm.terminate_start(
            context, vnf_instance, terminate_vnf_request, grant,
            grant_request, **kwargs)

    def terminate_end(self, context, vnf_instance,
                      terminate_vnf_request, grant,
                      grant_request, **kwargs):
        return self._lcm.terminate_end(
            context, vnf_instance, terminate_vnf_request, grant,
            grant_request, **kwargs)

    def scale_start(self, context, vnf_instance,
                    scale_vnf_request, grant,
                    grant_request, **kwargs):
        return self._lcm.scale_start(
            context, vnf_instance, scale_vnf_request, grant,
            grant_request, **kwargs)

    def scale_end(self, context, vnf_instance,
                  scale_vnf_request, grant,
                  grant_request, **kwargs):
        return self._lcm.scale_end(
            context, vnf_instance, scale_vnf_request, grant,
            grant_request, **kwargs)

    def heal_start(self, context, vnf_instance,
                   heal_vnf_request, grant,
                   grant_request, **kwargs):
        return self._lcm.heal_start(
            context, vnf_instance, heal_vnf_request, grant,
            grant_request, **kwargs)

    def heal_end(self, context, vnf_instance,
                 heal_vnf_request, grant,
                 grant_request, **kwargs):
        return self._lcm.heal_end(
            context, vnf_instance, heal_vnf_request, grant,
            grant_request, **kwargs)

    def change_external_connectivity_start(
            self, context, vnf_instance,
            change_ext_conn_request, grant,
            grant_request, **kwargs):
        return self._lcm.change_external_connectivity_start(
            context, vnf_instance, change_ext_conn_request, grant,
            grant_request, **kwargs)

    def change_external_connectivity_end(
            self, context, vnf_instance,
            change_ext_conn_request, grant,
            grant_request, **kwargs):
        return self._lcm.change_external_connectivity_end(
            context, vnf_instance, change_ext_conn_request, grant,
            grant_request, **kwargs)

    def modify_information_start(self, context, vnf_instance,
                                 modify_vnf_request, **kwargs):
        return self._lcm.modify_information_start(
            context, vnf_instance, modify_vnf_request, **kwargs)

    def modify_information_end(self, context, vnf_instance,
                               modify_vnf_request, **kwargs):
        return self._lcm.modify_information_end(
            context, vnf_instance, modify_vnf_request, **kwargs)

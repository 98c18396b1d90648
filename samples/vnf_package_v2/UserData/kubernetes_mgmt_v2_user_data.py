"""Heat parameters for BaseHOT/<flavour> of the v2 package.

Tacker's v2 OpenStack infra driver loads user data from the package only
(additionalParams ``lcm-operation-user-data``/``-class``). Tacker's own
standard user data does what this package needs: one nested stack per VM,
named ``<VDU>-<index>``, flavors, images, networks and zones from the
VNFD, the grant and the request. This class adds one parameter: the
cloud-init user data with the Mgmt Driver's login key, which the driver's
``instantiate_start`` (and ``heal_start``) put in the instance's metadata
just before. A later stack update keeps the parameter as it is.
"""
from tacker.sol_refactored.infra_drivers.openstack import userdata_standard

# The BaseHOT parameter and the instance metadata key that carry it.
USER_DATA = 'kubernetes_mgmt_user_data'


class KubernetesClusterUserData(userdata_standard.StandardUserData):
    """Tacker's StandardUserData, plus the driver's cloud-init data."""

    @staticmethod
    def instantiate(req, inst, grant_req, grant, tmp_csar_dir):
        fields = userdata_standard.StandardUserData.instantiate(
            req, inst, grant_req, grant, tmp_csar_dir)
        text = (inst.get('metadata') or {}).get(USER_DATA)
        if text:
            fields.setdefault('parameters', {})[USER_DATA] = text
        return fields

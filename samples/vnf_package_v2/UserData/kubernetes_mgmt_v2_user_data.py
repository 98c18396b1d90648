"""Heat parameters for BaseHOT/<flavour> of the v2 package.

Tacker's v2 OpenStack infra driver loads user data from the package only
(additionalParams ``lcm-operation-user-data``/``-class``). Tacker's own
standard user data does what this package needs: one nested stack per VM,
named ``<VDU>-<index>``, flavors, images, networks and zones from the
VNFD, the grant and the request. It is used as it is.
"""
from tacker.sol_refactored.infra_drivers.openstack import userdata_standard


class KubernetesClusterUserData(userdata_standard.StandardUserData):
    """Tacker's StandardUserData under this package's name."""

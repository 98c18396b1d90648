"""Heat parameters for the Kubernetes cluster BaseHOT (Tacker user data).

Tacker's OpenStack infra driver imports this file from the unpacked VNF
package when the Instantiate request names it (additionalParams
``lcm-operation-user-data: ./UserData/k8s_cluster_user_data.py`` and
``lcm-operation-user-data-class: KubernetesClusterUserData``), calls
``KubernetesClusterUserData.instantiate`` and creates the Heat stack from
``BaseHOT/<flavourId>/`` with the returned parameters. A whole-VNF heal
calls it again. It runs inside tacker-conductor, so Tacker's own helpers
are used to read the VNFD, the request and the images Tacker uploaded.

The result is ``{'nfv': {'VDU': {...}, 'CP': {...}}}`` plus any top-level
BaseHOT parameter given by name in additionalParams:

- ``nfv.VDU.<vdu>.flavor``: the VNFD's requested_additional_capability_name
- ``nfv.VDU.<vdu>.image``: the Glance image Tacker created for the VDU
- ``nfv.VDU.<vdu>.desired_capacity``: the size of the VDU's scaling group
  at the requested instantiation level
- ``nfv.CP.<cp>.network``: the network extVirtualLinks connects it to
"""

from tacker.vnfm.lcm_user_data import utils
from tacker.vnfm.lcm_user_data.abstract_user_data import AbstractUserData

SCALING_ASPECT_DELTAS = 'tosca.policies.nfv.VduScalingAspectDeltas'


class KubernetesClusterUserData(AbstractUserData):
    """HOT parameters of BaseHOT/simple and BaseHOT/complex."""

    @staticmethod
    def instantiate(base_hot_dict=None, vnfd_dict=None, inst_req_info=None,
                    grant_info=None):
        params = utils.create_initial_param_dict(base_hot_dict)
        networks = _networks(inst_req_info, params)
        params = utils.create_final_param_dict(
            params,
            utils.create_vdu_flavor_capability_name_dict(vnfd_dict),
            utils.create_vdu_image_dict(grant_info or {}),
            networks)
        _set_desired_capacities(params, base_hot_dict, vnfd_dict,
                                inst_req_info)
        params.update(utils.get_diff_base_hot_param_from_api(
            base_hot_dict, inst_req_info))
        return params


def _networks(inst_req_info, params):
    """CP name -> {'network': id} from the request's extVirtualLinks.

    Read here rather than with Tacker's create_network_dict, which fails on
    an extCp without IP addresses (the usual request) and on a port the
    request does not connect; a missing port gets a clear message instead.
    """
    networks = {}
    for link in getattr(inst_req_info, 'ext_virtual_links', None) or []:
        for ext_cp in link.ext_cps or []:
            networks[ext_cp.cpd_id] = {'network': link.resource_id}
    missing = sorted(cp for cp in params['nfv']['CP'] if cp not in networks)
    if missing:
        raise ValueError(
            'extVirtualLinks of the Instantiate request must connect the '
            'ports ' + ', '.join(missing) + ' (extCps[].cpdId) to a network')
    return networks


def _set_desired_capacities(params, base_hot_dict, vnfd_dict,
                            inst_req_info):
    """Size of each scaling group = its VDUs' desired_capacity."""
    capacities = utils.create_desired_capacity_dict(
        base_hot_dict, vnfd_dict, inst_req_info)
    vdus = params['nfv']['VDU']
    for aspect, count in capacities.items():
        for vdu in _aspect_vdus(vnfd_dict, aspect):
            vdus.setdefault(vdu, {})['desired_capacity'] = count


def _aspect_vdus(vnfd_dict, aspect):
    """VDUs that the VNFD's scaling deltas of ``aspect`` target."""
    policies = vnfd_dict.get('topology_template', {}).get('policies') or []
    vdus = []
    for policy in policies:
        for definition in policy.values():
            if (definition.get('type') == SCALING_ASPECT_DELTAS and
                    definition.get('properties', {}).get('aspect') == aspect):
                vdus.extend(definition.get('targets') or [])
    return vdus

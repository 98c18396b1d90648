"""Heat parameters for the Kubernetes cluster BaseHOT (Tacker user data).

Tacker's OpenStack infra driver imports this file from the unpacked VNF
package when the Instantiate request names it (additionalParams
``lcm-operation-user-data: ./UserData/k8s_cluster_user_data.py`` and
``lcm-operation-user-data-class: KubernetesClusterUserData``), calls
``KubernetesClusterUserData.instantiate`` and creates the Heat stack from
``BaseHOT/<flavourId>/`` with the returned parameters. A whole-VNF heal
calls it again, a VNFC heal calls ``heal`` and the undoing of a scale-out
calls ``scale``. It runs inside tacker-conductor, so Tacker's own helpers
are used to read the VNFD, the request and the images Tacker uploaded.

The result is ``{'nfv': {'VDU': {...}, 'CP': {...}}}`` plus any top-level
BaseHOT parameter given by name in additionalParams:

- ``nfv.VDU.<vdu>.flavor``: the VNFD's requested_additional_capability_name
- ``nfv.VDU.<vdu>.image``: the Glance image Tacker created for the VDU
- ``nfv.VDU.<vdu>.desired_capacity``: the size of the VDU's scaling group
  at the requested instantiation level
- ``nfv.VDU.<volume>.size``: the size in GiB of a Cinder volume, from the
  VNFD's Vdu.VirtualBlockStorage of that name (rounded up)
- ``nfv.CP.<cp>.network``: the network extVirtualLinks connects it to

Flavours: ``simple``, ``complex`` and ``podaffinity`` (its server group is
a resource of the BaseHOT itself and needs no parameter). When the BaseHOT
declares the boolean ``storage_server_enabled`` (flavour simple), it is set
to whether ``k8s_cluster_installation_param.storage_server`` (or the older
camelCase ``k8sClusterInstallationParam.storageServer``) is in
additionalParams; without a storage server, the ports that only the
resources under a condition on that parameter use need no network.
"""

import math
import re

from tacker.vnfm.lcm_user_data import utils
from tacker.vnfm.lcm_user_data.abstract_user_data import AbstractUserData

SCALING_ASPECT_DELTAS = 'tosca.policies.nfv.VduScalingAspectDeltas'
BLOCK_STORAGE = 'tosca.nodes.nfv.Vdu.VirtualBlockStorage'
STORAGE_PARAM = 'storage_server_enabled'
# additionalParams keys of the driver's parameters, new and old spelling.
CLUSTER_PARAM_KEYS = ('k8s_cluster_installation_param',
                      'k8sClusterInstallationParam')
STORAGE_KEYS = ('storage_server', 'storageServer')
# The Mgmt Driver's cloud-init user data (its login key): a BaseHOT
# parameter, which its instantiate_start also puts in additionalParams.
USER_DATA_PARAM = 'kubernetes_mgmt_user_data'
_SIZE = re.compile(r'\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*')
# TOSCA scalar-unit.size units, in bytes.
_UNITS = {'b': 1, 'kb': 10**3, 'kib': 2**10, 'mb': 10**6, 'mib': 2**20,
          'gb': 10**9, 'gib': 2**30, 'tb': 10**12, 'tib': 2**40}


class KubernetesClusterUserData(AbstractUserData):
    """HOT parameters of BaseHOT/simple, complex and podaffinity."""

    @staticmethod
    def instantiate(base_hot_dict=None, vnfd_dict=None, inst_req_info=None,
                    grant_info=None):
        params = utils.create_initial_param_dict(base_hot_dict)
        top = base_hot_dict.get('heat_template') or {}
        storage = _storage_server_wanted(top, inst_req_info)
        networks = _networks(inst_req_info, params,
                             optional=_storage_only_cps(top, storage))
        params = utils.create_final_param_dict(
            params,
            utils.create_vdu_flavor_capability_name_dict(vnfd_dict),
            utils.create_vdu_image_dict(grant_info or {}),
            networks)
        _set_desired_capacities(params, base_hot_dict, vnfd_dict,
                                inst_req_info)
        _set_volume_sizes(params, vnfd_dict)
        extra = utils.get_diff_base_hot_param_from_api(base_hot_dict,
                                                       inst_req_info)
        if storage is not None:
            # The request's storage_server decides, not a stray HOT value.
            extra.pop(STORAGE_PARAM, None)
            params[STORAGE_PARAM] = storage
        params.update(extra)
        return params

    @staticmethod
    def heal(base_hot_dict, vnfd_dict, heal_vnf_request, vnf_instance,
             inst_vnf_info, param, vnfc_resource_info):
        """Parameters of a VNFC heal's stack update.

        Tacker 16 rebuilds the healed VDUs' parameters with the image
        *names* of the VNFD's sw_image_data. Every instance of a package
        uploads its own images under those names, so with two instances
        in a project Heat finds no unique image and the heal fails: put
        back the ids of the images Tacker uploaded for this instance.
        """
        ids = _image_ids(vnf_instance)
        for vdu in ((param or {}).get('nfv') or {}).get('VDU', {}).values():
            if vdu.get('image') in ids:
                vdu['image'] = ids[vdu['image']]
        _keep_user_data(param, inst_vnf_info)
        return param

    @staticmethod
    def scale(base_hot_dict, vnfd_dict, scale_vnf_request, vnf_instance,
              inst_vnf_info, param, res_num):
        """Parameters of the stack update that undoes a scale-out (its
        rollback, or a reverse scale-in).

        Without this method Tacker 16 sends the parameters stored at
        instantiate, whose desired capacities put every scaling group
        back to its instantiate-time size: rolling back a refused master
        scale-out would also delete the workers that earlier scale-outs
        added. Each group keeps its current size; the request's aspect
        gets ``res_num``, the size Tacker chose for it.
        """
        capacities = utils.get_desired_capacity_dict(
            base_hot_dict, vnfd_dict, inst_vnf_info)
        capacities[scale_vnf_request.aspect_id] = res_num
        _apply_capacities(param, vnfd_dict, capacities)
        _keep_user_data(param, inst_vnf_info)
        return param


def _keep_user_data(param, inst_vnf_info):
    """The VMs' user data exactly as instantiate gave it.

    Tacker 16 keeps the stack parameters of instantiate as the Python
    repr of their dict and reads them back with yaml.safe_load, which
    leaves each newline of a multi-line value as a backslash and an n: the
    user data would differ from the stack's, and Heat would replace every
    server of the stack. The value the request stored is exact."""
    stored = (getattr(inst_vnf_info, 'additional_params', None)
              or {}).get(USER_DATA_PARAM)
    if stored and isinstance(param, dict) and USER_DATA_PARAM in param:
        param[USER_DATA_PARAM] = stored


def _image_ids(vnf_instance):
    """Name -> Glance id of the images Tacker uploaded for the instance
    (its VnfResource records)."""
    from tacker import context as tacker_context
    from tacker import objects

    admin = tacker_context.get_admin_context()
    return {r.resource_name: r.resource_identifier
            for r in objects.VnfResourceList.get_by_vnf_instance_id(
                admin, vnf_instance.id)
            if r.resource_type == 'image'}


def _storage_server_wanted(top, inst_req_info):
    """Whether the request has a storage server; None when the BaseHOT
    has no storage_server_enabled parameter."""
    if STORAGE_PARAM not in (top.get('parameters') or {}):
        return None
    additional = getattr(inst_req_info, 'additional_params', None) or {}
    for key in CLUSTER_PARAM_KEYS:
        param = additional.get(key)
        if isinstance(param, dict):
            return any(param.get(k) is not None for k in STORAGE_KEYS)
    return False


def _storage_only_cps(top, storage):
    """Ports that only resources conditional on storage_server_enabled
    use: they need a network only when there is a storage server."""
    if storage is None or storage:
        return set()
    conditions = {name for name, definition in
                  (top.get('conditions') or {}).items()
                  if STORAGE_PARAM in _params_read(definition)}
    conditional, others = set(), set()
    for resource in (top.get('resources') or {}).values():
        if not isinstance(resource, dict):
            continue
        cps = {path[2] for path in _nfv_paths(resource)
               if len(path) > 2 and path[1] == 'CP'}
        if resource.get('condition') in conditions:
            conditional |= cps
        else:
            others |= cps
    return conditional - others


def _params_read(node):
    """Names of the parameters a template snippet reads (get_param)."""
    found = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == 'get_param':
                name = value[0] if isinstance(value, list) else value
                if isinstance(name, str):
                    found.add(name)
            found |= _params_read(value)
    elif isinstance(node, list):
        for value in node:
            found |= _params_read(value)
    return found


def _nfv_paths(node):
    """Every ``get_param: [nfv, ...]`` path in a template snippet."""
    if isinstance(node, dict):
        param = node.get('get_param')
        if isinstance(param, list) and param and param[0] == 'nfv':
            yield tuple(param)
        for value in node.values():
            yield from _nfv_paths(value)
    elif isinstance(node, list):
        for value in node:
            yield from _nfv_paths(value)


def _networks(inst_req_info, params, optional=frozenset()):
    """CP name -> {'network': id} from the request's extVirtualLinks.

    Read here rather than with Tacker's create_network_dict, which fails on
    an extCp without IP addresses (the usual request) and on a port the
    request does not connect; a missing port gets a clear message instead.
    A port in ``optional`` that the request does not connect is dropped
    from ``params``: the resource using it is not created.
    """
    networks = {}
    for link in getattr(inst_req_info, 'ext_virtual_links', None) or []:
        for ext_cp in link.ext_cps or []:
            networks[ext_cp.cpd_id] = {'network': link.resource_id}
    cps = params['nfv']['CP']
    for cp in sorted(optional):
        if cp not in networks:
            cps.pop(cp, None)
    missing = sorted(cp for cp in cps if cp not in networks)
    if missing:
        raise ValueError(
            'extVirtualLinks of the Instantiate request must connect the '
            'ports ' + ', '.join(missing) + ' (extCps[].cpdId) to a network')
    return networks


def _set_volume_sizes(params, vnfd_dict):
    """``nfv.VDU.<volume>.size`` (GiB) from the VNFD's block storage."""
    nodes = vnfd_dict.get('topology_template', {}).get('node_templates')
    vdus = params['nfv']['VDU']
    for name, node in (nodes or {}).items():
        if name not in vdus or node.get('type') != BLOCK_STORAGE:
            continue
        data = (node.get('properties') or {}).get(
            'virtual_block_storage_data') or {}
        entry = vdus[name]
        # create_final_param_dict gave every VDU a flavor and an image.
        for key in ('flavor', 'image'):
            if entry.get(key) is None:
                entry.pop(key, None)
        entry['size'] = _gib(data.get('size_of_storage'), name)


def _gib(size, name):
    """A TOSCA scalar-unit.size ('10 GB') in whole GiB, at least 1."""
    match = _SIZE.fullmatch(str(size)) if size is not None else None
    unit = match.group(2).lower() if match else ''
    if not match or unit not in _UNITS:
        raise ValueError(
            f'the VNFD gives {name} no virtual_block_storage_data.'
            f'size_of_storage such as "10 GB" (found {size!r})')
    size_bytes = float(match.group(1)) * _UNITS[unit]
    return max(1, math.ceil(size_bytes / 2**30))


def _set_desired_capacities(params, base_hot_dict, vnfd_dict,
                            inst_req_info):
    """Size of each scaling group = its VDUs' desired_capacity."""
    _apply_capacities(params, vnfd_dict, utils.create_desired_capacity_dict(
        base_hot_dict, vnfd_dict, inst_req_info))


def _apply_capacities(params, vnfd_dict, capacities):
    """Each aspect's size (``capacities``) to the VDUs it scales."""
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

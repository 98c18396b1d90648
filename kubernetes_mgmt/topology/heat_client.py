"""A python-heatclient v1 client for a VNF instance's stack.

``[kubernetes_mgmt] heat_client`` names the factory (entry-point group
``kubernetes_mgmt.heat_clients``). The product's ``tacker`` factory runs
inside Tacker and uses the VNF's OpenStack VIM the way Tacker's own
OpenStack infra driver does: VIM credentials from ``VimClient``, then a
keystone session wrapped by Tacker's ``HeatClient``.
"""
from __future__ import annotations

from kubernetes_mgmt import redact, seams
from kubernetes_mgmt.errors import MgmtDriverError

LOG = redact.get_logger(__name__)


def heat_client_for(vnf_instance, context=None):
    """A heatclient v1 ``Client`` for the stack of ``vnf_instance``, made
    by the configured factory: ``factory(vnf_instance, context)``."""
    factory = seams.chosen(seams.HEAT_CLIENTS)
    return factory(vnf_instance, context)


def tacker_heat_client(vnf_instance, context=None):
    """The Heat of the VNF's OpenStack VIM (entry point ``tacker``)."""
    try:
        from tacker import context as tacker_context
        from tacker.vnfm import vim_client
        from tacker.vnfm.infra_drivers.openstack import heat_client
    except ImportError as e:
        raise MgmtDriverError(
            'no Heat client: [kubernetes_mgmt] heat_client = tacker needs '
            'Tacker (install this plugin into Tacker so that the VNF\'s '
            'OpenStack VIM is used), or name another factory') from e
    vim_id, region = _vim_ref(vnf_instance)
    context = context or tacker_context.get_admin_context()
    vim = vim_client.VimClient().get_vim(context, vim_id,
                                         region_name=region)
    auth = dict(vim['vim_auth'])
    redact.register(auth.get('password'), auth.get('client_secret'),
                    auth.get('bearer_token'))
    LOG.debug('using Heat of VIM %s (region %s)', vim['vim_id'], region)
    return heat_client.HeatClient(auth, region_name=region).heat


def _vim_ref(vnf_instance) -> tuple[str | None, str | None]:
    """VIM id and region of the instance's OpenStack VIM connection; a
    missing id makes Tacker fall back on its default VIM."""
    connections = getattr(vnf_instance, 'vim_connection_info', None) or []
    # The Kubernetes VIM this driver registers is appended after the
    # OpenStack one; skip it should the order ever differ.
    openstack = [c for c in connections
                 if 'openstack' in str(getattr(c, 'vim_type', '')).lower()]
    chosen = (openstack or connections or [None])[0]
    if chosen is None:
        return None, None
    access = getattr(chosen, 'access_info', None) or {}
    return getattr(chosen, 'vim_id', None), access.get('region')

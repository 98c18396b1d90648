"""A python-heatclient v1 client for a VNF instance's stack.

``[kubernetes_mgmt] heat_client`` names the factory (entry-point group
``kubernetes_mgmt.heat_clients``). The product's ``tacker`` factory runs
inside Tacker and uses the VNF's OpenStack VIM the way Tacker's own
OpenStack infra driver does: VIM credentials from ``VimClient``, then the
keystone session of Tacker's ``OpenstackClients`` (what Tacker's
``HeatClient`` wraps).

Every request of those sessions is bounded by ``[kubernetes_mgmt]
openstack_api_timeout``: Tacker builds its session without a timeout,
and ``HeatClient`` authenticates while it is constructed, so the client
is made from ``OpenstackClients`` directly and its session is given the
timeout before the first request. A VIM that turns certificate
verification off (v1 ``cert_verify: False``, v2
``skipCertificateVerification``) is used as Tacker uses it, with a
warning each time an operation makes its client.
"""
from __future__ import annotations

from typing import Any

from kubernetes_mgmt import redact, seams
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import MgmtDriverError

LOG = redact.get_logger(__name__)


def heat_client_for(vnf_instance, context=None):
    """A heatclient v1 ``Client`` for the stack of ``vnf_instance``, made
    by the configured factory: ``factory(vnf_instance, context)``."""
    factory = seams.chosen(seams.HEAT_CLIENTS)
    return factory(vnf_instance, context)


def tacker_heat_client(vnf_instance, context=None):
    """The Heat of the VNF's OpenStack VIM (entry point ``tacker``): with
    the credentials of a v2 instance's VIM connection, else those of the
    VIM Tacker registered."""
    connection = _openstack_connection(vnf_instance)
    access = dict(getattr(connection, 'access_info', None) or {})
    if access.get('password'):
        return keystone_heat_client(
            dict(getattr(connection, 'interface_info', None) or {}), access)
    try:
        from tacker import context as tacker_context
        from tacker.common import clients
        from tacker.vnfm import vim_client
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
    if auth.get('cert_verify') in (False, 'False', 'false'):
        _warn_unverified(f'OpenStack VIM {vim["vim_id"]}',
                         'cert_verify is False', auth.get('auth_url'))
    openstack = clients.OpenstackClients(auth, region_name=region)
    _bound(openstack.keystone_session)    # before .heat authenticates
    return openstack.heat


def keystone_heat_client(interface_info: dict, access_info: dict):
    """Heat through Keystone v3 with the password credentials of a v2 VIM
    connection (``interfaceInfo.endpoint``, ``accessInfo``), as Tacker's
    v2 OpenStack infra driver logs in."""
    from heatclient import client as heat_client
    from keystoneauth1 import session
    from keystoneauth1.identity import v3

    redact.register(access_info.get('password'))
    auth = v3.Password(
        auth_url=interface_info.get('endpoint'),
        username=access_info.get('username'),
        password=access_info.get('password'),
        project_name=access_info.get('project'),
        user_domain_name=access_info.get('userDomain'),
        project_domain_name=access_info.get('projectDomain'))
    verify = interface_info.get('cacert') or \
        not interface_info.get('skipCertificateVerification', False)
    if verify is False:
        _warn_unverified('the OpenStack VIM connection',
                         'skipCertificateVerification is true',
                         interface_info.get('endpoint'))
    return heat_client.Client('1', session=session.Session(
        auth=auth, verify=verify, timeout=_timeout()),
        region_name=access_info.get('region'))


def _timeout() -> float:
    return float(CONF.kubernetes_mgmt.openstack_api_timeout)


def _bound(adapter: Any) -> None:
    """Give the keystoneauth ``Session`` under Tacker's adapter the
    timeout (Tacker sets none: a silent Keystone or Heat would hold the
    operation forever)."""
    from keystoneauth1 import session

    inner = getattr(adapter, 'session', adapter)
    if isinstance(inner, session.Session):
        inner.timeout = _timeout()
        return
    LOG.warning('Tacker\'s OpenStack client holds no keystoneauth session '
                '(%s): its requests to Keystone and Heat have no timeout '
                '(openstack_api_timeout is not applied)',
                type(inner).__name__)


def _warn_unverified(what: str, why: str, url: str | None) -> None:
    LOG.warning('%s (%s): %s, so Keystone and Heat are reached without '
                'verifying their TLS certificates; anyone on the path can '
                'read the VIM password. Register the VIM with certificate '
                'verification (and its CA).', what, url or 'no URL', why)


def _openstack_connection(vnf_instance):
    """The instance's OpenStack VIM connection, if any."""
    connections = getattr(vnf_instance, 'vim_connection_info', None) or []
    # The Kubernetes VIM this driver registers is appended after the
    # OpenStack one; skip it should the order ever differ.
    openstack = [c for c in connections
                 if 'openstack' in str(getattr(c, 'vim_type', '')).lower()]
    return (openstack or connections or [None])[0]


def _vim_ref(vnf_instance) -> tuple[str | None, str | None]:
    """VIM id and region of the instance's OpenStack VIM connection; a
    missing id makes Tacker fall back on its default VIM."""
    chosen = _openstack_connection(vnf_instance)
    if chosen is None:
        return None, None
    access = getattr(chosen, 'access_info', None) or {}
    return getattr(chosen, 'vim_id', None), access.get('region')

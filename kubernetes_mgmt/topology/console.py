"""A VNF server's console log, as Nova serves it (``os-getConsoleOutput``).

The driver reads it to learn the SSH host keys a new VM printed at first
boot. Nova is reached with the keystone session of the stack's Heat
client (the VIM's credentials, as Tacker's infra driver uses them), in
the region of the Heat endpoint.
"""
from __future__ import annotations

from typing import Any

from keystoneauth1 import adapter
from keystoneauth1 import exceptions as ks_exceptions

from kubernetes_mgmt import redact
from kubernetes_mgmt.remote.hostkeys import (
    HostKeyPending,
    HostKeyUnverifiable,
)

LOG = redact.get_logger(__name__)
# Lines asked for: cloud-init prints the keys late in the first boot, so
# a VM that has run for a long time may have logged much more since; Nova
# then returns the whole log (the hypervisor caps its size).
_ALL = None


class ConsoleReader:
    """Reads servers' console logs with the session of ``heat``."""

    def __init__(self, heat: Any, timeout: float | None = None):
        http = heat.http_client
        self._compute = adapter.Adapter(
            http.session, service_type='compute',
            interface=http.interface or 'public',
            region_name=http.region_name or _region_of(http))
        # Per request: the session is the Heat client's, shared.
        self._bounded = {} if timeout is None else {'timeout': timeout}

    def __call__(self, server_id: str) -> str | None:
        """The console log; None while Nova has none yet (the server is
        still being built). Raises HostKeyUnverifiable when Nova keeps
        none, HostKeyPending when asking failed (asked again)."""
        body = {'os-getConsoleOutput': {'length': _ALL}}
        try:
            reply = self._compute.post(f'/servers/{server_id}/action',
                                       json=body, **self._bounded)
        except ks_exceptions.Conflict:
            return None
        except ks_exceptions.NotFound as exc:
            # Nova says 404 for a server it does not know and for one
            # whose hypervisor keeps no console.
            raise HostKeyUnverifiable(
                f'server {server_id}: Nova has no console log for it '
                f'({exc}), so its SSH host keys cannot be checked; a site '
                'whose hypervisor keeps no console must turn '
                '[kubernetes_mgmt] host_key_checking off') from None
        except ks_exceptions.ClientException as exc:
            # Asked again until the connect deadline.
            raise HostKeyPending(
                f'server {server_id}: reading its console log from Nova '
                f'failed: {exc}') from None
        return (reply.json() or {}).get('output') or None


def _region_of(http: Any) -> str | None:
    """The region whose orchestration endpoint the Heat client uses
    (Tacker gives Heat an endpoint, not a region)."""
    url = (getattr(http, 'endpoint_override', None) or '').rstrip('/')
    if not url:
        return None
    session = http.session
    while isinstance(session, adapter.Adapter):    # Tacker wraps its own
        session = session.session
    if session.auth is None:
        return None
    try:
        access = session.auth.get_access(session)
        endpoints = access.service_catalog.get_endpoints(
            service_type='orchestration')
    except ks_exceptions.ClientException as exc:
        LOG.debug('no catalog to find the region of %s: %s', url, exc)
        return None
    for entries in endpoints.values():
        for entry in entries:
            if str(entry.get('url', '')).rstrip('/') == url:
                return entry.get('region_id') or entry.get('region')
    return None

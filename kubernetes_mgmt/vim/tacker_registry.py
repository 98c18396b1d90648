"""VIM registration through Tacker's NFVO plugin (in tacker-conductor).

Facts from Tacker 16.0.0:

- ``NfvoPlugin().create_vim(context, {'vim': {...}})`` has the kubernetes
  VIM driver check the cluster (``GET /api`` with the bearer token and the
  CA), list its namespaces, store the token encrypted with a fernet key
  kept in Barbican, and insert the VIM rows. With ``[k8s_vim]
  use_barbican = False`` it refuses every kubernetes VIM ("Barbican must
  be enabled"): there is no local-file store for them, unlike OpenStack
  VIMs. No API layer runs in between, so the body must
  be complete: ``vim_project`` is a NOT NULL column (the kubernetes driver
  never reads it).
- ``get_vims(context, filters={'name': name, 'tenant_id': ...})``
  filters columns with ``column.in_([value])``: values are plain, not
  lists. Soft-deleted VIMs are left out; names are unique per project.
- ``VimClient().get_vim(context, vim_id)`` returns the VIM's
  ``vim_auth`` decrypted (bearer token and ``ssl_ca_cert`` are stored
  fernet-encrypted): the CA of an existing VIM is read there.
- ``delete_vim`` raises ``VimNotFoundException`` for a missing VIM and
  ``VimInUseException`` while a legacy VNF uses it; it does not look at
  v1 VNF instances, which is what ``in_use`` is for.

Tacker is imported lazily so this module imports without it.
"""
from __future__ import annotations

from typing import Any

from kubernetes_mgmt import redact
from kubernetes_mgmt.vim.registration import (
    VimError,
    VimRecord,
    VimSpec,
    reuse,
    same_url,
)

LOG = redact.get_logger(__name__)

VIM_TYPE = 'kubernetes'
# The namespace-style project Tacker's own kubernetes VIM samples use.
VIM_PROJECT = {'name': 'default'}


def vim_body(context: Any, spec: VimSpec) -> dict:
    """The ``create_vim`` argument for a kubernetes VIM."""
    return {'vim': {
        'name': spec.name,
        'description': spec.description,
        'type': VIM_TYPE,
        'auth_url': spec.auth_url,
        'vim_project': dict(VIM_PROJECT),
        'auth_cred': {'bearer_token': spec.bearer_token,
                      'ssl_ca_cert': spec.ssl_ca_cert},
        'is_default': False,
        'tenant_id': spec.tenant_id or context.project_id,
    }}


def _record(vim: dict) -> VimRecord:
    return VimRecord(id=vim['id'], name=vim['name'],
                     auth_url=vim['auth_url'])


def _nfvo_exceptions() -> tuple[type, type]:
    from tacker.extensions import nfvo
    return nfvo.VimNotFoundException, nfvo.VimInUseException


def _instance_list() -> Any:
    from tacker import objects
    try:
        return objects.VnfInstanceList
    except AttributeError:      # objects.register_all() has not run
        from tacker.objects.vnf_instance import VnfInstanceList
        return VnfInstanceList


def _v2_instance_class() -> Any:
    from tacker.sol_refactored import objects
    try:
        return objects.VnfInstanceV2
    except AttributeError:      # objects.register_all() has not run
        from tacker.sol_refactored.objects.v2.vnf_instance import (
            VnfInstanceV2,
        )
        return VnfInstanceV2


def _v2_users(admin: Any, vim_id: str) -> list[str]:
    """v2 instances whose vimConnectionInfo names the VIM."""
    found = []
    for inst in _v2_instance_class().get_all(admin):
        connections = inst.vimConnectionInfo \
            if inst.obj_attr_is_set('vimConnectionInfo') else {}
        if any(c.obj_attr_is_set('vimId') and c.vimId == vim_id
               for c in (connections or {}).values()):
            found.append(inst.id)
    return found


class TackerVimRegistry:
    """A VimRegistry backed by Tacker's NFVO database."""

    def __init__(self) -> None:
        self._nfvo = None

    def _plugin(self):
        # Built on first use: it loads Tacker's VIM drivers.
        if self._nfvo is None:
            from tacker.nfvo import nfvo_plugin
            self._nfvo = nfvo_plugin.NfvoPlugin()
        return self._nfvo

    def check_ready(self) -> None:
        # Importing the driver registers [k8s_vim].
        from oslo_config import cfg
        from tacker.nfvo.drivers.vim import kubernetes_driver  # noqa: F401
        if not cfg.CONF.k8s_vim.use_barbican:
            raise VimError(
                'Tacker cannot store the cluster as a Kubernetes VIM: it '
                'keeps the key of a Kubernetes VIM\'s token in Barbican '
                'only, and tacker.conf has [k8s_vim] use_barbican = False. '
                'Run Barbican (catalog type key-manager) and set it to '
                'True.')

    def find(self, context: Any, name: str) -> VimRecord | None:
        return self._find(context, name, getattr(context, 'project_id',
                                                 None))

    def _find(self, context: Any, name: str,
              tenant: str | None) -> VimRecord | None:
        # Names are unique per project only; an admin context sees all.
        filters = {'name': name, **({'tenant_id': tenant} if tenant
                                    else {})}
        for vim in self._plugin().get_vims(context, filters=filters):
            if vim.get('name') == name:
                return _record(vim)
        return None

    def get(self, context: Any, vim_id: str) -> VimRecord | None:
        not_found, _ = _nfvo_exceptions()
        try:
            return _record(self._plugin().get_vim(context, vim_id))
        except not_found:
            return None

    def register(self, context: Any, spec: VimSpec) -> VimRecord:
        tenant = spec.tenant_id or context.project_id
        existing = self._find(context, spec.name, tenant)
        if existing is not None:
            LOG.info('VIM %s exists (%s); checking it is this cluster',
                     spec.name, existing.id)
            return reuse(existing, spec,
                         self._stored_ca(context, existing.id))
        try:
            created = self._plugin().create_vim(context,
                                                vim_body(context, spec))
        except Exception as exc:
            # Another operation may have registered it meanwhile.
            raced = self._find(context, spec.name, tenant)
            if raced is not None:
                return reuse(raced, spec, self._stored_ca(context, raced.id))
            # Not chained: Tacker logs causes unredacted.
            raise VimError(f'Tacker did not register VIM {spec.name!r} '
                           f'for {spec.auth_url}: '
                           f'{redact.redact(exc)}') from None
        LOG.info('registered VIM %s (%s) for %s', spec.name,
                 created['id'], spec.auth_url)
        return _record(created)

    def _stored_ca(self, context: Any, vim_id: str) -> str | None:
        """The CA certificate stored with the VIM, decrypted as Tacker
        decrypts it for its own drivers (``VimClient``)."""
        from tacker.vnfm import vim_client
        try:
            auth = vim_client.VimClient().get_vim(context, vim_id)[
                'vim_auth']
        except Exception as exc:
            raise VimError(f'cannot read the CA certificate of VIM '
                           f'{vim_id} to check that it is this '
                           f'cluster\'s: {redact.redact(exc)}') from None
        redact.register(auth.get('bearer_token'), auth.get('password'))
        return auth.get('ssl_ca_cert')

    def delete(self, context: Any, vim_id: str) -> None:
        not_found, in_use = _nfvo_exceptions()
        try:
            self._plugin().delete_vim(context, vim_id)
        except not_found:
            LOG.info('VIM %s is already gone', vim_id)
        except in_use as exc:
            raise VimError(f'Tacker refuses to delete VIM {vim_id}: '
                           f'{exc}') from exc
        else:
            LOG.info('deleted VIM %s', vim_id)

    def with_url(self, context: Any, auth_url: str) -> list[VimRecord]:
        admin = context.elevated() if hasattr(context, 'elevated') \
            else context
        vims = self._plugin().get_vims(admin, filters={'type': VIM_TYPE})
        return [_record(v) for v in vims
                if same_url(v.get('auth_url') or '', auth_url)]

    def in_use(self, context: Any, vim_id: str) -> list[str]:
        """VNF instances of every project whose VIM connections name the
        VIM: v1 ones (tacker.objects) and v2 ones (sol_refactored, their
        own table)."""
        admin = context.elevated() if hasattr(context, 'elevated') \
            else context
        v1 = [inst.id for inst in _instance_list().get_all(admin)
              if any(getattr(info, 'vim_id', None) == vim_id
                     for info in inst.vim_connection_info or [])]
        return v1 + _v2_users(admin, vim_id)

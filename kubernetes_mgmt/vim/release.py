"""Giving up the cluster's VIM: who still uses it, and removing it.

Used by terminate and by a heal of the whole VNF (the cluster is rebuilt
and registered again).
"""
from __future__ import annotations

from kubernetes_mgmt import redact
from kubernetes_mgmt.state.instance_state import DriverState
from kubernetes_mgmt.vim.registration import VimError, same_url
from kubernetes_mgmt.vim.registry import SiteVims

LOG = redact.get_logger(__name__)


class VimInUse(VimError):
    """CNFs are still deployed on the cluster."""


def _vim_id(vims: SiteVims, state: DriverState) -> str | None:
    """The VIM this instance registered, if it is still this cluster's:
    its name and URL must match what the driver recorded (the id alone
    could name a VIM that was deleted and re-registered for another
    cluster). Without a stored id (a run that failed right after
    registering) the VIM of the stored name counts on the same terms."""
    auth_url = _recorded_url(state)
    if state.vim_id:
        found = vims.get(state.vim_id)
        if found is None:
            return None
        if found.name == state.vim_name and auth_url and \
                same_url(found.auth_url, auth_url):
            return found.id
        LOG.warning('VIM %s is %r for %s, not the %r for %s that this '
                    'cluster registered: it is left alone', found.id,
                    found.name, found.auth_url, state.vim_name, auth_url)
        return None
    if not (state.vim_name and auth_url):
        return None
    found = vims.find(state.vim_name)
    if found is not None and same_url(found.auth_url, auth_url):
        return found.id
    return None


def _recorded_url(state: DriverState) -> str | None:
    record = state.record
    return record.auth_url if record is not None else state.auth_url


def refuse_if_in_use(vims: SiteVims, instance_id: str, state: DriverState,
                     operation: str) -> None:
    """Raise VimInUse, naming the CNF instances, while any VNF instance
    other than this one uses the cluster: through the VIM the driver
    registered, or another VIM of the same endpoint (a namespace's)."""
    vim_id = _vim_id(vims, state)
    auth_url = _recorded_url(state)
    ids = {vim_id} if vim_id else set()
    if auth_url:
        ids |= {v.id for v in vims.with_url(auth_url)}
    users = sorted({u for vim in ids for u in vims.in_use(vim)
                    if u != instance_id})
    if users:
        raise VimInUse(
            f'{operation} refused: CNF instance(s) {", ".join(users)} are '
            f'still deployed on this cluster (VIM(s) '
            f'{", ".join(sorted(ids))} of {auth_url}); terminate them '
            'first. Nothing was changed.')


def release_vim(vims: SiteVims, instance_id: str,
                state: DriverState) -> str | None:
    """Delete the VIM (a missing one is fine) and forget it in
    ``state``; returns the id the instance's vim_connection_info may
    still name, for the caller to drop (and save)."""
    vim_id = _vim_id(vims, state)
    if vim_id is not None:
        vims.delete(vim_id)
        LOG.info('VIM %s (%s) deleted', state.vim_name or '', vim_id)
    else:
        LOG.info('instance %s: no VIM of this cluster is registered: '
                 'nothing to delete', instance_id)
    stored, state.vim_id = state.vim_id, None
    return stored

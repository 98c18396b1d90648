"""The VIM in a VNF instance's ``vim_connection_info``.

Tacker reads a CNF's cluster from there (``vim_id``); terminate removes
it again. Lists are replaced, not appended to in place, so that change
tracking of Tacker's versioned objects sees the change; the caller saves
the instance.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from kubernetes_mgmt.vim.registration import VimRecord

VIM_TYPE = 'kubernetes'


@dataclass
class VimConnectionInfo:
    """The fields of Tacker's VimConnectionInfo this plugin uses, for
    when Tacker is not installed (CLI, tests, the lab)."""

    id: str
    vim_id: str | None
    vim_type: str
    access_info: dict = field(default_factory=dict)
    interface_info: dict = field(default_factory=dict)


def _info_class() -> Any:
    try:
        from tacker import objects
    except ImportError:       # no Tacker
        return VimConnectionInfo
    try:
        return objects.VimConnectionInfo
    except AttributeError:    # objects.register_all() has not run
        from tacker.objects import vim_connection
        return vim_connection.VimConnectionInfo


def vim_connection_info(record: VimRecord, ca_cert: str = '') -> Any:
    """A VimConnectionInfo naming the registered cluster (and its CA, as
    Tacker's own Kubernetes VIM connections carry it)."""
    return _info_class()(id=str(uuid.uuid4()), vim_id=record.id,
                         vim_type=VIM_TYPE,
                         access_info={'auth_url': record.auth_url},
                         interface_info={'ssl_ca_cert': ca_cert}
                         if ca_cert else {})


def add_vim_connection(vnf_instance: Any, record: VimRecord,
                       ca_cert: str = '') -> bool:
    """Add the VIM unless an entry with its id is there; True if added."""
    current = list(vnf_instance.vim_connection_info or [])
    if any(getattr(i, 'vim_id', None) == record.id for i in current):
        return False
    vnf_instance.vim_connection_info = [
        *current, vim_connection_info(record, ca_cert)]
    return True


def remove_vim_connection(vnf_instance: Any, vim_id: str) -> bool:
    """Remove every entry naming ``vim_id``; True if one was there."""
    current = list(vnf_instance.vim_connection_info or [])
    kept = [i for i in current if getattr(i, 'vim_id', None) != vim_id]
    if len(kept) == len(current):
        return False
    vnf_instance.vim_connection_info = kept
    return True

"""terminate_start / terminate_end: the cluster's VIM and everything the
driver stored go with the VNF.

terminate_start refuses, before Tacker deletes anything, while CNFs are
deployed on the cluster. terminate_end (after the stack is gone, and also
when Tacker rolls back a failed instantiate, without a request) deletes
the VIM - a VIM that was never registered is fine - and forgets the
instance's driver state.
"""
from __future__ import annotations

from typing import Any

from kubernetes_mgmt import instance_state, redact, tacker_objects
from kubernetes_mgmt.vim.release import refuse_if_in_use, release_vim

LOG = redact.get_logger(__name__)


def terminate_start(context: Any, vnf_instance: Any) -> None:
    state = instance_state.load(vnf_instance)
    refuse_if_in_use(context, vnf_instance, state, 'terminate')
    LOG.info('instance %s: no CNF uses the cluster; it may be terminated',
             tacker_objects.instance_id(vnf_instance))


def terminate_end(context: Any, vnf_instance: Any,
                  rollback: bool = False) -> None:
    state = instance_state.load(vnf_instance)
    release_vim(context, vnf_instance, state)
    instance_state.forget(vnf_instance)
    if callable(getattr(vnf_instance, 'save', None)):
        vnf_instance.save()     # vim_connection_info may have changed
    LOG.info('instance %s: %s: VIM and driver state removed',
             tacker_objects.instance_id(vnf_instance),
             'instantiate rolled back' if rollback else 'terminated')

"""Errors of the lab (the stand-in for OpenStack and VMs)."""
from __future__ import annotations

from kubernetes_mgmt.errors import MgmtDriverError


class LabError(MgmtDriverError):
    """The lab could not do what was asked; the message says why."""

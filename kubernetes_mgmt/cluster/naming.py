"""Kubernetes node names for VMs: unique, stable, DNS-1123 compliant.

Heat names every server of a group alike (``workerNode``), and addresses
can be reused, so names come from the group member's resource name (kept
across a heal of that VM) or, for VMs outside a group, the server id.
"""
from __future__ import annotations

import re

from kubernetes_mgmt.topology.hosts import Host, Role

_INVALID = re.compile(r'[^a-z0-9-]+')


def node_name(host: Host) -> str:
    return member_node_name(host.role,
                            host.member_name or host.server_id[:12])


def member_node_name(role: Role, member: str) -> str:
    """The node name of group member ``member`` of ``role``."""
    name = _INVALID.sub('-', f'{role.value}-{member}'.lower())
    return name.strip('-')[:63]

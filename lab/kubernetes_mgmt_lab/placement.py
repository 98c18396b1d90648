"""Which compute host a lab VM "runs on", chosen as Nova's scheduler would.

The lab has a few named compute hosts (nothing runs on them: the name is
what Nova shows as ``OS-EXT-SRV-ATTR:host``). With anti-affinity on, the
workers form one server group whose members must land on distinct compute
hosts (Nova's ServerGroupAntiAffinityFilter); when none is left, the
server goes to ERROR with NoValidHost. Other VMs go round-robin.
"""
from __future__ import annotations

from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.state import LabHost, LabState

# The OS::Nova::ServerGroup resource in the top stack (podaffinity HOT).
ANTI_AFFINITY_GROUP = 'worker_anti_affinity_group'
ANTI_AFFINITY_POLICY = 'anti-affinity'
GROUPED_ROLE = 'worker'
DEFAULT_COMPUTE_HOSTS = 3
NO_VALID_HOST = ('No valid host was found. There are not enough hosts '
                 'available.')


class NoValidHost(LabError):
    """Nova found no compute host for a server; Heat reports the failure
    on ``resource`` (a resource of the top stack) as ``message``."""

    def __init__(self, resource: str, path: str):
        self.resource = resource
        super().__init__(
            f'ResourceInError: {path}: Went to status ERROR due to '
            f'"Message: {NO_VALID_HOST}, Code: 500"')


def compute_host_names(count: int) -> list[str]:
    if count < 1:
        raise LabError('a lab needs at least one compute host')
    return [f'compute-{i}' for i in range(count)]


def in_group(state: LabState, host: LabHost) -> bool:
    """Whether ``host`` is a member of the anti-affinity server group."""
    return state.anti_affinity and host.role == GROUPED_ROLE


def place(state: LabState, host: LabHost,
          previous: str | None = None) -> None:
    """Set ``host.compute_host`` (``host`` is in ``state.hosts`` or about
    to be). A group member avoids the other members' compute hosts and,
    when it can, ``previous`` (a rebuilt server is scheduled afresh)."""
    if not in_group(state, host):
        hosts = state.compute_hosts
        host.compute_host = hosts[state.placements % len(hosts)]
        state.placements += 1
        return
    free = free_hosts(state, host)
    if not free:
        raise NoValidHost(*_heat_path(state, host))
    moved = [c for c in free if c != previous]
    host.compute_host = (moved or free)[0]


def free_hosts(state: LabState, host: LabHost) -> list[str]:
    """Compute hosts ``host`` may run on under anti-affinity."""
    taken = {h.compute_host for h in state.hosts
             if h.name != host.name and in_group(state, h)}
    return [c for c in state.compute_hosts if c not in taken]


def check_move(state: LabState, host: LabHost, compute_host: str) -> None:
    """Refuse a move Nova would refuse."""
    if compute_host not in state.compute_hosts:
        raise LabError(f'no compute host {compute_host!r}; the lab has '
                       f'{", ".join(state.compute_hosts)}')
    if in_group(state, host) and compute_host not in free_hosts(state,
                                                                host):
        raise LabError(f'{compute_host} already runs a member of '
                       f'{ANTI_AFFINITY_GROUP}; anti-affinity forbids '
                       f'moving {host.name} there')


def _heat_path(state: LabState, host: LabHost) -> tuple[str, str]:
    """(top-level resource, Heat's dotted path of the server)."""
    try:
        layout = state.layout_for(host.role)
    except KeyError:
        return host.name, f'resources.{host.name}'
    if not layout.group:
        return layout.server, f'resources.{layout.server}'
    member = host.member_name or host.name
    return layout.group, (f'resources.{layout.group}.resources.{member}'
                          f'.resources.{layout.server}')

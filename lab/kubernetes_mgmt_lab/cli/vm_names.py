"""Which lab VM a host name on ``lab exec``'s command line means.

A lab of its own (``lab up``) names its VMs by role: master-0, worker-1.
The VMs the lab cloud boots for a stack Tacker creates are vm-0, vm-1 ...
in the lab of their network, below the services' root. A name is looked
up in every lab the command may mean, in this order:

1. the VM's lab host name (as ``lab status`` lists it), the Kubernetes
   node name it has in its lab's cluster (``kubectl get nodes``) or its
   Nova server id (a VNFC's ``computeResource`` in ``vnflcm show``);
2. else ``master-N`` / ``worker-N``: the N-th control-plane (or other)
   node of a lab's cluster, in the order of the node names, so that
   ``lab exec master-0 -- kubectl get nodes`` works on Tacker's cluster.

A name that fits VMs of more than one lab is refused with where they are.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from kubernetes_mgmt_lab import state as lab_state
from kubernetes_mgmt_lab.errors import LabError

CONTROL_PLANE = 'node-role.kubernetes.io/control-plane'


@dataclass(frozen=True)
class Vm:
    """A lab VM and the names it answers to."""

    lab_root: str
    host: str                   # its lab host name: master-0, vm-3
    server_id: str
    node: str | None = None     # its Kubernetes node name
    alias: str | None = None    # master-N / worker-N in its cluster

    def own_names(self) -> set[str]:
        return {self.host, self.server_id} | ({self.node} - {None})

    def describe(self) -> str:
        extra = [f'node {self.node}'] if self.node not in (None, self.host) \
            else []
        extra += [self.alias] if self.alias not in (None, self.host) else []
        return self.host + (f' ({", ".join(extra)})' if extra else '')


def lab_roots(root: str | None, services: str | None) -> list[str]:
    """The labs ``lab exec`` looks in: the lab at ``root``; or every lab
    of the services at ``services``; or, with neither, the lab at the
    default root and the labs of the services at their default root,
    those that exist."""
    if root is not None:
        return [root]
    if services is not None:
        return _services_labs(services, required=True)
    from kubernetes_mgmt_lab.openstack.layout import DEFAULT_ROOT
    found = [r for r in [lab_state.DEFAULT_ROOT] if _is_lab(r)]
    found += _services_labs(DEFAULT_ROOT, required=False)
    if not found:
        raise LabError(f'no lab at {lab_state.DEFAULT_ROOT} and no services '
                       f'at {DEFAULT_ROOT}; name a lab with --root or the '
                       'services with --services')
    return found


def _services_labs(services: str, required: bool) -> list[str]:
    from kubernetes_mgmt_lab.openstack import cloud
    from kubernetes_mgmt_lab.openstack.layout import Root

    root = Root(services)
    if not os.path.exists(root.state_file):
        if required:
            raise LabError(f'no services at {services} (no '
                           f'{root.state_file}); "lab tacker up --root '
                           f'{services}" starts them')
        return []
    return [r for r in cloud.every_lab_root(root) if _is_lab(r)]


def _is_lab(root: str) -> bool:
    return os.path.exists(lab_state.state_path(root))


def vms(root: str) -> list[Vm]:
    """The VMs of the lab at ``root`` with their names (a LabError if
    there is no lab there)."""
    path = lab_state.state_path(root)
    if not os.path.exists(path):
        raise LabError(f'no lab at {root} (no {path})')
    state = lab_state.load(path)
    nodes = _nodes_by_host(state)
    names = {h.name for h in state.hosts}
    # A lab of its own names its hosts master-N, worker-N already.
    aliases = {host: alias for host, alias in _aliases(nodes).items()
               if alias not in names}
    return [Vm(root, h.name, h.server_id, nodes.get(h.name, (None,))[0],
               aliases.get(h.name)) for h in state.hosts]


def _nodes_by_host(state: lab_state.LabState
                   ) -> dict[str, tuple[str, bool]]:
    """Lab host -> (its node's name, whether it is a control-plane node),
    read from the lab's emulated cluster (none yet: {}). A node counts
    only while its host has the node's address: the cluster keeps the
    nodes of a terminated VNF until the next ``kubeadm init``, and the
    lab cloud gives a new VM the lowest free vm-N name."""
    from kubernetes_mgmt_lab.emulated import store
    from kubernetes_mgmt_lab.emulated.view import ClusterView

    if not os.path.exists(os.path.join(state.cluster_dir, store.STATE_FILE)):
        return {}
    view = ClusterView(state.cluster_dir)
    nodes = {n['metadata']['name']: n for n in view.nodes()}
    address = {h.name: h.ip for h in state.hosts if h.plugged}
    return {host: (name, CONTROL_PLANE in nodes[name]['metadata'].get(
                'labels', {}))
            for name, host in view.node_hosts().items()
            if host in address and address[host] in _addresses(nodes[name])}


def _addresses(node: dict) -> set[str]:
    return {a.get('address') for a in node.get('status', {}).get(
        'addresses') or [] if a.get('type') == 'InternalIP'}


def _aliases(nodes: dict[str, tuple[str, bool]]) -> dict[str, str]:
    """Lab host -> master-N or worker-N, by node name within each role."""
    found = {}
    for control, role in ((True, 'master'), (False, 'worker')):
        ranked = sorted((node, host) for host, (node, is_control)
                        in nodes.items() if is_control is control)
        found.update({host: f'{role}-{index}'
                      for index, (_, host) in enumerate(ranked)})
    return found


def find(name: str, roots: list[str]) -> Vm:
    """The one VM ``name`` means in the labs at ``roots``; a LabError
    naming the VMs there if none or several do."""
    every = [vm for root in roots for vm in vms(root)]
    for fits in (lambda vm: name in vm.own_names(),
                 lambda vm: name == vm.alias):
        matches = [vm for vm in every if fits(vm)]
        if len(matches) == 1:
            return matches[0]
        if matches:
            where = ', '.join(f'{vm.describe()} in the lab at {vm.lab_root}'
                              for vm in matches)
            raise LabError(f'{name!r} names VMs of more than one lab: '
                           f'{where}; name its lab with --root')
    raise LabError(f'no lab host named {name!r}; ' + _listing(roots, every))


def _listing(roots: list[str], every: list[Vm]) -> str:
    parts = [f'the hosts of the lab at {root}: '
             + ', '.join(vm.describe() for vm in every
                         if vm.lab_root == root)
             for root in roots if any(vm.lab_root == root for vm in every)]
    return '; '.join(parts) if parts else \
        f'the labs at {", ".join(roots)} have no hosts'

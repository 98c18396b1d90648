"""The order in which an in-place upgrade takes the nodes, as kubeadm's
upgrade procedure and the skew policy require: the control plane first,
one master at a time (the first with ``kubeadm upgrade apply``, which
upgrades the cluster's own components; the others with ``kubeadm upgrade
node``), then the workers in batches of at most ``max_unavailable``, so
that no more workers than that are ever drained at once."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

N = TypeVar('N')

APPLY = 'apply'     # kubeadm upgrade apply: the first master
NODE = 'node'       # kubeadm upgrade node: every other node


@dataclass(frozen=True)
class Batch(Generic[N]):
    """Nodes drained and upgraded together, with the kubeadm command
    that upgrades them."""

    nodes: tuple[N, ...]
    command: str


def upgrade_order(masters: Sequence[N], workers: Sequence[N],
                  max_unavailable: int) -> list[Batch[N]]:
    """The batches, in order. ``masters[0]`` is the master the upgrade
    is applied on (a Ready one, chosen by the caller)."""
    if not masters:
        raise ValueError('an upgrade needs a master to apply it on')
    if max_unavailable < 1:
        raise ValueError(f'max_unavailable must be at least 1, not '
                         f'{max_unavailable}')
    order = [Batch((masters[0],), APPLY)]
    order += [Batch((m,), NODE) for m in masters[1:]]
    order += [Batch(tuple(workers[i:i + max_unavailable]), NODE)
              for i in range(0, len(workers), max_unavailable)]
    return order

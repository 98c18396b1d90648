"""Whether a heal of named nodes is safe to run now, judged from the
cluster's health as read just before it (no host is changed here).

A heal may come from an alert with no human to stop it, so four guards
hold, as Cluster API's MachineHealthCheck and Magnum's auto-healing do:

- etcd keeps its quorum: one etcd member per heal, and none while too
  few of the other members are healthy to keep a majority once its
  member is removed (never lifted: a lost quorum is restored from a
  snapshot). A master that is no member (after a restore) removes
  nothing, so several such masters may heal together;
- at most ``max_unhealthy`` workers unhealthy at once: beyond that the
  cause is not the nodes (network, storage, the cloud);
- a node that recovered by itself since the alert is not rebuilt;
- a node healed ``heal_repeat_limit`` times within ``heal_repeat_window``
  is not healed again automatically: its rebuilds do not cure it.

An operator's heal with ``additionalParams.force: true`` lifts the last
three guards (it is an explicit decision); the quorum guard always holds.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

MASTER = 'master'
_CAP = re.compile(r'^(\d+)(%?)$')


@dataclass(frozen=True)
class NodeHealth:
    """One node as read before the heal."""

    name: str
    role: str            # 'master' or 'worker'
    ready: bool          # its Node's Ready condition is True
    answering: bool      # its VM accepts a connection on the SSH port

    @property
    def healthy(self) -> bool:
        return self.ready and self.answering

    def describe(self) -> str:
        facts = [] if self.ready else ['not Ready']
        if not self.answering:
            facts.append('VM not answering')
        return f'{self.name} ({", ".join(facts) or "healthy"})'


@dataclass(frozen=True)
class Limits:
    max_unhealthy: str          # '40%' of the workers, or a count
    repeat_limit: int           # heals of one node within the window
    repeat_window: float        # seconds
    force: bool = False


class HealRefused(Exception):
    """The heal would be unsafe now; nothing was changed."""


def cap_of(max_unhealthy: str, workers: int) -> int:
    """The number of unhealthy workers tolerated: a count as given; a
    percentage rounded down, as MachineHealthCheck's maxUnhealthy, but
    never below one (else 40 % of a cluster of two workers would stop
    every automatic heal)."""
    match = _CAP.match(max_unhealthy.strip())
    if match is None:
        raise ValueError(f'max_unhealthy {max_unhealthy!r} is neither a '
                         'count nor a percentage such as 40%')
    value, percent = int(match.group(1)), bool(match.group(2))
    if not percent:
        return value
    return max(1, math.floor(workers * value / 100)) if value else 0


def check(targets: Sequence[str], health: Mapping[str, NodeHealth],
          limits: Limits, heals: Mapping[str, Iterable[float]],
          now: float, members: Sequence[str] | None = None) -> None:
    """Raise HealRefused naming what makes healing ``targets`` (node
    names) unsafe; ``heals``: node name -> when it was healed before;
    ``members``: etcd's member names (None: every master is one)."""
    _check_quorum(targets, health, members)
    if limits.force:
        return
    _check_cap(health, limits.max_unhealthy)
    _check_recovered(targets, health)
    _check_repeats(targets, limits, heals, now)


def _check_quorum(targets: Sequence[str], health: Mapping[str, NodeHealth],
                  members: Sequence[str] | None) -> None:
    if members is None:
        members = [h.name for h in health.values() if h.role == MASTER]
    healed = [name for name in members if name in targets]
    if not healed or len(members) < 2:
        return      # single master: refused elsewhere (heal the VNF)
    if len(healed) > 1:
        raise HealRefused(
            f'masters {", ".join(healed)} named in one heal are etcd '
            'members: they are healed one at a time, so that etcd keeps '
            'its quorum; heal them in separate requests')
    others = [name for name in members if name != healed[0]]
    sick = [health[n].describe() if n in health else f'{n} (no node)'
            for n in others if n not in health or not health[n].healthy]
    # Its member removed, len(others) remain; a majority must be healthy.
    if len(others) - len(sick) <= len(others) / 2:
        raise HealRefused(
            f'healing master {healed[0]} would leave etcd without a '
            f'quorum: only {len(others) - len(sick)} of the other '
            f'{len(others)} members are healthy ({", ".join(sick)}). '
            'Bring one of them back first; if etcd has lost its quorum, '
            'restore it from the latest snapshot (docs/etcd-restore.rst)')


def _check_cap(health: Mapping[str, NodeHealth], max_unhealthy: str) -> None:
    workers = [h for h in health.values() if h.role != MASTER]
    sick = [h for h in workers if not h.healthy]
    cap = cap_of(max_unhealthy, len(workers))
    if len(sick) > cap:
        raise HealRefused(
            f'{len(sick)} of {len(workers)} workers are unhealthy, more '
            f'than max_unhealthy ({max_unhealthy}: {cap}): the cause is '
            'likely not the nodes (network, storage, the cloud), so none '
            f'is rebuilt. Unhealthy: {", ".join(h.describe() for h in sick)}'
            '. Heal with additionalParams.force: true to rebuild anyway')


def _check_recovered(targets: Sequence[str],
                     health: Mapping[str, NodeHealth]) -> None:
    well = [name for name in targets
            if name in health and health[name].healthy]
    if well:
        raise HealRefused(
            f'{", ".join(well)} recovered by itself (Ready, VM answering): '
            'nothing was rebuilt. Heal with additionalParams.force: true '
            'to rebuild a healthy node')


def _check_repeats(targets: Sequence[str], limits: Limits,
                   heals: Mapping[str, Iterable[float]], now: float) -> None:
    for name in targets:
        recent = [t for t in heals.get(name, ())
                  if now - t <= limits.repeat_window]
        if len(recent) >= limits.repeat_limit:
            raise HealRefused(
                f'{name} was healed {len(recent)} times in the last '
                f'{limits.repeat_window / 60:.0f} minutes: rebuilding it '
                'does not cure it, so automatic heal stops for it. Find '
                'the cause, then heal with additionalParams.force: true')

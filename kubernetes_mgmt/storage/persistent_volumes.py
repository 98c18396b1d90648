"""PersistentVolumes in the cluster: register, check use, delete.

Everything runs as kubectl on a master (``remote.kubectl``); waits poll
with backoff up to ``[kubernetes_mgmt] volume_timeout``.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kubernetes_mgmt import redact
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.remote.kubectl import kubectl
from kubernetes_mgmt.remote.retry import poll
from kubernetes_mgmt.remote.ssh import SshSession
from kubernetes_mgmt.storage.pv_manifests import PvManifest

LOG = redact.get_logger(__name__)
# A PV that is Bound is registered too: a re-run finds it in use.
REGISTERED = ('Available', 'Bound')


@dataclass(frozen=True)
class PvStatus:
    name: str
    phase: str
    claim: str | None       # namespace/name of the claim bound to it


def statuses(session: SshSession, names: Sequence[str]
             ) -> dict[str, PvStatus]:
    """The PVs among ``names`` that exist, by name."""
    out = kubectl(session, ['get', 'persistentvolumes', '-o', 'json'],
                  step='list persistent volumes').stdout
    wanted = set(names)
    found = {}
    for item in json.loads(out).get('items', []):
        name = item['metadata']['name']
        if name in wanted:
            found[name] = _status(item)
    return found


def _status(item: dict) -> PvStatus:
    ref = (item.get('spec') or {}).get('claimRef') or {}
    claim = (f'{ref.get("namespace", "?")}/{ref["name"]}'
             if ref.get('name') else None)
    phase = (item.get('status') or {}).get('phase') or 'Pending'
    if item['metadata'].get('deletionTimestamp'):
        phase = f'{phase}, terminating'
    return PvStatus(item['metadata']['name'], phase, claim)


def register(session: SshSession, manifests: Sequence[PvManifest], *,
             deadline: float) -> None:
    """Apply the PVs (an unchanged PV stays as it is) and wait until each
    is Available (or already Bound)."""
    if not manifests:
        return
    listing = {'apiVersion': 'v1', 'kind': 'List',
               'items': [m.body for m in manifests]}
    kubectl(session, ['apply', '-f', '-'], input=json.dumps(listing),
            step='register persistent volumes')
    names = [m.name for m in manifests]

    def pending(found: dict[str, PvStatus]) -> list[str]:
        return [f'{n} ({found[n].phase if n in found else "missing"})'
                for n in names if n not in found
                or found[n].phase not in REGISTERED]

    _wait(session, names, pending, deadline=deadline,
          what='register persistent volumes: not Available')
    LOG.info('[%s] persistent volumes registered: %s',
             session.endpoint.name, ', '.join(names))


def refuse_if_bound(session: SshSession, names: Sequence[str],
                    operation: str) -> None:
    """Raise, naming each PV in use and its claim, if any is Bound."""
    bound = [s for s in statuses(session, names).values()
             if s.phase.startswith('Bound')]
    if bound:
        raise MgmtDriverError(
            f'{operation} refused: persistent volume(s) in use: ' + '; '.join(
                f'{s.name} is Bound to claim {s.claim or "(unknown)"}'
                for s in bound) + '. Delete those claims (after saving '
            'their data) and try again; nothing was changed.')


def delete(session: SshSession, names: Sequence[str], *,
           deadline: float) -> None:
    """Delete the PVs and wait until they are gone."""
    present = statuses(session, names)
    if not present:
        return
    kubectl(session, ['delete', 'persistentvolume', *sorted(present),
                      '--ignore-not-found', '--wait=false'],
            step='delete persistent volumes')
    _wait(session, names, lambda found: [
        f'{s.name} ({s.phase})' for s in found.values()],
        deadline=deadline, what='delete persistent volumes: still present')


def _wait(session: SshSession, names: Sequence[str],
          pending: Callable[[dict[str, PvStatus]], list[str]], *,
          deadline: float, what: str) -> None:
    """Poll the PVs until ``pending`` (what is not there yet) is empty;
    then raise naming what still was."""
    left: list[str] = []

    def done() -> bool:
        nonlocal left
        left = pending(statuses(session, names))
        return not left

    try:
        poll(done, deadline=deadline, what=what)
    except TimeoutError:
        raise MgmtDriverError(
            f'[{session.endpoint.name}] {what} after {deadline:g} s: '
            f'{", ".join(left)}') from None

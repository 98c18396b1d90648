"""etcd membership of the control plane.

``etcdctl`` runs inside the etcd static pod of a master that stays
(``kubectl exec etcd-<node>``: the image carries etcdctl and the pod
mounts the etcd certificates), against that master's own etcd. Members
are read as JSON and matched exactly, by name or by peer URL host; a
member is removed by its id.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from kubernetes_mgmt import redact
from kubernetes_mgmt.errors import CommandFailed, MgmtDriverError
from kubernetes_mgmt.remote.kubectl import kubectl
from kubernetes_mgmt.remote.retry import Backoff
from kubernetes_mgmt.remote.ssh import Result, SshSession

LOG = redact.get_logger(__name__)
PKI = '/etc/kubernetes/pki/etcd'
LOCAL_ETCD = 'https://127.0.0.1:2379'
UNHEALTHY = 'etcdserver: unhealthy cluster'
UNHEALTHY_RETRY = 30.0      # seconds


@dataclass(frozen=True)
class EtcdMember:
    id: int
    name: str
    peer_urls: tuple[str, ...]

    @property
    def hex_id(self) -> str:
        """The form ``etcdctl member remove`` takes."""
        return f'{self.id:x}'

    def is_node(self, name: str, ip: str) -> bool:
        """Exactly this node: same member name, or a peer URL on ``ip``
        (a member added but never started has no name yet)."""
        if self.name and self.name == name:
            return True
        return any(urlsplit(url).hostname == ip for url in self.peer_urls)


def etcdctl(session: SshSession, via: str, args: Sequence[str], *,
            step: str) -> Result:
    """etcdctl in the etcd pod of master ``via``, against its own etcd."""
    return kubectl(session, [
        '-n', 'kube-system', 'exec', f'etcd-{via}', '--', 'etcdctl',
        '--endpoints', LOCAL_ETCD, '--cacert', f'{PKI}/ca.crt',
        '--cert', f'{PKI}/server.crt', '--key', f'{PKI}/server.key',
        *args], step=step)


def parse_members(text: str) -> list[EtcdMember]:
    """``etcdctl member list -w json`` output -> members. IDs are
    unsigned 64-bit numbers (hex strings with ``--hex``)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise MgmtDriverError(f'etcdctl member list: not JSON: {exc}') \
            from None
    members = []
    for entry in data.get('members') or []:
        raw = entry.get('ID')
        member_id = int(raw, 16) if isinstance(raw, str) else int(raw)
        members.append(EtcdMember(id=member_id, name=entry.get('name') or '',
                                  peer_urls=tuple(entry.get('peerURLs')
                                                  or ())))
    return members


def members(session: SshSession, via: str) -> list[EtcdMember]:
    """The members as the etcd of master node ``via`` sees them."""
    out = etcdctl(session, via, ['member', 'list', '-w', 'json'],
                   step='etcd member list')
    return parse_members(out.stdout)


def remove_node_member(session: SshSession, via: str, name: str,
                       ip: str) -> list[EtcdMember]:
    """Remove the member(s) of master ``name``/``ip``; return them (none
    when it is not a member, e.g. on a repeated run)."""
    if name == via:
        raise MgmtDriverError(f'etcd member {name} cannot be removed '
                              'through its own etcd pod')
    found = [m for m in members(session, via) if m.is_node(name, ip)]
    for member in found:
        try:
            _remove(session, via, member, name)
        except CommandFailed:
            # A retried remove whose first attempt got through fails
            # with "member not found": gone is what was wanted.
            if any(m.id == member.id for m in members(session, via)):
                raise
        LOG.info('etcd member %s (%s) of %s removed', member.hex_id,
                 ', '.join(member.peer_urls), name)
    if not found:
        LOG.info('%s is no etcd member: nothing to remove', name)
    return found


def _remove(session: SshSession, via: str, member: EtcdMember,
            name: str) -> None:
    """``member remove``, again while etcd answers "unhealthy cluster":
    it refuses a membership change until every member has been connected
    for 5 s (its strict reconfiguration check), e.g. just after a join."""
    backoff = Backoff(UNHEALTHY_RETRY, first=0.5, ceiling=2.0)
    while True:
        try:
            etcdctl(session, via, ['member', 'remove', member.hex_id],
                    step=f'etcd member remove {name}')
            return
        except CommandFailed as exc:
            if UNHEALTHY not in exc.stderr or not backoff.wait():
                raise
            LOG.info('etcd refused to remove %s for now (%s): trying '
                     'again', name, UNHEALTHY)

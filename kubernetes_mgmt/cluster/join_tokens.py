"""The bootstrap tokens the driver makes for joins, deleted once the
joins of an operation are over.

kubeadm keeps a token (the Secret ``kube-system/bootstrap-token-<id>``)
until its TTL ends: 24 h for the one ``init`` makes, 2 h for
``refresh-join``'s. Whoever got hold of one meanwhile could join a node
of their own. The install script gives every token it makes the
description ``DESCRIPTION``; after the joins of an operation every token
with it is deleted through a master (``kubeadm token delete <id>``: the
id is the public half), those of earlier attempts of the operation too,
and so are the tokens the operation made itself, whatever the
description they were stored with. Other tokens are left alone.
"""
from __future__ import annotations

import re
from collections.abc import Collection

from kubernetes_mgmt import redact
from kubernetes_mgmt.errors import CommandFailed
from kubernetes_mgmt.remote.kubectl import ADMIN_CONF
from kubernetes_mgmt.remote.ssh import SshSession

# What render_bootstrap_tokens in scripts/install_k8s_cluster.sh writes.
DESCRIPTION = 'kubernetes-mgmt bootstrap token'
_TOKEN = re.compile(r'([a-z0-9]{6})\.([a-z0-9]{16})')


def driver_token_ids(listing: str, own: Collection[str] = ()) -> list[str]:
    """Ids of the tokens in ``kubeadm token list`` output that the driver
    made: their description is ``DESCRIPTION``, or their id is in
    ``own``."""
    ids = []
    for line in listing.splitlines():
        first = line.split(None, 1)[0] if line.strip() else ''
        match = _TOKEN.fullmatch(first)
        if match is None:
            continue        # the header, or nothing of a token
        # The listing shows every token whole: never let one be shown.
        redact.register(first, match.group(2))
        if DESCRIPTION in line or match.group(1) in own:
            ids.append(match.group(1))
    return list(dict.fromkeys(ids))


def _driver_tokens(session: SshSession, own: Collection[str]) -> list[str]:
    step = 'list bootstrap tokens'
    result = session.run(['kubeadm', 'token', 'list', '--kubeconfig',
                          ADMIN_CONF], step=step, sudo=True, check=False)
    ids = driver_token_ids(result.stdout, own)
    if result.exit_status != 0:
        # Not the output: it may hold tokens not yet registered.
        raise CommandFailed(session.endpoint.name, step, result.exit_status,
                            '', result.stderr)
    return ids


def delete_driver_tokens(session: SshSession,
                         own: Collection[str] = ()) -> list[str]:
    """Delete every bootstrap token the driver made (``own``: the ids of
    those this operation made), through the master of ``session``;
    return their ids. A token gone meanwhile is fine."""
    found = _driver_tokens(session, own)
    for token_id in found:
        result = session.run(['kubeadm', 'token', 'delete', token_id,
                              '--kubeconfig', ADMIN_CONF],
                             step='delete bootstrap token', sudo=True,
                             check=False)
        if result.exit_status != 0 and \
                token_id in _driver_tokens(session, own):
            raise CommandFailed(session.endpoint.name,
                                f'delete bootstrap token {token_id}',
                                result.exit_status, result.stdout,
                                result.stderr)
    return found

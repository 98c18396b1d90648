"""Every VM's SSH host key is known before the driver logs in.

A VM's key is found, in this order:

1. the key stored for its Nova server in the VNF instance's signed state
   (learnt by an earlier operation, or earlier in this one);
2. the keys the VM published on its console at first boot
   (``console_keys``), read through the ``authority`` (Nova).

The offered key must match; otherwise the connection is refused before
anything is sent (paramiko checks the host key before it authenticates),
with the host, the expected and the offered fingerprints. A VM that has
not published its keys yet (still booting) is retried by the caller
until its connect deadline. Only an operator's explicit
``host_key_checking = False`` trusts an unknown key unseen, with a
warning.

Keys are kept by host id (the Nova server id), so that an address taken
over by another VM (scale-in, then scale-out) is never trusted on the
strength of its predecessor's key; state stored by older releases keyed
them by address, which is still honoured for the same key.
"""
from __future__ import annotations

import base64
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

import paramiko

from kubernetes_mgmt import redact
from kubernetes_mgmt.errors import HostKeyMismatch
from kubernetes_mgmt.remote.console_keys import (
    PublishedKeys,
    fingerprint,
    parse,
)

LOG = redact.get_logger(__name__)


def key_text(key: paramiko.PKey) -> str:
    return f'{key.get_name()} {key.get_base64()}'


def text_fingerprint(text: str) -> str:
    """The SHA256 fingerprint of a stored ``key_text``."""
    return fingerprint(base64.b64decode(text.split()[1]))


class HostKeyAuthority(Protocol):
    """Where the keys of a VM never seen before are published."""

    def published(self, host_id: str) -> PublishedKeys | None:
        """The keys ``host_id`` published; None while it has not yet."""


class HostKeyPending(Exception):
    """The VM has not published its host keys yet (retried)."""


class HostKeyUnverifiable(Exception):
    """Nothing can say which key the VM has (not retried)."""


@dataclass
class StaticKeys:
    """An authority that knows the keys up front (host id -> public key
    lines ``type base64 [comment]``): a site's inventory, or a test's."""

    keys: dict[str, list[str]]

    def published(self, host_id: str) -> PublishedKeys | None:
        lines = self.keys.get(host_id)
        if not lines:
            return None
        return PublishedKeys(frozenset(text_fingerprint(line)
                                       for line in lines))


@dataclass
class Target:
    """The VM a connection is meant for."""

    host_id: str                # Nova server id (or the address)
    address: str
    name: str                   # for messages


@dataclass
class HostKeyStore:
    """Known keys by host id; ``authority`` publishes new VMs' keys;
    ``replacing``: host ids whose VM is rebuilt in place during this
    operation (their stored key is void, the authority decides)."""

    known: dict[str, str] = field(default_factory=dict)
    authority: HostKeyAuthority | None = None
    checking: bool = True
    replacing: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock,
                                  repr=False, compare=False)

    def verify(self, target: Target, key: paramiko.PKey) -> None:
        """Accept ``key`` for ``target`` or raise: HostKeyMismatch,
        HostKeyPending (ask again later), HostKeyUnverifiable."""
        offered = key_text(key)
        with self._lock:
            stored = (None if target.host_id in self.replacing
                      else self.known.get(target.host_id))
            # Releases before host ids kept keys by address: the same key
            # still proves the same VM; another one is judged afresh.
            legacy = (self.known.get(target.address)
                      if target.address != target.host_id else None)
        if stored is not None and stored != offered:
            if self.checking:
                raise _mismatch(target, [text_fingerprint(stored)], key,
                                'stored for this VM by an earlier '
                                'operation')
            LOG.warning('[%s] host key changed to %s; accepted unverified '
                        '(host_key_checking = False)', target.name,
                        key.fingerprint)
        elif stored is None and legacy != offered:
            self._check_unknown(target, key)
        self._remember(target, offered)

    def forget(self, host_id: str) -> None:
        with self._lock:
            self.known.pop(host_id, None)

    def for_hosts(self, host_ids: Iterable[str]) -> dict[str, str]:
        """The known keys of ``host_ids`` (what is worth storing)."""
        wanted = set(host_ids)
        with self._lock:
            return {h: k for h, k in self.known.items() if h in wanted}

    def _remember(self, target: Target, offered: str) -> None:
        with self._lock:
            self.known[target.host_id] = offered
            if target.address != target.host_id:
                self.known.pop(target.address, None)

    def _check_unknown(self, target: Target, key: paramiko.PKey) -> None:
        if self.authority is None:
            if self.checking:
                raise HostKeyUnverifiable(
                    f'no host key is known for this VM and nothing '
                    f'publishes one; refusing to log in (offered '
                    f'{key.fingerprint})')
            LOG.warning('[%s] trusting host key %s unverified '
                        '(host_key_checking = False)', target.name,
                        key.fingerprint)
            return
        published = self.authority.published(target.host_id)
        if published is None:
            raise HostKeyPending(
                f'{target.name} has not published its SSH host keys on '
                'its console yet')
        if key.fingerprint not in published:
            raise _mismatch(target, sorted(published.fingerprints), key,
                            'published on its console')


def _mismatch(target: Target, expected: list[str], key: paramiko.PKey,
              source: str) -> HostKeyMismatch:
    return HostKeyMismatch(
        target.name, 'ssh connect',
        f'host key mismatch at {target.address}: expected '
        f'{" or ".join(expected)} ({source}), offered {key.get_name()} '
        f'{key.fingerprint}; nothing was sent. Another machine may be '
        'answering on this address. If the VM was rebuilt outside Tacker, '
        'heal it through Tacker.')


class _StorePolicy(paramiko.MissingHostKeyPolicy):
    """Routes every key decision to a HostKeyStore.

    The paramiko client is given no known_hosts, so every key reaches this
    policy and the store alone decides.
    """

    def __init__(self, store: HostKeyStore, target: Target):
        self._store = store
        self._target = target

    def missing_host_key(self, client, hostname, key):
        self._store.verify(self._target, key)


def policy_for(store: HostKeyStore,
               target: Target) -> paramiko.MissingHostKeyPolicy:
    return _StorePolicy(store, target)


@dataclass
class ConsoleKeys:
    """An authority that parses a VM's console log: ``read(host_id)``
    returns it, or None while the VM has none."""

    read: Callable[[str], str | None]

    def published(self, host_id: str) -> PublishedKeys | None:
        text = self.read(host_id)
        return parse(text) if text else None

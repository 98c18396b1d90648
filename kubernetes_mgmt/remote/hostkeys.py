"""Host-key trust per VNF instance.

The first key a VM shows is remembered (stored with the VNF instance by the
caller); afterwards a different key is refused, except for VMs the current
operation is replacing (heal), whose rebuilt disk has a new key.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

import paramiko

from kubernetes_mgmt.errors import HostKeyMismatch


def key_text(key: paramiko.PKey) -> str:
    return f'{key.get_name()} {key.get_base64()}'


@dataclass
class HostKeyStore:
    """Known keys by address; ``replacing`` lists addresses being rebuilt."""

    known: dict[str, str] = field(default_factory=dict)
    replacing: set[str] = field(default_factory=set)
    checking: bool = True
    _lock: threading.Lock = field(default_factory=threading.Lock,
                                  repr=False, compare=False)

    def verify(self, address: str, key: paramiko.PKey) -> None:
        """Accept ``key`` for ``address`` or raise HostKeyMismatch."""
        offered = key_text(key)
        with self._lock:
            remembered = self.known.get(address)
            if remembered is None or remembered == offered:
                self.known[address] = offered
                return
            if address in self.replacing or not self.checking:
                self.known[address] = offered
                return
        raise HostKeyMismatch(
            address, 'ssh connect',
            f'host key changed (now {key.get_name()} '
            f'{key.fingerprint}); refusing to connect because this VM is '
            'not being replaced. If the VM was rebuilt outside Tacker, '
            'heal it through Tacker or remove its stored key.')

    def forget(self, address: str) -> None:
        with self._lock:
            self.known.pop(address, None)


class _StorePolicy(paramiko.MissingHostKeyPolicy):
    """Routes every key decision to a HostKeyStore.

    The paramiko client is given no known_hosts, so every key reaches this
    policy and the store alone decides.
    """

    def __init__(self, store: HostKeyStore, address: str):
        self._store = store
        self._address = address

    def missing_host_key(self, client, hostname, key):
        self._store.verify(self._address, key)


def policy_for(store: HostKeyStore,
               address: str) -> paramiko.MissingHostKeyPolicy:
    return _StorePolicy(store, address)

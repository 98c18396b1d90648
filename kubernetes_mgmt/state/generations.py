"""The highest generation of each VNF instance's stored state that this
conductor host has seen: its floor.

The driver's state lives in Tacker (``instance_state``), where anyone
allowed to PATCH the instance could put back an older signed copy of it,
or blank it. Each stored state carries a generation that every save
raises; the floor is kept here, beside the state key, where Tacker's API
does not reach, so that a copy older than the floor, or no state where
there was one, is refused.

One small file per instance in ``[kubernetes_mgmt] state_generation_dir``
(default: ``generations`` beside ``state_key_file``), holding the number.
Writes are crash-safe (``durable``) and serialised, between threads and
between processes (the conductor and the v2 LCM scripts it starts), by a
lock file in the directory; a floor only ever rises.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.state import durable

_SAFE_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$')
_LOCK_FILE = '.lock'
_THREADS = threading.Lock()     # flock may not exclude threads (NFS)


class GenerationError(MgmtDriverError):
    """A floor file cannot be read or written."""


def directory_for(key_file: str | None = None) -> str:
    """The floors' directory: the option, else ``generations`` beside the
    state key (``key_file``, default ``state_key_file``)."""
    configured = CONF.kubernetes_mgmt.state_generation_dir
    if configured:
        return configured
    key_file = key_file or CONF.kubernetes_mgmt.state_key_file
    return os.path.join(os.path.dirname(key_file) or '.', 'generations')


@dataclass(frozen=True)
class Floors:
    directory: str

    def path(self, instance_id: str) -> str:
        """The floor file of ``instance_id`` (Tacker's ids are UUIDs; any
        other id is named by its hash, so it cannot leave the directory)."""
        name = instance_id if _SAFE_NAME.match(instance_id) else \
            'sha256-' + hashlib.sha256(instance_id.encode()).hexdigest()
        return os.path.join(self.directory, name)

    def read(self, instance_id: str) -> int | None:
        """The floor of ``instance_id``; None if it has none."""
        path = self.path(instance_id)
        try:
            with open(path, encoding='ascii') as f:
                text = f.read()
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise GenerationError(f'cannot read the state generation of '
                                  f'instance {instance_id} ({path}): '
                                  f'{_reason(exc)}') from None
        if not text.strip().isdigit():
            raise GenerationError(
                f'{path} ([kubernetes_mgmt] state_generation_dir) does not '
                f'hold a generation number: {text.strip()[:40]!r}')
        return int(text.strip())

    def raise_to(self, instance_id: str, generation: int) -> None:
        """Make the floor of ``instance_id`` at least ``generation``."""
        with self._locked():
            current = self.read(instance_id)
            if current is not None and current >= generation:
                return
            try:
                durable.replace(self.path(instance_id),
                                f'{generation}\n'.encode())
            except OSError as exc:
                raise GenerationError(
                    f'cannot record generation {generation} of instance '
                    f'{instance_id} in {self.directory} ([kubernetes_mgmt] '
                    f'state_generation_dir): {_reason(exc)}') from None

    def any_recorded(self) -> bool:
        """Whether this host has seen the signed state of any instance."""
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise GenerationError(f'cannot list {self.directory}: '
                                  f'{_reason(exc)}') from None
        return any(not n.startswith('.') for n in names)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            durable.make_dir(self.directory)
            fd = os.open(os.path.join(self.directory, _LOCK_FILE),
                         os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise GenerationError(
                f'cannot use {self.directory} ([kubernetes_mgmt] '
                f'state_generation_dir): {_reason(exc)}') from None
        try:
            with _THREADS:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
        finally:
            os.close(fd)    # releases the flock


def floors(key_file: str | None = None) -> Floors:
    return Floors(directory_for(key_file))


def _reason(exc: BaseException) -> str:
    return getattr(exc, 'strerror', None) or str(exc)

"""The lab's stand-in for Tacker's VIM database: one JSON file.

The file holds bearer tokens, so it is written 0600 (atomically, under an
exclusive ``flock`` on ``<file>.lock``). Like Tacker's create_vim,
``register`` first checks that the API answers with the token and CA.
The lab has no CNF instances: ``in_use`` reports what ``record_use``
noted, so tests can stand in for CNFs that use a VIM.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from kubernetes_mgmt import redact
from kubernetes_mgmt.vim import probe
from kubernetes_mgmt.vim.registration import (
    VimError,
    VimRecord,
    VimSpec,
    reuse,
    same_url,
)

LOG = redact.get_logger(__name__)

Checker = Callable[..., None]


def _record(entry: dict) -> VimRecord:
    return VimRecord(id=entry['id'], name=entry['name'],
                     auth_url=entry['auth_url'])


def _entry(spec: VimSpec, context: Any) -> dict:
    return {'id': str(uuid.uuid4()), 'name': spec.name,
            'type': 'kubernetes', 'auth_url': spec.auth_url,
            'bearer_token': spec.bearer_token,
            'ssl_ca_cert': spec.ssl_ca_cert,
            'tenant_id': spec.tenant_id or getattr(context, 'project_id',
                                                   None),
            'description': spec.description, 'used_by': []}


class FileVimRegistry:
    """A VimRegistry kept in a JSON file."""

    def __init__(self, path: str, deadline: float = probe.DEFAULT_DEADLINE,
                 check: Checker = probe.check_api):
        self.path = path
        self._deadline = deadline
        self._check = check

    # -- the VimRegistry protocol -------------------------------------------

    def check_ready(self) -> None:
        """A file can always hold a VIM."""

    def find(self, context: Any, name: str) -> VimRecord | None:
        entry = self._named(self._load(), name)
        return _record(entry) if entry else None

    def register(self, context: Any, spec: VimSpec) -> VimRecord:
        existing = self._named(self._load(), spec.name)
        if existing is not None:
            return reuse(_record(existing), spec,
                         existing.get('ssl_ca_cert'))
        # Outside the lock: the check may take up to its deadline.
        self._check(spec.auth_url, spec.bearer_token, spec.ssl_ca_cert,
                    deadline=self._deadline)
        with self._locked() as data:
            raced = self._named(data, spec.name)
            if raced is not None:
                return reuse(_record(raced), spec, raced.get('ssl_ca_cert'))
            entry = _entry(spec, context)
            data['vims'].append(entry)
        LOG.info('registered VIM %s (%s) for %s in %s', spec.name,
                 entry['id'], spec.auth_url, self.path)
        return _record(entry)

    def get(self, context: Any, vim_id: str) -> VimRecord | None:
        entry = self._by_id(self._load(), vim_id)
        return _record(entry) if entry else None

    def delete(self, context: Any, vim_id: str) -> None:
        with self._locked() as data:
            data['vims'] = [v for v in data['vims'] if v['id'] != vim_id]

    def in_use(self, context: Any, vim_id: str) -> list[str]:
        entry = self._by_id(self._load(), vim_id)
        return list(entry.get('used_by', [])) if entry else []

    def with_url(self, context: Any, auth_url: str) -> list[VimRecord]:
        return [_record(v) for v in self._load()['vims']
                if same_url(v['auth_url'], auth_url)]

    # -- lab and test helpers -----------------------------------------------

    def records(self) -> list[VimRecord]:
        return [_record(v) for v in self._load()['vims']]

    def credentials(self, vim_id: str) -> VimSpec | None:
        """What was stored for the VIM (token and CA included)."""
        entry = self._by_id(self._load(), vim_id)
        if entry is None:
            return None
        return VimSpec(name=entry['name'], auth_url=entry['auth_url'],
                       bearer_token=entry['bearer_token'],
                       ssl_ca_cert=entry['ssl_ca_cert'],
                       tenant_id=entry.get('tenant_id'),
                       description=entry.get('description', ''))

    def record_use(self, vim_id: str, instance_id: str,
                   used: bool = True) -> None:
        """Note (or forget) that a CNF instance uses the VIM."""
        with self._locked() as data:
            entry = self._by_id(data, vim_id)
            if entry is None:
                raise VimError(f'no VIM {vim_id} in {self.path}')
            users = [u for u in entry.get('used_by', [])
                     if u != instance_id]
            entry['used_by'] = users + ([instance_id] if used else [])

    # -- the file -----------------------------------------------------------

    @staticmethod
    def _named(data: dict, name: str) -> dict | None:
        return next((v for v in data['vims'] if v['name'] == name), None)

    @staticmethod
    def _by_id(data: dict, vim_id: str) -> dict | None:
        return next((v for v in data['vims'] if v['id'] == vim_id), None)

    def _load(self) -> dict:
        with self._lock(fcntl.LOCK_SH):
            return self._read()

    def _read(self) -> dict:
        try:
            with open(self.path, encoding='utf-8') as f:
                data = json.load(f)
        except FileNotFoundError:
            return {'vims': []}
        for entry in data['vims']:
            redact.register(entry.get('bearer_token'))
        return data

    def _write(self, data: dict) -> None:
        tmp = f'{self.path}.tmp'
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)
        with open(fd, 'w', encoding='utf-8') as f:
            json.dump(data, f, indent=2, sort_keys=True)
        os.replace(tmp, self.path)

    @contextlib.contextmanager
    def _lock(self, mode: int) -> Iterator[None]:
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        fd = os.open(f'{self.path}.lock', os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, mode)
            yield
        finally:
            os.close(fd)    # closing releases the lock

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict]:
        """Read under an exclusive lock; write back on success."""
        with self._lock(fcntl.LOCK_EX):
            data = self._read()
            yield data
            self._write(data)

"""The emulated cloud's resources, in the shapes the APIs return them,
kept in memory under one lock and written to a root-only JSON file after
each change (a restarted API process finds them again)."""
from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator

KINDS = ('flavors', 'networks', 'subnets', 'ports', 'security_groups',
         'security_group_rules', 'server_groups', 'servers', 'volumes',
         'bridges')


class Records:
    """Resources by kind and id."""

    def __init__(self, path: str):
        self.path = path
        self._lock = threading.RLock()
        self._data: dict[str, dict[str, dict]] = {k: {} for k in KINDS}
        if os.path.exists(path):
            with open(path, encoding='utf-8') as f:
                self._data.update(json.load(f))

    @contextlib.contextmanager
    def changing(self) -> Iterator[dict[str, dict[str, dict]]]:
        """The resources, to change under the lock; saved afterwards."""
        with self._lock:
            yield self._data
            self._save()

    @contextlib.contextmanager
    def reading(self) -> Iterator[dict[str, dict[str, dict]]]:
        """The resources, to read several kinds consistently (not to
        change: nothing is saved)."""
        with self._lock:
            yield self._data

    def get(self, kind: str, ident: str) -> dict | None:
        with self._lock:
            item = self._data[kind].get(ident)
            return json.loads(json.dumps(item)) if item else None

    def all(self, kind: str) -> list[dict]:
        with self._lock:
            return json.loads(json.dumps(list(self._data[kind].values())))

    def _save(self) -> None:
        tmp = f'{self.path}.tmp'
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w', encoding='utf-8') as f:
            json.dump(self._data, f, indent=1, sort_keys=True)
        os.replace(tmp, self.path)

"""Who is calling: the roles of a Keystone token, as the real services'
keystonemiddleware finds them (the token validates itself), kept until
the token expires. Without a Keystone URL every caller is an admin (the
cloud started in a test thread, with no Keystone)."""
from __future__ import annotations

import datetime
import json
import threading
import urllib.error
import urllib.request

from kubernetes_mgmt_lab.cloud.api import ApiError

ADMIN_ROLE = 'admin'
_MAX_KEPT = 256


class TokenRoles:
    """``keystone_url``: Keystone's v3 URL (``http://.../v3``)."""

    def __init__(self, keystone_url: str | None):
        self.url = keystone_url.rstrip('/') if keystone_url else None
        self._kept: dict[str, tuple[frozenset[str], datetime.datetime]] = {}
        self._lock = threading.Lock()

    def is_admin(self, token: str) -> bool:
        return ADMIN_ROLE in self.roles(token)

    def roles(self, token: str) -> frozenset[str]:
        if self.url is None:
            return frozenset({ADMIN_ROLE})
        now = datetime.datetime.now(datetime.timezone.utc)
        with self._lock:
            kept = self._kept.get(token)
            if kept and kept[1] > now:
                return kept[0]
        roles, expires = self._validate(token)
        with self._lock:
            if len(self._kept) >= _MAX_KEPT:
                self._kept = {t: v for t, v in self._kept.items()
                              if v[1] > now}
            self._kept[token] = (roles, expires)
        return roles

    def _validate(self, token: str
                  ) -> tuple[frozenset[str], datetime.datetime]:
        request = urllib.request.Request(  # noqa: S310 (our Keystone)
            f'{self.url}/auth/tokens',
            headers={'X-Auth-Token': token, 'X-Subject-Token': token})
        try:
            with urllib.request.urlopen(request,  # noqa: S310
                                        timeout=30) as reply:
                found = json.loads(reply.read())['token']
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403, 404):
                raise ApiError(401, 'unauthorized',
                               'The request you have made requires '
                               'authentication.') from exc
            raise
        expires = datetime.datetime.fromisoformat(
            found['expires_at'].replace('Z', '+00:00'))
        return frozenset(r['name'] for r in found.get('roles') or []), \
            expires

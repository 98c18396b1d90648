"""Keystone's projects, service users and catalog through its v3 API,
each call idempotent (found by name, created when missing)."""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.openstack.layout import REGION

INTERFACES = ('public', 'internal', 'admin')


@dataclass
class Keystone:
    url: str            # .../v3
    token: str = ''

    @classmethod
    def login(cls, url: str, user: str, password: str) -> Keystone:
        body = {'auth': {
            'identity': {'methods': ['password'], 'password': {'user': {
                'name': user, 'domain': {'id': 'default'},
                'password': password}}},
            'scope': {'project': {'name': 'admin',
                                  'domain': {'id': 'default'}}}}}
        ks = cls(url)
        _, headers = ks._call('POST', '/auth/tokens', body)
        ks.token = headers['X-Subject-Token']
        return ks

    def _call(self, method: str, path: str, body: dict | None = None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(  # noqa: S310 (our Keystone's URL)
            self.url + path, data=data, method=method,
            headers={'Content-Type': 'application/json',
                     **({'X-Auth-Token': self.token} if self.token else {})})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:  # noqa: S310
                raw = resp.read()
                return (json.loads(raw) if raw else {}), resp.headers
        except urllib.error.HTTPError as exc:
            raise LabError(f'Keystone {method} {path} answered '
                           f'{exc.code}: {exc.read()[:300]!r}') from exc

    def _find(self, kind: str, **query: str) -> dict | None:
        found, _ = self._call('GET', f'/{kind}?'
                              + urllib.parse.urlencode(query))
        return found[kind][0] if found[kind] else None

    def _ensure(self, kind: str, one: str, query: dict, body: dict) -> str:
        item = self._find(kind, **query)
        if item is None:
            item = self._call('POST', f'/{kind}', {one: body})[0][one]
        return item['id']

    def project(self, name: str) -> str:
        return self._ensure('projects', 'project', {'name': name},
                            {'name': name, 'domain_id': 'default'})

    def role(self, name: str) -> str:
        return self._ensure('roles', 'role', {'name': name},
                            {'name': name})

    def service_user(self, name: str, password: str, project_id: str,
                     role_id: str) -> str:
        """User ``name`` with ``role`` in the project; its password is
        set again so a re-run converges."""
        user_id = self._ensure('users', 'user',
                               {'name': name, 'domain_id': 'default'},
                               {'name': name, 'domain_id': 'default',
                                'password': password, 'enabled': True})
        self._call('PATCH', f'/users/{user_id}',
                   {'user': {'password': password}})
        self.grant(user_id, project_id, role_id)
        return user_id

    def domain(self, name: str) -> str:
        return self._ensure('domains', 'domain', {'name': name},
                            {'name': name, 'enabled': True})

    def domain_admin(self, name: str, password: str, domain_id: str,
                     role_id: str) -> str:
        """User ``name`` of the domain with ``role`` on the domain itself
        (not on a project); its password is set again on a re-run."""
        user_id = self._ensure('users', 'user',
                               {'name': name, 'domain_id': domain_id},
                               {'name': name, 'domain_id': domain_id,
                                'password': password, 'enabled': True})
        self._call('PATCH', f'/users/{user_id}',
                   {'user': {'password': password}})
        self._call('PUT', f'/domains/{domain_id}/users/{user_id}/roles/'
                          f'{role_id}')
        return user_id

    def grant(self, user_id: str, project_id: str, role_id: str) -> None:
        """``role`` for the user in the project (PUT: idempotent)."""
        self._call('PUT', f'/projects/{project_id}/users/{user_id}/roles/'
                          f'{role_id}')

    def service(self, type_: str, name: str, url: str) -> str:
        """A catalog entry with public, internal and admin endpoints at
        ``url`` (an existing endpoint is moved there)."""
        service_id = self._ensure('services', 'service', {'type': type_},
                                  {'type': type_, 'name': name,
                                   'enabled': True})
        for interface in INTERFACES:
            found = self._find('endpoints', service_id=service_id,
                               interface=interface)
            body = {'service_id': service_id, 'interface': interface,
                    'url': url, 'region_id': REGION, 'enabled': True}
            if found is None:
                self._call('POST', '/endpoints', {'endpoint': body})
            elif found['url'] != url:
                self._call('PATCH', f'/endpoints/{found["id"]}',
                           {'endpoint': {'url': url}})
        return service_id

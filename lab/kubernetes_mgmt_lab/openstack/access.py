"""How the lab reaches the services of a root: as their admin, or as the
admin project's user without the admin role; Keystone password auth as
keystoneauth and openstacksdk take it."""
from __future__ import annotations

from dataclasses import dataclass

from kubernetes_mgmt import redact
from kubernetes_mgmt_lab.openstack import keystone
from kubernetes_mgmt_lab.openstack.layout import REGION, Root
from kubernetes_mgmt_lab.openstack.state import ServicesState


@dataclass(frozen=True)
class Site:
    """How to reach the services of a root: as their admin, or as the
    member-only user."""

    root: Root
    auth_url: str
    password: str
    member_password: str        # of keystone.MEMBER_USER

    @classmethod
    def of(cls, root_path: str) -> Site:
        root = Root(root_path)
        state = ServicesState.load(root)
        pw = state.passwords
        redact.register(pw['admin'], pw['keystone_member'])
        return cls(root, keystone.url(state.ports['keystone']),
                   pw['admin'], pw['keystone_member'])

    def auth(self) -> dict[str, str]:
        return keystone_auth(self.auth_url, 'admin', self.password, 'admin')

    def member_auth(self) -> dict[str, str]:
        """The admin project's user without the admin role."""
        return keystone_auth(self.auth_url, keystone.MEMBER_USER,
                             self.member_password, 'admin')

    def connection(self):
        import openstack

        return openstack.connect(auth=self.auth(), region_name=REGION,
                                 identity_api_version='3')

    def heat(self):
        return heat_client(self.auth())


def keystone_auth(url: str, username: str, password: str,
                  project: str) -> dict[str, str]:
    """Password auth of a user of the default domain, as keystoneauth
    and openstacksdk take it."""
    return {'auth_url': url, 'username': username, 'password': password,
            'project_name': project, 'user_domain_id': 'default',
            'project_domain_id': 'default'}


def heat_client(auth: dict[str, str]):
    """A heatclient on a keystone session (tokens renew themselves)."""
    from heatclient import client
    from keystoneauth1 import session
    from keystoneauth1.identity import v3

    return client.Client('1', session=session.Session(
        auth=v3.Password(**auth)), region_name=REGION)

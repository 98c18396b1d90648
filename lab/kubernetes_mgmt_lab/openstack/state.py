"""The services' state file: ports, PIDs and generated passwords, readable
by root only."""
from __future__ import annotations

import base64
import dataclasses
import json
import os
import secrets
from dataclasses import dataclass, field

from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.openstack.layout import Root

# Every password the services use; generated once per root.
PASSWORDS = ('admin', 'mariadb_tacker', 'rabbit_tacker', 'keystone_tacker',
             'keystone_glance', 'mariadb_heat', 'rabbit_heat',
             'keystone_heat', 'heat_domain_admin', 'vm', 'keystone_barbican',
             'keystone_member')


def fernet_key() -> str:
    """32 random bytes, URL-safe base64: a fernet key."""
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()


# Generated secrets that are keys, not passwords, kept with the passwords
# (the state file is owner-only): Barbican's key-encryption key.
KEYS = {'barbican_kek': fernet_key}


@dataclass
class ServicesState:
    root: str
    ports: dict[str, int] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    passwords: dict[str, str] = field(default_factory=dict)
    epmd_pid: int | None = None
    subnets: list[str] = field(default_factory=list)  # lab networks
    timings: dict[str, float] = field(default_factory=dict)

    @classmethod
    def load(cls, root: Root) -> ServicesState:
        try:
            with open(root.state_file, encoding='utf-8') as f:
                data = json.load(f)
        except FileNotFoundError as exc:
            raise LabError(f'no OpenStack services at {root.path} (no '
                           f'{root.state_file}); run "kubernetes-mgmt lab '
                           'tacker up" first') from exc
        except (OSError, ValueError) as exc:
            raise LabError(f'cannot read {root.state_file}: {exc}') from exc
        return cls(**data)

    @classmethod
    def load_or_new(cls, root: Root) -> ServicesState:
        if os.path.exists(root.state_file):
            state = cls.load(root)
        else:
            state = cls(root=root.path)
        for name in PASSWORDS:
            state.passwords.setdefault(name, secrets.token_urlsafe(18))
        for name, make in KEYS.items():
            state.passwords.setdefault(name, make())
        return state

    def save(self) -> None:
        path = os.path.join(self.root, os.path.basename(Root(
            self.root).state_file))
        tmp = path + '.tmp'
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w', encoding='utf-8') as f:
            json.dump(dataclasses.asdict(self), f, indent=2)
        os.replace(tmp, path)

"""Writing a service's INI configuration: owner-only, since it holds the
service's passwords as on a site."""
from __future__ import annotations

import configparser
import os


def write(path: str, sections: dict[str, dict[str, str]]) -> str:
    parser = configparser.ConfigParser(interpolation=None)
    for name, options in sections.items():
        parser[name] = options
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w', encoding='utf-8') as f:
        parser.write(f)
    return path


def authtoken(keystone_url: str, user: str, password: str
              ) -> dict[str, str]:
    """``[keystone_authtoken]`` of a service user in project ``service``."""
    return {'www_authenticate_uri': keystone_url,
            'auth_url': keystone_url, 'auth_type': 'password',
            'project_domain_name': 'Default',
            'user_domain_name': 'Default', 'project_name': 'service',
            'username': user, 'password': password,
            'service_token_roles_required': 'true'}

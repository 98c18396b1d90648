"""The lab cloud's view of its callers: a token's roles, as Keystone's
token validation answers them (here a small HTTP server in Keystone's v3
shape; the lab tests run the real Keystone)."""
from __future__ import annotations

import datetime
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kubernetes_mgmt_lab.cloud.api import ApiError
from kubernetes_mgmt_lab.cloud.tokens import TokenRoles

LATER = datetime.datetime.now(datetime.timezone.utc) + \
    datetime.timedelta(hours=1)
EARLIER = datetime.datetime.now(datetime.timezone.utc) - \
    datetime.timedelta(seconds=1)
TOKENS = {'admin-token': (['admin', 'member', 'reader'], LATER),
          'member-token': (['member', 'reader'], LATER),
          'stale-token': (['admin'], EARLIER)}


class _Keystone(BaseHTTPRequestHandler):
    asked: list[str] = []

    def do_GET(self):
        subject = self.headers.get('X-Subject-Token', '')
        self.asked.append(subject)
        found = TOKENS.get(subject)
        if self.path != '/v3/auth/tokens' or found is None or \
                self.headers.get('X-Auth-Token') != subject:
            self.send_response(404)
            self.send_header('Content-Length', '0')
            self.end_headers()
            return
        roles, expires = found
        body = json.dumps({'token': {
            'roles': [{'id': r, 'name': r} for r in roles],
            'expires_at': expires.strftime('%Y-%m-%dT%H:%M:%S.000000Z')}})
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def keystone():
    _Keystone.asked = []
    server = ThreadingHTTPServer(('127.0.0.1', 0), _Keystone)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f'http://127.0.0.1:{server.server_port}/v3'
    server.shutdown()
    server.server_close()


def test_admin_and_member_roles(keystone):
    tokens = TokenRoles(keystone)
    assert tokens.is_admin('admin-token')
    assert not tokens.is_admin('member-token')
    assert tokens.roles('member-token') == {'member', 'reader'}


def test_a_token_is_asked_for_once_until_it_expires(keystone):
    tokens = TokenRoles(keystone)
    for _ in range(3):
        tokens.is_admin('admin-token')
        tokens.is_admin('stale-token')
    assert _Keystone.asked.count('admin-token') == 1
    assert _Keystone.asked.count('stale-token') == 3


def test_an_unknown_token_is_refused_as_unauthorized(keystone):
    with pytest.raises(ApiError) as info:
        TokenRoles(keystone).is_admin('forged')
    assert info.value.status == 401


def test_without_keystone_every_caller_is_an_admin():
    assert TokenRoles(None).is_admin('anything')

"""A small client of a real etcd's JSON gateway (``/v3/...``, which
etcd 3.4 serves on its client port): what the lab's own code needs from
the cluster's etcd (members, key values, health) without starting an
``etcdctl`` process for each call.

Client certificate and CA are the cluster's shared ones
(``<cluster dir>/pki``): every lab host and the test process can use
them, whatever VM they run in.
"""
from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
from urllib.parse import urlsplit

CLIENT_CERT = 'etcd-lab-client'      # <cluster dir>/pki/<this>.crt|.key
CONNECT_TIMEOUT = 1.0
REQUEST_TIMEOUT = 8.0


class EtcdError(Exception):
    """etcd answered with an error (``message`` is etcd's own text), or
    no endpoint answered (``unreachable``)."""

    def __init__(self, message: str, unreachable: bool = False):
        super().__init__(message)
        self.message = message
        self.unreachable = unreachable


def b64(text: str | bytes) -> str:
    raw = text.encode() if isinstance(text, str) else text
    return base64.b64encode(raw).decode()


def unb64(text: str) -> str:
    return base64.b64decode(text).decode()


def prefix_end(prefix: str) -> str:
    """etcd's range end for "every key starting with ``prefix``"."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def tls_context(cluster_dir: str) -> ssl.SSLContext:
    pki = os.path.join(cluster_dir, 'pki')
    ctx = ssl.create_default_context(cafile=os.path.join(pki, 'etcd',
                                                         'ca.crt'))
    ctx.load_cert_chain(os.path.join(pki, f'{CLIENT_CERT}.crt'),
                        os.path.join(pki, f'{CLIENT_CERT}.key'))
    return ctx


class Gateway:
    """Calls to the first of ``endpoints`` (client URLs) that accepts a
    connection; connections are kept for the next call."""

    def __init__(self, cluster_dir: str, endpoints: list[str],
                 timeout: float = REQUEST_TIMEOUT):
        self.endpoints = list(dict.fromkeys(endpoints))
        self.timeout = timeout
        self._ctx = tls_context(cluster_dir)
        self._conns: dict[str, http.client.HTTPSConnection] = {}

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()

    def _conn(self, url: str) -> http.client.HTTPSConnection:
        conn = self._conns.get(url)
        if conn is None:
            parts = urlsplit(url)
            conn = http.client.HTTPSConnection(
                parts.hostname, parts.port or 2379, context=self._ctx,
                timeout=CONNECT_TIMEOUT)
            conn.connect()
            conn.sock.settimeout(self.timeout)
            self._conns[url] = conn
        return conn

    def _request(self, url: str, method: str, path: str,
                 body: dict | None) -> tuple[int, bytes]:
        data = None if body is None else json.dumps(body).encode()
        kept = url in self._conns
        conn = self._conn(url)
        try:
            conn.request(method, path, body=data, headers={
                'Content-Type': 'application/json'})
            reply = conn.getresponse()
            return reply.status, reply.read()
        except TimeoutError:
            raise
        except (OSError, http.client.HTTPException):
            self._drop(url)
            if not kept:
                raise
        # A kept connection to a member that has been restarted since:
        # once more on a new one.
        return self._request(url, method, path, body)

    def _drop(self, url: str) -> None:
        conn = self._conns.pop(url, None)
        if conn is not None:
            conn.close()

    def call(self, path: str, body: dict | None = None,
             method: str = 'POST') -> dict:
        """POST ``body`` to ``path`` on the first endpoint that answers."""
        why = []
        for url in self.endpoints:
            try:
                status, raw = self._request(url, method, path, body)
            except TimeoutError:
                self._drop(url)
                # Connected, no answer: a member without quorum.
                raise EtcdError('etcdserver: request timed out') from None
            except (OSError, http.client.HTTPException) as exc:
                self._drop(url)
                why.append(f'{url}: {exc}')
                continue
            reply = json.loads(raw or b'{}')
            if status != 200:
                raise EtcdError(reply.get('message') or reply.get('error')
                                or f'HTTP {status}')
            return reply
        raise EtcdError('no etcd endpoint answered: ' + '; '.join(why),
                        unreachable=True)

    # -- cluster --------------------------------------------------------

    def members(self) -> list[dict]:
        """Members as ``etcdctl member list -w json`` shows them (ids as
        numbers)."""
        reply = self.call('/v3/cluster/member/list', {})
        return [{'id': int(m['ID']), 'name': m.get('name', ''),
                 'peerURLs': m.get('peerURLs', []),
                 'clientURLs': m.get('clientURLs', []),
                 'isLearner': bool(m.get('isLearner'))}
                for m in reply.get('members', [])]

    def member_add(self, peer_urls: list[str], learner: bool) -> int:
        reply = self.call('/v3/cluster/member/add', {
            'peerURLs': peer_urls, 'isLearner': learner})
        return int(reply['member']['ID'])

    def member_remove(self, member_id: int) -> None:
        self.call('/v3/cluster/member/remove', {'ID': str(member_id)})

    def member_promote(self, member_id: int) -> None:
        self.call('/v3/cluster/member/promote', {'ID': str(member_id)})

    def healthy(self) -> bool:
        """The first endpoint's ``/health``: it has a leader and serves."""
        try:
            reply = self.call('/health', method='GET')
        except EtcdError:
            return False
        return reply.get('health') == 'true'

    # -- keys -----------------------------------------------------------

    def get(self, key: str) -> str | None:
        reply = self.call('/v3/kv/range', {'key': b64(key)})
        kvs = reply.get('kvs') or []
        return unb64(kvs[0].get('value', '')) if kvs else None

    def prefix(self, prefix: str, keys_only: bool = False
               ) -> dict[str, str]:
        reply = self.call('/v3/kv/range', {
            'key': b64(prefix), 'range_end': b64(prefix_end(prefix)),
            'keys_only': keys_only})
        return {unb64(kv['key']): '' if keys_only else
                unb64(kv.get('value', '')) for kv in reply.get('kvs') or []}

    def txn(self, compare: list[dict], success: list[dict]) -> bool:
        reply = self.call('/v3/kv/txn', {'compare': compare,
                                         'success': success})
        return bool(reply.get('succeeded'))


def put_op(key: str, value: str) -> dict:
    return {'requestPut': {'key': b64(key), 'value': b64(value)}}


def delete_op(key: str) -> dict:
    return {'requestDeleteRange': {'key': b64(key)}}


def value_is(key: str, value: str | None) -> dict:
    """Compare: ``key`` holds ``value`` (None: ``key`` does not exist)."""
    if value is None:
        return {'key': b64(key), 'target': 'CREATE', 'result': 'EQUAL',
                'create_revision': '0'}
    return {'key': b64(key), 'target': 'VALUE', 'result': 'EQUAL',
            'value': b64(value)}

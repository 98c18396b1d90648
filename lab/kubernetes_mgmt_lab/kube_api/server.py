"""The HTTP side of the API: a threaded stdlib server over a
:class:`~kubernetes_mgmt_lab.kube_api.backend.Backend`."""
from __future__ import annotations

import json
import select
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from kubernetes_mgmt_lab.kube_api import (
    authorizer,
    catalog,
    controllers,
    exec_stream,
    handlers,
    openapi,
    paths,
    rbac,
    tables,
    watch,
)
from kubernetes_mgmt_lab.kube_api.backend import Backend, RequestRecord
from kubernetes_mgmt_lab.kube_api.status import ApiError, failure, not_found
from kubernetes_mgmt_lab.kube_api.store import key_of
from kubernetes_mgmt_lab.tls_server import TlsHTTPServer

_VERBS = {'POST': 'create', 'PUT': 'update', 'PATCH': 'patch',
          'DELETE': 'delete'}
# Open to anyone, as system:public-info-viewer makes them (and /version)
# in a cluster: load balancers' health checks carry no credentials.
_HEALTH = ('/healthz', '/livez', '/readyz')
_DISPATCH = {'GET': lambda store, req, timing: handlers.get(store, req),
             'POST': handlers.create, 'PUT': handlers.replace,
             'PATCH': handlers.patch_object, 'DELETE': handlers.delete}


def _discovery(path: str, address: str, version: str) -> dict | None:
    if path.startswith(openapi.ROOT):
        return openapi.serve(path)
    parts = [p for p in path.split('/') if p]
    if parts == ['version']:
        return catalog.version_info(version)
    if parts == ['api']:
        return catalog.core_versions(address)
    if parts == ['apis']:
        return catalog.group_list()
    if len(parts) == 2 and parts[0] == 'apis':
        return catalog.group(parts[1])
    split = paths.split_group_version(parts)
    if split and not split[1]:
        return catalog.resource_list(split[0])
    return None


def _verb(method: str, target: paths.Target, query: dict) -> str:
    if target.subresource == catalog.EXEC:
        return 'create'         # a WebSocket upgrade, authorized as create
    if method == 'GET':
        if target.name is None:
            return 'watch' if watch.wanted(query) else 'list'
        return 'get'
    if method == 'DELETE' and target.name is None:
        return 'deletecollection'
    return _VERBS[method]


@dataclass
class Traffic:
    """Requests being served; once ``draining``, each answer closes its
    connection, so clients come back through a new one (to another API
    server, behind a load balancer)."""

    in_flight: int = 0
    draining: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def begin(self) -> None:
        with self.lock:
            self.in_flight += 1

    def end(self) -> None:
        with self.lock:
            self.in_flight -= 1


class _Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    # Send headers and body in one segment, at once: otherwise delayed
    # ACKs add ~40 ms to every request.
    wbufsize = -1
    disable_nagle_algorithm = True
    backend: Backend             # set on the per-server subclass
    traffic: Traffic

    def log_message(self, format, *args):
        pass                     # tests read RequestRecord, not stderr

    def do_GET(self):
        self._handle('GET')

    def do_POST(self):
        self._handle('POST')

    def do_PUT(self):
        self._handle('PUT')

    def do_PATCH(self):
        self._handle('PATCH')

    def do_DELETE(self):
        self._handle('DELETE')

    def _read_body(self) -> object:
        length = int(self.headers.get('Content-Length') or 0)
        raw = self.rfile.read(length) if length else b''
        if not raw:
            return None
        content_type = (self.headers.get('Content-Type') or '').split(';')[0]
        if content_type.endswith('protobuf'):
            raise ApiError(415, f'the lab API reads JSON request bodies, '
                           f'not {content_type}')
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise ApiError(400, f'the request body is not JSON: {exc}'
                           ) from exc

    def _handle(self, method: str) -> None:
        self.traffic.begin()
        try:
            self._serve(method)
        finally:
            self.traffic.end()
            if self.traffic.draining:
                self.close_connection = True

    def _serve(self, method: str) -> None:
        url = urlsplit(self.path)
        if method == 'GET' and url.path in _HEALTH:
            self._record(method, url.path, {}, None, 200, None)
            self._send_text(200, 'ok')
            return
        if method == 'GET' and url.path == '/version':
            self._record(method, url.path, {}, None, 200, None)
            self._send(200, catalog.version_info(self.backend.version))
            return
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        identity = body = None
        try:
            body = self._read_body()
            identity = self._identify()
            if method == 'GET' and url.path == openapi.V2:
                self._record(method, url.path, query, identity, 200, None)
                self._send_bytes(200, openapi.V2_DOCUMENT,
                                 openapi.V2_CONTENT_TYPE)
                return
            target = self._authorize(method, url.path, query, identity)
            if isinstance(target, dict):        # a discovery document
                code, reply = 200, target
            elif method == 'GET' and target.subresource == catalog.EXEC:
                self._exec(target, parse_qs(url.query).get('command', []))
                self._record(method, url.path, query, identity, 101, None)
                return
            elif method == 'GET' and watch.wanted(query):
                self._record(method, url.path, query, identity, 200, None)
                self._stream(target, query)
                return
            else:
                code, reply = self._dispatch(method, target, query, body,
                                             identity)
                if method == 'GET' and code == 200:
                    reply = self._as_asked(target, query, reply)
        except ApiError as exc:
            code, reply = exc.code, exc.body
        except Exception as exc:  # a bug of the lab's API: say so, loudly
            code, reply = 500, failure(500, f'lab API failed: {exc!r}')
        self._record(method, url.path, query, identity, code, body)
        self._send(code, reply)

    def _identify(self) -> rbac.Identity:
        cert = getattr(self.connection, 'getpeercert', lambda: None)()
        if cert:                # verified against the CA by the TLS layer
            return rbac.from_certificate(cert)
        header = self.headers.get('Authorization') or ''
        scheme, _, token = header.partition(' ')
        identity = self.backend.authenticate(token.strip()) \
            if scheme.lower() == 'bearer' and token.strip() else None
        if identity is None:
            raise ApiError(401, 'Unauthorized')
        return identity

    def _authorize(self, method, path, query, identity
                   ) -> paths.Target | dict:
        """What the request addresses, once RBAC allows it (or the
        discovery document it asks for)."""
        if method == 'GET':
            host, port = self.server.server_address[:2]
            doc = _discovery(path, f'{host}:{port}', self.backend.version)
            if doc is not None:
                return doc
        target = paths.parse(path)
        attrs = rbac.Attributes(
            verb=_verb(method, target, query), group=target.api_kind.group,
            resource=target.rbac_resource, namespace=target.rbac_namespace,
            name=target.name)
        if not self._allowed(identity, attrs):
            raise ApiError(403, rbac.forbidden_message(identity, attrs),
                           details={'name': target.name,
                                    'group': target.api_kind.group,
                                    'kind': target.api_kind.plural})
        return target

    def _allowed(self, identity: rbac.Identity,
                 attrs: rbac.Attributes) -> bool:
        if rbac.allows(identity, attrs):
            return True
        with self.backend.transaction() as store:
            return authorizer.allows(store, identity, attrs)

    def _dispatch(self, method, target, query, body, identity):
        timing = self.backend.timing
        request = handlers.Request(
            target=target, identity=identity, query=query, body=body,
            content_type=(self.headers.get('Content-Type') or '').split(
                ';')[0].strip())
        with self.backend.transaction() as store:
            controllers.advance(store, timing)
            return _DISPATCH[method](store, request, timing)

    def _as_asked(self, target: paths.Target, query: dict,
                  reply: dict) -> dict:
        """The reply as a Table when the client asks for one (kubectl's
        human-readable get), else as it is."""
        version = tables.wanted(self.headers.get('Accept') or '')
        if version is None or target.subresource:
            return reply
        return tables.table(target.api_kind.kind, reply, version,
                            query.get('includeObject'))

    def _stream(self, target: paths.Target, query: dict) -> None:
        """A watch: one JSON event per chunk until it ends."""
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Transfer-Encoding', 'chunked')
        self.end_headers()
        stream = watch.events(self.backend, target, query,
                              self._client_waiting)
        version = tables.wanted(self.headers.get('Accept') or '')
        if version is not None:
            stream = tables.watch_events(stream, target.api_kind.kind,
                                         version, query.get('includeObject'))
        try:
            for event in stream:
                self._chunk(json.dumps(event).encode() + b'\n')
            self._chunk(b'')
        except OSError:
            pass                    # the client went away
        self.close_connection = True

    def _exec(self, target: paths.Target, argv: list[str]) -> None:
        """Run ``argv`` in the pod; its output and exit code go back
        over the upgraded connection."""
        with self.backend.transaction() as store:
            found = store.get(key_of(target.api_kind, target.namespace,
                                     target.name)) is not None
        if not found:
            raise not_found(target.api_kind, target.name)
        chosen = exec_stream.protocol(
            self.headers.get('Sec-WebSocket-Protocol') or '')
        key = self.headers.get('Sec-WebSocket-Key') or ''
        self.send_response(101)
        self.send_header('Upgrade', 'websocket')
        self.send_header('Connection', 'Upgrade')
        self.send_header('Sec-WebSocket-Accept', exec_stream.accept_key(key))
        self.send_header('Sec-WebSocket-Protocol', chosen)
        self.end_headers()
        result = self.backend.run_in_pod(target.namespace, target.name,
                                         argv)
        for message in exec_stream.messages(argv, result):
            self.wfile.write(message)
        self.wfile.flush()
        self.close_connection = True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f'{len(data):x}\r\n'.encode() + data + b'\r\n')
        self.wfile.flush()

    def _client_waiting(self) -> bool:
        # A watching client sends nothing more: anything readable on its
        # connection is its close.
        readable, _, _ = select.select([self.connection], [], [], 0)
        return not readable

    def _record(self, method, path, query, identity, code, body) -> None:
        self.backend.record(RequestRecord(
            method, path, query, identity.user if identity else None, code,
            body, self.headers.get('User-Agent') or ''))

    def _send(self, code: int, reply: dict) -> None:
        self._send_bytes(code, json.dumps(reply).encode(),
                         'application/json')

    def _send_text(self, code: int, text: str) -> None:
        self._send_bytes(code, text.encode(), 'text/plain; charset=utf-8')

    def _send_bytes(self, code: int, data: bytes, content_type: str) -> None:
        self.send_response(code)
        if self.traffic.draining:
            self.send_header('Connection', 'close')
        self.send_header('Content-Type', content_type)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve(backend: Backend, ssl_context=None,
          address: tuple[str, int] = ('127.0.0.1', 0)
          ) -> ThreadingHTTPServer:
    """Serve ``backend`` from a thread (``serve_forever`` runs there)."""
    server = make_server(backend, ssl_context, address)
    # A short poll interval makes shutdown() quick (tests start many).
    thread = threading.Thread(target=server.serve_forever,
                              kwargs={'poll_interval': 0.02},
                              name='kube-api', daemon=True)
    thread.start()
    return server


def make_server(backend: Backend, ssl_context=None,
                address: tuple[str, int] = ('127.0.0.1', 0)
                ) -> ThreadingHTTPServer:
    handler = type('Handler', (_Handler,), {'backend': backend,
                                            'traffic': Traffic()})
    if ssl_context is None:
        server = ThreadingHTTPServer(address, handler)
        server.daemon_threads = True
        return server
    return TlsHTTPServer(address, handler, ssl_context)

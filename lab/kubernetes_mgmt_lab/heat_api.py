"""HTTP front of the lab's Heat API double.

python-heatclient talks to it unchanged::

    heatclient.client.Client('1', endpoint=state.heat_url,
                             token=state.heat_token)

Run it with ``python -m kubernetes_mgmt_lab.heat_api --state PATH
--listen IP:PORT``; tests start it in a thread with :func:`start`.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from kubernetes_mgmt import redact
from kubernetes_mgmt_lab.heat import render
from kubernetes_mgmt_lab.heat.service import (
    HeatDouble,
    LabFactory,
    Request,
    Response,
    default_lab,
)
from kubernetes_mgmt_lab.net import listen_address, serve_until_stopped

LOG = redact.get_logger(__name__)


@dataclass(frozen=True)
class Served:
    """One request as the server saw it (tests count these)."""

    method: str
    path: str
    status: int


class HeatApiServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], double: HeatDouble):
        super().__init__(address, _Handler)
        self.double = double
        self.served: list[Served] = []

    @property
    def port(self) -> int:
        return self.server_address[1]

    def endpoint(self, tenant_id: str) -> str:
        host = self.server_address[0]
        return f'http://{host}:{self.port}/v1/{tenant_id}'


class _Handler(BaseHTTPRequestHandler):
    server: HeatApiServer
    protocol_version = 'HTTP/1.1'

    def do_GET(self) -> None:
        self._serve()

    do_PATCH = do_PUT = do_POST = do_DELETE = do_GET

    def _serve(self) -> None:
        started = time.monotonic()
        url = urlsplit(self.path)
        try:
            response = self.server.double.handle(self._request(url))
        except _BadBody as e:
            response = Response(400, render.error(
                400, 'Bad Request', str(e), 'HTTPBadRequest'))
        except Exception as e:  # report it to the client, keep serving
            LOG.exception('%s %s failed', self.command, url.path)
            response = Response(500, render.error(
                500, 'Internal Server Error', str(e), 'LabError'))
        # Counted before the client has its answer: a test reading the
        # count right after a call sees that call.
        self.server.served.append(
            Served(self.command, url.path, response.status))
        self._send(response)
        LOG.info('%s %s%s -> %d (%.0f ms)', self.command, url.path,
                 f'?{url.query}' if url.query else '', response.status,
                 (time.monotonic() - started) * 1000)

    def _request(self, url) -> Request:
        ip, port = self.server.server_address[:2]
        return Request(
            method=self.command, path=unquote(url.path),
            query=parse_qs(url.query),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=self._body(),
            host=self.headers.get('Host') or f'{ip}:{port}')

    def _body(self) -> object:
        length = int(self.headers.get('Content-Length') or 0)
        raw = self.rfile.read(length) if length else b''
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except ValueError as e:
            raise _BadBody(f'the request body is not JSON: {e}') from e

    def _send(self, response: Response) -> None:
        data = b''
        self.send_response(response.status)
        if response.body is not None:
            data = json.dumps(response.body).encode()
            self.send_header('Content-Type', 'application/json')
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        if data and self.command != 'HEAD':
            self.wfile.write(data)

    def log_message(self, format: str, *args) -> None:
        pass  # _serve logs one line per request, without headers


class _BadBody(ValueError):
    pass


def start(state_path: str, listen: tuple[str, int] = ('127.0.0.1', 0),
          lab_factory: LabFactory = default_lab) -> HeatApiServer:
    """Serve in a daemon thread; stop with ``shutdown()``."""
    server = HeatApiServer(listen, HeatDouble(state_path, lab_factory))
    # A short poll interval keeps shutdown() quick for tests.
    thread = threading.Thread(target=server.serve_forever, args=(0.05,),
                              name='heat-double', daemon=True)
    thread.start()
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog='python -m kubernetes_mgmt_lab.heat_api',
        description='Heat API double serving the lab stack.')
    parser.add_argument('--state', required=True, help='lab state file')
    parser.add_argument('--listen', required=True, type=listen_address,
                        help='IP:PORT to listen on')
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format='%(asctime)s %(name)s %(message)s')
    server = HeatApiServer(args.listen, HeatDouble(args.state))
    LOG.info('Heat double for %s listening on %s:%d', args.state,
             *server.server_address[:2])
    return serve_until_stopped(server)


if __name__ == '__main__':
    sys.exit(main())

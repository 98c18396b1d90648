"""One HTTP server for the three emulated services, each under its own
path prefix (``/compute``, ``/network``, ``/volume``) as devstack lays
them out; errors in each service's own body format.

Run it with ``python -m kubernetes_mgmt_lab.cloud.server --records FILE
--lab ROOT [--lab ROOT2] [--labs-dir DIR] [--keystone URL] --listen
IP:PORT --project-id ID``; tests start it in a thread with :func:`start`.
With a Keystone, tokens are validated there and only an admin's show
servers' compute hosts, as Nova's default policy has it.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from kubernetes_mgmt import redact
from kubernetes_mgmt_lab import state as lab_state
from kubernetes_mgmt_lab.cloud.api import ApiError, Call, Reply, dispatch
from kubernetes_mgmt_lab.cloud.bridges import Bridges
from kubernetes_mgmt_lab.cloud.compute import Compute
from kubernetes_mgmt_lab.cloud.network import NETWORK_NAMES, Network
from kubernetes_mgmt_lab.cloud.records import Records
from kubernetes_mgmt_lab.cloud.tokens import TokenRoles
from kubernetes_mgmt_lab.cloud.volume import Volume
from kubernetes_mgmt_lab.net import listen_address, serve_until_stopped

LOG = redact.get_logger(__name__)
SERVICES = ('compute', 'network', 'volume')


class Cloud:
    """The three services over one set of records; network i is lab i's
    bridge, and its servers are that lab's VMs. A subnet created through
    the API gets a lab of its own below ``labs_dir``."""

    def __init__(self, records_file: str, lab_roots: list[str],
                 project_id: str, labs_dir: str | None = None,
                 keystone_url: str | None = None):
        self.records = Records(records_file)
        self.tokens = TokenRoles(keystone_url)
        bridges = Bridges(self.records, labs_dir, lab_roots[0])
        self.network = Network(self.records, project_id, bridges)
        for name, lab_root in zip(NETWORK_NAMES, lab_roots, strict=False):
            state = lab_state.load(lab_state.state_path(lab_root))
            self.network.ensure_lab_network(name, lab_root, state.subnet)
        self.compute = Compute(self.records, self.network, bridges.machines,
                               bridges.compute_hosts, project_id)
        self.volume = Volume(self.records, project_id)
        self.routes = {'compute': self.compute.routes(),
                       'network': self.network.routes(),
                       'volume': self.volume.routes()}


class CloudServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], cloud: Cloud):
        super().__init__(address, _Handler)
        self.cloud = cloud

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f'http://{host}:{port}'


def error_body(service: str, error: ApiError) -> dict:
    if service == 'network':
        return {'NeutronError': {'type': error.kind,
                                 'message': error.message, 'detail': ''}}
    return {error.kind: {'code': error.status, 'message': error.message}}


class _Handler(BaseHTTPRequestHandler):
    server: CloudServer
    protocol_version = 'HTTP/1.1'
    # A reply leaves as one buffered write, sent at once: written as
    # headers then body, Nagle's algorithm held the body back until the
    # client's delayed ACK, ~40 ms a request on keep-alive connections.
    wbufsize = -1
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        self._serve()

    do_PUT = do_POST = do_DELETE = do_HEAD = do_GET

    def _serve(self) -> None:
        started = time.monotonic()
        url = urlsplit(self.path)
        path = unquote(url.path)
        service, _, rest = path.lstrip('/').partition('/')
        try:
            reply = self._handle(service, '/' + rest if rest else '', url)
        except ApiError as exc:
            reply = Reply(exc.status, error_body(service, exc))
            level = logging.WARNING if exc.status in (404, 405) and \
                'does not serve' in exc.message else logging.INFO
            LOG.log(level, '%s %s: %s', self.command, path, exc.message)
        except Exception as exc:    # report it, keep serving
            LOG.exception('%s %s failed', self.command, path)
            reply = Reply(500, error_body(service, ApiError(
                500, 'computeFault', str(exc))))
        self._send(reply)
        LOG.info('%s %s%s -> %d (%.0f ms)', self.command, path,
                 f'?{url.query}' if url.query else '', reply.status,
                 (time.monotonic() - started) * 1000)

    def _handle(self, service: str, rest: str, url) -> Reply:
        if service not in SERVICES:
            raise ApiError(404, 'itemNotFound',
                           f'the lab does not serve /{service}')
        token = self.headers.get('X-Auth-Token', '')
        # Version documents are public; everything else needs a token.
        public = rest.strip('/').count('/') == 0
        if not token and not public:
            raise ApiError(401, 'unauthorized',
                           'The request you have made requires '
                           'authentication.')
        call = Call(method=self.command, path=rest.rstrip('/'),
                    query=parse_qs(url.query), body=self._body(),
                    token=token, base_url=self.server.url,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    admin=public or self.server.cloud.tokens.is_admin(token))
        return dispatch(self.server.cloud.routes[service], call)

    def _body(self) -> object:
        length = int(self.headers.get('Content-Length') or 0)
        raw = self.rfile.read(length) if length else b''
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise ApiError(400, 'badRequest',
                           f'the request body is not JSON: {exc}') from exc

    def _send(self, reply: Reply) -> None:
        data = b'' if reply.body is None else json.dumps(reply.body).encode()
        self.send_response(reply.status)
        if reply.body is not None:
            self.send_header('Content-Type', 'application/json')
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        if data and self.command != 'HEAD':
            self.wfile.write(data)

    def log_message(self, format: str, *args) -> None:
        pass    # _serve logs one line per request, without headers


def start(records_file: str, lab_roots: list[str], project_id: str,
          listen: tuple[str, int] = ('127.0.0.1', 0),
          labs_dir: str | None = None,
          keystone_url: str | None = None) -> CloudServer:
    """Serve in a daemon thread; stop with ``shutdown()``."""
    server = CloudServer(listen, Cloud(records_file, lab_roots, project_id,
                                       labs_dir, keystone_url))
    threading.Thread(target=server.serve_forever, args=(0.05,),
                     name='lab-cloud', daemon=True).start()
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog='python -m kubernetes_mgmt_lab.cloud.server',
        description="The lab's compute, network and block-storage APIs.")
    parser.add_argument('--records', required=True,
                        help='the JSON file of the resources')
    parser.add_argument('--lab', action='append', required=True,
                        dest='labs', metavar='ROOT',
                        help='a lab root: its bridge is a network, its '
                             'VMs are servers (repeat for more networks)')
    parser.add_argument('--labs-dir', metavar='DIR',
                        help='where the labs of subnets created through '
                             'the API go (without it, none can be)')
    parser.add_argument('--keystone', metavar='URL',
                        help='Keystone that validates tokens (without it, '
                             'every caller is an admin)')
    parser.add_argument('--listen', required=True, type=listen_address,
                        help='IP:PORT to listen on')
    parser.add_argument('--project-id', required=True,
                        help='the project that owns what is created')
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format='%(asctime)s %(name)s %(message)s')
    server = CloudServer(args.listen, Cloud(args.records, args.labs,
                                            args.project_id, args.labs_dir,
                                            args.keystone))
    LOG.info('lab cloud for %s listening on %s', ', '.join(args.labs),
             server.url)
    return serve_until_stopped(server)


if __name__ == '__main__':
    sys.exit(main())

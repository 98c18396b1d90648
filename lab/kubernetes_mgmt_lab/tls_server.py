"""An HTTPS server for the lab's API stand-ins.

Wrapping the listening socket with TLS makes ``accept()`` run each
handshake in the one thread that accepts: a client that connects and
then stalls (a health check cut short on a busy machine) blocks every
later client, and HAProxy marks the API server down for good. Here each
connection's handshake runs in that connection's own thread, bounded.
"""
from __future__ import annotations

import ssl
from http.server import ThreadingHTTPServer

HANDSHAKE_TIMEOUT = 10.0


class TlsHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, handler, context: ssl.SSLContext):
        super().__init__(address, handler)
        self.context = context

    def finish_request(self, request, client_address) -> None:
        request.settimeout(HANDSHAKE_TIMEOUT)
        try:
            tls = self.context.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError):
            return      # the caller closes the plain socket
        tls.settimeout(None)
        try:
            super().finish_request(tls, client_address)
        finally:
            self.shutdown_request(tls)

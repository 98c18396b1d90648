"""A throwaway CA-signed serving certificate for 127.0.0.1, so clients
can be tested with ``ssl_ca_cert`` exactly as against a real cluster;
the same CA signs client certificates (``kubectl`` with an admin.conf)."""
from __future__ import annotations

import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kubernetes_mgmt_lab import pki


@dataclass(frozen=True)
class ServingCert:
    ca_pem: str
    cert_pem: bytes
    key_pem: bytes
    ca_key_pem: bytes

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        # A client certificate of the CA authenticates its subject (as
        # kube-apiserver's --client-ca-file); without one, a token must.
        context.verify_mode = ssl.CERT_OPTIONAL
        context.load_verify_locations(cadata=self.ca_pem)
        # load_cert_chain reads files only; they live for a moment in a
        # private directory.
        with tempfile.TemporaryDirectory() as tmp:
            cert, key = Path(tmp, 'tls.crt'), Path(tmp, 'tls.key')
            cert.write_bytes(self.cert_pem)
            key.write_bytes(self.key_pem)
            key.chmod(0o600)
            context.load_cert_chain(cert, key)
        return context

    def client(self, user: str, group: str | None = None
               ) -> tuple[bytes, bytes]:
        """A client certificate and key (PEM) for ``user`` in ``group``
        (the subject's CN and O, as Kubernetes reads them)."""
        return pki.issue(self.ca_pem.encode(), self.ca_key_pem, user,
                         org=group)


def issue(host: str = '127.0.0.1') -> ServingCert:
    ca, ca_key = pki.make_ca('kube-api-double-ca')
    cert, key = pki.issue(ca, ca_key, 'kube-apiserver', ips=(host,))
    return ServingCert(ca_pem=ca.decode(), cert_pem=cert, key_pem=key,
                       ca_key_pem=ca_key)

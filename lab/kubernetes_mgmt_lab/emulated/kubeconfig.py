"""Kubeconfig files: written by kubeadm, found and read by kubectl."""
from __future__ import annotations

import base64
import os
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

from kubernetes_mgmt_lab.emulated import yamlio
from kubernetes_mgmt_lab.emulated.host import host_path

ADMIN_CONF = '/etc/kubernetes/admin.conf'
KUBELET_CONF = '/etc/kubernetes/kubelet.conf'


def b64(data: bytes | str) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.b64encode(raw).decode()


def render(server: str, ca_pem: bytes, user: str,
           cert_pem: bytes | None = None, key_pem: bytes | None = None,
           token: str | None = None, cluster: str = 'kubernetes') -> str:
    creds: dict = {}
    if token:
        creds['token'] = token
    if cert_pem and key_pem:
        creds['client-certificate-data'] = b64(cert_pem)
        creds['client-key-data'] = b64(key_pem)
    context = f'{user}@{cluster}'
    doc = {
        'apiVersion': 'v1', 'kind': 'Config', 'preferences': {},
        'clusters': [{'name': cluster, 'cluster': {
            'server': server, 'certificate-authority-data': b64(ca_pem)}}],
        'contexts': [{'name': context, 'context': {
            'cluster': cluster, 'user': user}}],
        'current-context': context,
        'users': [{'name': user, 'user': creds}],
    }
    return yamlio.dump(doc, sort_keys=False)


@dataclass
class Kubeconfig:
    path: str
    doc: dict

    def _current(self) -> dict:
        name = self.doc.get('current-context')
        for ctx in self.doc.get('contexts') or []:
            if ctx.get('name') == name:
                return ctx.get('context') or {}
        return {}

    def _named(self, section: str, name: str | None) -> dict:
        for item in self.doc.get(section) or []:
            if item.get('name') == name:
                return item.get(section[:-1]) or {}
        return {}

    @property
    def cluster(self) -> dict:
        return self._named('clusters', self._current().get('cluster'))

    @property
    def user(self) -> dict:
        return self._named('users', self._current().get('user'))

    @property
    def namespace(self) -> str | None:
        return self._current().get('namespace')

    @property
    def server(self) -> str:
        return self.cluster.get('server') or 'http://localhost:8080'

    @property
    def ca_pem(self) -> bytes | None:
        data = self.cluster.get('certificate-authority-data')
        if data:
            return base64.b64decode(data)
        path = self.cluster.get('certificate-authority')
        if path:
            with open(host_path(path), 'rb') as f:
                return f.read()
        return None

    def host_port(self) -> tuple[str, int]:
        parts = urlsplit(self.server)
        default = 443 if parts.scheme == 'https' else 80
        return parts.hostname or 'localhost', parts.port or default


def load(path: str) -> Kubeconfig:
    with open(host_path(path), encoding='utf-8') as f:
        return Kubeconfig(path, yamlio.load(f) or {})


def candidates(explicit: str | None) -> list[str]:
    """kubectl's order: --kubeconfig, $KUBECONFIG, ~/.kube/config."""
    if explicit:
        return [explicit]
    env = os.environ.get('KUBECONFIG')
    if env:
        return [p for p in env.split(':') if p]
    home = os.environ.get('HOME') or os.path.expanduser('~')
    return [os.path.join(home, '.kube', 'config')]


def reachable(host: str, port: int, timeout: float = 3.0,
              tls: bool = False) -> str | None:
    """None when a TCP connection opens (and, with ``tls``, a TLS
    handshake completes: a load balancer with no healthy backend accepts
    and then drops the connection); else why not ('refused', ...)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            if tls:
                # Only: is it served? No CA to load (the system's bundle
                # alone costs a join ~60 ms of CPU).
                ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
                with ctx.wrap_socket(s):
                    pass
            return None
    except ConnectionRefusedError:
        return 'refused'
    except TimeoutError:
        return 'timeout'
    except (ssl.SSLError, ConnectionResetError, EOFError):
        return 'EOF'
    except OSError as e:
        return e.strerror or str(e)

"""Does a Kubernetes API answer? Checked as Tacker's create_vim checks
it: ``GET <auth_url>/api`` with the bearer token, TLS verified against
the cluster CA. ``/api`` (unlike ``/version``) needs authentication, so
a wrong token fails here and not later in Tacker.

Retried with backoff until a deadline while the API is unreachable or
answers 5xx (an apiserver or load balancer still starting); a rejected
token or a certificate that does not verify fails at once.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator

from kubernetes_mgmt import redact
from kubernetes_mgmt.remote.retry import Backoff
from kubernetes_mgmt.vim.registration import VimError

API_PATH = '/api'
DEFAULT_DEADLINE = 30.0
REQUEST_TIMEOUT = 5.0


class _Retry(Exception):
    """This attempt failed in a way that may pass."""


@contextlib.contextmanager
def _ca_file(ca_pem: str) -> Iterator[str]:
    # requests verifies against a file, not a PEM string.
    fd, path = tempfile.mkstemp(prefix='kmgmt-ca-', suffix='.pem')
    try:
        with os.fdopen(fd, 'w', encoding='utf-8') as f:
            f.write(ca_pem)
        yield path
    finally:
        os.unlink(path)


def _attempt(session, url: str, token: str, ca_path: str,
             timeout: float) -> None:
    import requests

    try:
        answer = session.get(url, timeout=timeout, verify=ca_path,
                             headers={'Authorization': f'Bearer {token}',
                                      'Accept': 'application/json'})
    except requests.exceptions.SSLError as exc:
        if 'CERTIFICATE_VERIFY_FAILED' in str(exc):
            raise VimError(f'the certificate of {url} does not verify '
                           f'against the cluster CA: {exc}') from None
        raise _Retry(str(exc)) from None
    except requests.exceptions.RequestException as exc:
        raise _Retry(str(exc)) from None
    if answer.status_code in (401, 403):
        raise VimError(f'{url} refused the given token (HTTP '
                       f'{answer.status_code})')
    if answer.status_code >= 500:
        raise _Retry(f'HTTP {answer.status_code}')
    if answer.status_code != 200:
        raise VimError(f'{url} answered HTTP {answer.status_code}; is '
                       'this a Kubernetes API?')


def check_api(auth_url: str, token: str, ca_pem: str, *,
              deadline: float = DEFAULT_DEADLINE,
              timeout: float = REQUEST_TIMEOUT) -> None:
    """Return once the API answers; raise VimError otherwise."""
    import requests

    if not ca_pem.strip():
        raise VimError(f'no CA certificate given for {auth_url}')
    url = auth_url.rstrip('/') + API_PATH
    backoff = Backoff(deadline, first=0.1, ceiling=2.0)
    with _ca_file(ca_pem) as ca_path, requests.Session() as session:
        # Like Tacker's kubernetes client: no proxy from the environment.
        session.trust_env = False
        while True:
            try:
                _attempt(session, url, token, ca_path,
                         min(timeout, max(backoff.remaining, 0.1)))
                return
            except VimError as exc:
                raise VimError(redact.redact(exc)) from None
            except _Retry as exc:
                last = redact.redact(exc)
            if not backoff.wait():
                raise VimError(f'the Kubernetes API at {auth_url} did not '
                               f'answer within {deadline:g} s: {last}')

"""A client of a cluster reading through its VIP while the tests break
and heal its masters: one GET every 0.2 s with the cluster's admin token,
retrying a failed connection three times as the kubernetes client does.
Each read's outcome is kept: an HTTP status, or the error's name."""
from __future__ import annotations

import base64
import threading
from dataclasses import dataclass, field

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

INTERVAL = 0.2      # seconds between reads
TIMEOUT = 5.0       # per attempt


@dataclass
class VipReader:
    url: str
    token: str
    ca_file: str
    reads: list[int | str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> VipReader:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    @property
    def failed(self) -> list[tuple[int, int | str]]:
        """(index, outcome) of every read that did not answer 200."""
        return [(i, r) for i, r in enumerate(self.reads) if r != 200]

    def _run(self) -> None:
        with requests.Session() as http:
            http.mount('https://', HTTPAdapter(max_retries=Retry(3)))
            http.headers['Authorization'] = f'Bearer {self.token}'
            while not self._stop.is_set():
                try:
                    answer = http.get(self.url, verify=self.ca_file,
                                      timeout=TIMEOUT)
                    self.reads.append(answer.status_code)
                except requests.RequestException as exc:
                    self.reads.append(f'{type(exc).__name__}: {exc}')
                self._stop.wait(INTERVAL)


def from_admin_secret(url: str, secret: dict, ca_file: str) -> VipReader:
    """A reader (not started) of ``url`` with the token and CA of the
    driver's admin Secret (``kubectl get secret -o json``); the CA is
    written to ``ca_file``."""
    with open(ca_file, 'wb') as f:
        f.write(base64.b64decode(secret['data']['ca.crt']))
    token = base64.b64decode(secret['data']['token']).decode()
    return VipReader(url, token, ca_file)

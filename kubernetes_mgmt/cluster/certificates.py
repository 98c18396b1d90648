"""The control plane's certificates on a master: their expiry as kubeadm
reports it, and their renewal.

``kubeadm certs check-expiration -o json`` prints a
``CertificateExpirationInfo`` (API group ``output.kubeadm.k8s.io``): the
certificates kubeadm manages (the kubeconfig files' client certificates
among them) and the certificate authorities, each with its expiry, the
residual time kubeadm computed on the master's clock, whether it is
managed outside kubeadm and whether it is missing. Decisions use the
residual time: it is the master's clock that a certificate's validity
is checked against.

Renewal is what kubeadm's certificate management guide describes:
``kubeadm certs renew all``, then the control-plane static pods are
restarted so that they load the new certificates (``static_pods``).
``renew all`` renews admin.conf too, the kubeconfig the driver runs
kubectl with: same cluster CA, new client certificate. The CAs, the
ServiceAccount signing key and so the VIM's token are left alone.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster import static_pods
from kubernetes_mgmt.errors import RemoteError
from kubernetes_mgmt.remote.ssh import SshSession

LOG = redact.get_logger(__name__)
KIND = 'CertificateExpirationInfo'
API_GROUP = 'output.kubeadm.k8s.io/'
DAY = 86400
CHECK_STEP = 'kubeadm certs check-expiration'
RENEW_STEP = 'kubeadm certs renew all'
RENEW_TIMEOUT = 300


@dataclass(frozen=True)
class Certificate:
    """One line of check-expiration: a certificate or a CA."""

    name: str
    expires: datetime | None        # UTC; None when missing
    residual_seconds: int           # negative once expired
    externally_managed: bool
    authority: str                  # the CA that signed it; '' for a CA
    missing: bool

    @property
    def renewable(self) -> bool:
        """What ``kubeadm certs renew all`` renews: present and managed
        by kubeadm."""
        return not self.missing and not self.externally_managed

    @property
    def days_left(self) -> float:
        return self.residual_seconds / DAY


@dataclass(frozen=True)
class Expiration:
    """kubeadm's CertificateExpirationInfo, typed."""

    certificates: tuple[Certificate, ...]
    authorities: tuple[Certificate, ...]

    def renewable(self) -> list[Certificate]:
        return [c for c in self.certificates if c.renewable]

    def earliest(self) -> Certificate | None:
        """The renewable certificate that expires first."""
        return min(self.renewable(), key=lambda c: c.residual_seconds,
                   default=None)

    def due(self, renew_days: int) -> list[Certificate]:
        """Renewable certificates with fewer than ``renew_days`` left."""
        return [c for c in self.renewable()
                if c.residual_seconds < renew_days * DAY]


@dataclass(frozen=True)
class MasterCertificates:
    """What one master reported."""

    node: str
    expiration: Expiration


@dataclass(frozen=True)
class Due:
    node: str
    certificate: Certificate

    def __str__(self) -> str:
        return (f'{self.node} {self.certificate.name} '
                f'({self.certificate.days_left:.1f} days left)')


class ExpirationUnreadable(RemoteError):
    """check-expiration printed something that is not its JSON."""


def parse_expiration(text: str, host: str = '?') -> Expiration:
    """``kubeadm certs check-expiration -o json`` output -> Expiration.
    Raises ExpirationUnreadable naming the host and what is wrong."""
    def bad(detail: str) -> ExpirationUnreadable:
        return ExpirationUnreadable(host, CHECK_STEP, detail)

    start = text.find('{')
    try:
        data = json.loads(text[start:]) if start >= 0 else None
    except ValueError as exc:
        raise bad(f'output is not JSON: {exc}') from None
    if not isinstance(data, dict):
        raise bad(f'output is not a JSON object: {text.strip()[:200]!r}')
    kind, api = data.get('kind'), data.get('apiVersion')
    if kind not in (None, KIND) or (api and not str(api).startswith(
            API_GROUP)):
        raise bad(f'output is a {kind} of {api}, not a {KIND} of '
                  f'{API_GROUP}*')
    return Expiration(
        certificates=_entries(data, 'certificates', bad),
        authorities=_entries(data, 'certificateAuthorities', bad))


def _entries(data: dict, key: str, bad) -> tuple[Certificate, ...]:
    raw = data.get(key) or []
    if not isinstance(raw, list):
        raise bad(f'{key} is not a list')
    return tuple(_certificate(entry, f'{key}[{index}]', bad)
                 for index, entry in enumerate(raw))


def _certificate(entry: object, where: str, bad) -> Certificate:
    if not isinstance(entry, dict) or not isinstance(entry.get('name'),
                                                      str):
        raise bad(f'{where} has no name')
    missing = bool(entry.get('missing'))
    residual = entry.get('residualTime', 0)
    if type(residual) is not int:
        raise bad(f'{where} ({entry["name"]}): residualTime {residual!r} '
                  'is not a number of seconds')
    expires = None
    if not missing:
        try:
            expires = parse_time(entry.get('expirationDate'))
        except ValueError as exc:
            raise bad(f'{where} ({entry["name"]}): {exc}') from None
    return Certificate(
        name=entry['name'], expires=expires, residual_seconds=residual,
        externally_managed=bool(entry.get('externallyManaged')),
        authority=str(entry.get('caName') or ''), missing=missing)


def parse_time(value: object) -> datetime:
    """RFC 3339 (``2027-11-27T10:00:00Z``) -> an aware UTC datetime."""
    if not isinstance(value, str) or not value:
        raise ValueError(f'expirationDate {value!r} is not a time')
    text = value[:-1] + '+00:00' if value.endswith(('Z', 'z')) else value
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f'expirationDate {value!r} is not an RFC 3339 '
                         'time') from None
    if moment.tzinfo is None:
        raise ValueError(f'expirationDate {value!r} has no time zone')
    return moment.astimezone(timezone.utc)


def iso_utc(moment: datetime) -> str:
    """The form the instance's metadata shows: ``2027-11-27T10:00:00Z``."""
    return moment.astimezone(timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


# -- on a master --------------------------------------------------------

def read_expiration(session: SshSession) -> Expiration:
    out = session.run(['kubeadm', 'certs', 'check-expiration', '-o',
                       'json'], step=CHECK_STEP, sudo=True)
    return parse_expiration(out.stdout, session.endpoint.name)


def renew(session: SshSession, node: str, ip: str, *,
          deadline: float) -> Expiration:
    """Renew every certificate kubeadm manages on master ``node``,
    restart its control-plane pods on them, wait until its API server
    serves again on ``ip``; return the expiry it now reports."""
    session.run(['kubeadm', 'certs', 'renew', 'all'], step=RENEW_STEP,
                sudo=True, timeout=RENEW_TIMEOUT)
    static_pods.restart(session, ip, deadline=deadline)
    renewed = read_expiration(session)
    earliest = renewed.earliest()
    LOG.info('[%s] certificates renewed; the first now expires %s',
             node, iso_utc(earliest.expires) if earliest and earliest.expires
             else '(none reported)')
    return renewed


# -- across the masters ---------------------------------------------------

def due(found: Sequence[MasterCertificates], renew_days: int) -> list[Due]:
    """Every renewable certificate, on any master, with fewer than
    ``renew_days`` days left (exactly ``renew_days`` is not due)."""
    return [Due(m.node, c) for m in found
            for c in m.expiration.due(renew_days)]


def earliest_expiry(found: Sequence[MasterCertificates]
                    ) -> datetime | None:
    """When the first renewable certificate of any master expires."""
    dates = [c.expires for m in found for c in m.expiration.renewable()
             if c.expires is not None]
    return min(dates, default=None)


def authorities_due(found: Sequence[MasterCertificates],
                    renew_days: int) -> list[Due]:
    """CAs close to their end: ``renew all`` does not renew them."""
    return [Due(m.node, c) for m in found for c in m.expiration.authorities
            if not c.missing and c.residual_seconds < renew_days * DAY]

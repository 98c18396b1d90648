"""The alerts behind an automatic heal, for the driver's log.

Tacker 16 turns Alertmanager's webhook into a heal request naming VNFCs
and passes the driver nothing else, so an operator reading a heal in the
conductor's log could not tell what set it off. With
``[kubernetes_mgmt] alertmanager_url`` set, the heal asks Alertmanager
(API v2) which auto-heal alerts fire for the VNFCs it names. Reading is
all it does: a failure is logged and never stops the heal.
"""
from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from kubernetes_mgmt.monitoring import rules

TIMEOUT = 5.0       # seconds: a log line must not hold a heal up
AUTO_HEAL = rules.TACKER_LABELS['function_type']


@dataclass(frozen=True)
class Alert:
    name: str
    vnf_instance_id: str
    vnfc_info_id: str
    since: str          # Alertmanager's startsAt (RFC 3339)
    summary: str

    def describe(self) -> str:
        return f'{self.name} on {self.vnfc_info_id} since {self.since}' + (
            f' ({self.summary})' if self.summary else '')


class AlertsUnreadable(Exception):
    """Alertmanager did not answer, or not with a list of alerts."""


def firing(url: str, vnf_instance_id: str, vnfc_ids: Iterable[str],
           timeout: float = TIMEOUT) -> list[Alert]:
    """The active auto-heal alerts naming one of ``vnfc_ids`` of the
    instance. Labels are matched here, not in Alertmanager's filter
    syntax, so no id is ever written into a query."""
    wanted = set(vnfc_ids)
    return [a for a in _auto_heal_alerts(url, timeout)
            if a.vnfc_info_id in wanted
            and a.vnf_instance_id == vnf_instance_id]


def _auto_heal_alerts(url: str, timeout: float) -> list[Alert]:
    query = (f'{url.rstrip("/")}/api/v2/alerts?active=true&silenced=false'
             '&inhibited=false')
    try:
        # http or https only: the option is a URIOpt limited to them.
        with urllib.request.urlopen(query, timeout=timeout) as reply:  # noqa: S310
            data = json.load(reply)
    except (OSError, ValueError) as exc:
        raise AlertsUnreadable(f'{_shown(url)}: {exc}') from None
    if not isinstance(data, list):
        raise AlertsUnreadable(f'{_shown(url)}: not a list of alerts')
    return [_alert(entry) for entry in data if isinstance(entry, dict)
            and (entry.get('labels') or {}).get('function_type')
            == AUTO_HEAL]


def _shown(url: str) -> str:
    """The URL without credentials it may carry (user:password@)."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition('@')[2]
    return urlunsplit(parts._replace(netloc=host))


def _alert(entry: dict) -> Alert:
    labels = entry.get('labels') or {}
    return Alert(name=str(labels.get('alertname', '?')),
                 vnf_instance_id=str(labels.get('vnf_instance_id', '')),
                 vnfc_info_id=str(labels.get('vnfc_info_id', '')),
                 since=str(entry.get('startsAt', '?')),
                 summary=str((entry.get('annotations') or {}).get(
                     'summary', '')))

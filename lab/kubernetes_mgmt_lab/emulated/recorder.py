"""Shared by the stand-ins that must never reach the machine's kernel
(every lab host shares it): they only record what was asked."""
from __future__ import annotations

from kubernetes_mgmt_lab.emulated import hoststate


def remember(db: str, key: str, value) -> None:
    with hoststate.mutate(db) as data:
        data[key] = value


def recall(db: str) -> dict:
    return hoststate.read(db)

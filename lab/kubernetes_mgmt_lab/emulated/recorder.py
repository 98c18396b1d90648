"""What the emulated hosts did, recorded.

``remember``/``recall``: what the stand-ins that must never reach the
machine's kernel (every lab host shares it) were asked, kept per host.

``note``: the cluster's change log (``changes.jsonl`` in the cluster
directory): every change an upgrade is made of (a package installed at a
version, a kubelet (re)started at a version, kubeadm upgrade started,
ended, rolled back, a node cordoned or uncordoned, a pod evicted), with
its host and time, in order, so a test can replay each node's history
and check that no node was ever left half-upgraded.
"""
from __future__ import annotations

import json
import os
import time

from kubernetes_mgmt_lab.emulated import hoststate, store

CHANGES_LOG = 'changes.jsonl'


def remember(db: str, key: str, value) -> None:
    with hoststate.mutate(db) as data:
        data[key] = value


def recall(db: str) -> dict:
    return hoststate.read(db)


def note(cluster_dir: str, host: str, what: str, **details) -> None:
    """Append one change (``what``: e.g. ``package``, ``kubelet-start``,
    ``upgrade-apply-start``) made on ``host``."""
    entry = {'time': time.time(), 'host': host, 'what': what, **details}
    store.append_line(os.path.join(cluster_dir, CHANGES_LOG),
                      json.dumps(entry, sort_keys=True) + '\n')


def changes(cluster_dir: str) -> list[dict]:
    """Every change noted, oldest first."""
    return store.read_lines(os.path.join(cluster_dir, CHANGES_LOG))

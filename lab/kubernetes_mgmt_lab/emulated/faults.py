"""Fault injection: ``<cluster_dir>/faults.json`` maps a host name
(or ``*``) to command prefixes that fail a given number of times.

A prefix ``'kubeadm init@kubeconfig'`` fails the command not before it
starts but at its stage ``kubeconfig`` (``runner.checkpoint``), after it
changed what it had changed by then: a run that dies half-way.

Holds (``holds.json``) make matching commands wait, before they start,
until the test releases them: an operation caught in the middle, at a
known point, for as long as the test needs (say, to kill whatever runs
it).
"""
from __future__ import annotations

import time

from kubernetes_mgmt_lab.emulated import store

FAULTS_FILE = 'faults.json'
HOLDS_FILE = 'holds.json'
# A held command goes on after this long even if nobody releases it.
HOLD_LIMIT = 900.0


def inject_fault(cluster_dir: str, host: str, prefix: str, message: str,
                 times: int = 1) -> None:
    with store.locked_file(cluster_dir, FAULTS_FILE, {}) as faults:
        faults.setdefault(host, {})[prefix] = {'message': message,
                                               'times': int(times)}


def fail_upgrade_node(cluster_dir: str, host: str,
                      message: str = 'injected fault: kubeadm upgrade node',
                      midway: bool = False) -> None:
    """The next ``kubeadm upgrade node`` on ``host`` fails once: before it
    changes anything, or with ``midway`` after its new API server started
    (a control-plane node then rolls back, as kubeadm does)."""
    stage = '@control-plane' if midway else ''
    inject_fault(cluster_dir, host, f'kubeadm upgrade node{stage}', message)


def fail_upgrade_apply_midway(
        cluster_dir: str, host: str = '*',
        message: str = 'injected fault: kubeadm upgrade apply') -> None:
    """The next ``kubeadm upgrade apply`` (on ``host``) fails once in the
    middle of its control-plane phase, its new API server already
    running: it rolls the node back to the old version."""
    inject_fault(cluster_dir, host, 'kubeadm upgrade apply@control-plane',
                 message)


def clear_faults(cluster_dir: str) -> None:
    with store.locked_file(cluster_dir, FAULTS_FILE, {}) as faults:
        faults.clear()


def matches(pattern: str, argv: list[str]) -> bool:
    """``'kubeadm join'`` matches ``kubeadm join ...``; ``'kubectl
    drain'`` also matches ``kubectl --kubeconfig F drain ...``: the
    command must be first and the other words follow in order."""
    words = pattern.split()
    if not words or not argv or argv[0] != words[0]:
        return False
    rest = iter(argv[1:])
    return all(any(arg == word for arg in rest) for word in words[1:])


def _rule_matches(rule: str, argv: list[str], stage: str | None) -> bool:
    pattern, _, at = rule.partition('@')
    return (at or None) == stage and matches(pattern, argv)


def take_fault(cluster_dir: str, host: str, argv: list[str],
               stage: str | None = None) -> str | None:
    """The message of a fault armed for this command (at ``stage``, or
    before it starts), used up once."""
    # Cheap unlocked look first: nearly every command has no fault.
    armed = store.load_json(f'{cluster_dir}/{FAULTS_FILE}', {})
    if not (armed.get(host) or armed.get('*')):
        return None
    with store.locked_file(cluster_dir, FAULTS_FILE, {}) as faults:
        for who in (host, '*'):
            rules = faults.get(who) or {}
            for prefix, rule in list(rules.items()):
                if not _rule_matches(prefix, argv, stage):
                    continue
                rule['times'] = int(rule.get('times', 1)) - 1
                if rule['times'] <= 0:
                    del rules[prefix]
                return str(rule.get('message') or 'injected fault')
    return None


def hold_commands(cluster_dir: str, host: str, prefix: str) -> None:
    """Commands of ``host`` (or ``*``) matching ``prefix`` wait before
    they start until ``release_commands``."""
    with store.locked_file(cluster_dir, HOLDS_FILE, {}) as holds:
        holds.setdefault('rules', {}).setdefault(host, []).append(prefix)


def release_commands(cluster_dir: str) -> None:
    with store.locked_file(cluster_dir, HOLDS_FILE, {}) as holds:
        holds.clear()


def held_commands(cluster_dir: str) -> list[dict]:
    """The commands waiting in a hold now: ``{'host', 'argv'}`` each."""
    return list(store.load_json(f'{cluster_dir}/{HOLDS_FILE}', {})
                .get('waiting', []))


def wait_while_held(cluster_dir: str, host: str, argv: list[str]) -> None:
    """Wait while a hold matches this command (see ``hold_commands``)."""
    holds = store.load_json(f'{cluster_dir}/{HOLDS_FILE}', {})
    if not _held(holds, host, argv):
        return
    entry = {'host': host, 'argv': argv}
    with store.locked_file(cluster_dir, HOLDS_FILE, {}) as current:
        current.setdefault('waiting', []).append(entry)
    ends = time.monotonic() + HOLD_LIMIT
    delay = 0.05
    while time.monotonic() < ends and _held(
            store.load_json(f'{cluster_dir}/{HOLDS_FILE}', {}), host, argv):
        time.sleep(delay)       # a lab stand-in polling the test's file
        delay = min(delay * 2, 0.5)


def _held(holds: dict, host: str, argv: list[str]) -> bool:
    rules = holds.get('rules') or {}
    return any(matches(prefix, argv)
               for who in (host, '*') for prefix in rules.get(who, ()))

"""Fault injection: ``<cluster_dir>/faults.json`` maps a host name
(or ``*``) to command prefixes that fail a given number of times.

A prefix ``'kubeadm init@kubeconfig'`` fails the command not before it
starts but at its stage ``kubeconfig`` (``runner.checkpoint``), after it
changed what it had changed by then: a run that dies half-way.
"""
from __future__ import annotations

from kubernetes_mgmt_lab.emulated import store

FAULTS_FILE = 'faults.json'


def inject_fault(cluster_dir: str, host: str, prefix: str, message: str,
                 times: int = 1) -> None:
    with store.locked_file(cluster_dir, FAULTS_FILE, {}) as faults:
        faults.setdefault(host, {})[prefix] = {'message': message,
                                               'times': int(times)}


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

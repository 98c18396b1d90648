"""The demo and a benchmark as a newcomer runs them, on throw-away stacks
in the session's services (their real Heat)."""
from __future__ import annotations

import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kubernetes_mgmt_lab.cli.demo import run_flavour
from kubernetes_mgmt_lab.openstack import access

pytestmark = pytest.mark.lab

REPO = Path(__file__).resolve().parents[2]
SUMMARY = re.compile(r'^(\S+) \S+ finished in ([\d.]+) s \((.*)\)$')


def _parts(summary: str) -> tuple[float, dict[str, float]]:
    total, parts = SUMMARY.match(summary).group(2, 3)
    return float(total), {name: float(seconds) for name, seconds in
                          re.findall(r'(?:^|, )(.+?) ([\d.]+) s', parts)}


def test_ha_demo_names_nodes_by_vm_and_accounts_for_every_second(
        site, capsys, caplog):
    caplog.set_level(logging.INFO)
    assert run_flavour('ha', site) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()

    # Every node table lists each VM next to its Kubernetes node.
    tables = [i for i, line in enumerate(lines) if line.split()[:4] ==
              ['VM', 'SERVER', 'IP', 'NODE']]
    assert len(tables) == 6     # instantiate, scale x2, heal x2, whole
    first = [line.split() for line in lines[tables[0] + 1:tables[0] + 6]]
    assert [row[3].split('-')[0] for row in first] == [
        'master', 'master', 'master', 'worker', 'worker']
    assert all(row[0].startswith('vm-') and row[4] == 'Ready'
               for row in first)

    # A master heal's breakdown shows the wait for the VIP, and every
    # summary's parts add up to its total (each rounded to 0.1 s).
    summaries = [r.getMessage() for r in caplog.records
                 if SUMMARY.match(r.getMessage())]
    assert any('VIP back on' in s for s in summaries
               if s.startswith('heal '))
    for summary in summaries:
        total, parts = _parts(summary)
        assert abs(sum(parts.values()) - total) <= 0.06 * len(parts) + 0.1, \
            summary

    # It ends saying what happened, not what to do.
    assert lines[-1] == ('=== ha: stack vnflcm_kdemo-ha and its network '
                         'deleted (its VMs, namespaces and bridge are '
                         'gone) ===')
    assert 'lab down' not in out
    services = access.Site.of(site)
    assert 'vnflcm_kdemo-ha' not in {
        s.stack_name for s in services.heat().stacks.list()}
    assert services.connection().network.find_network('kdemo-ha') is None


def test_benchmark_shows_progress_while_it_runs(site):
    proc = subprocess.run(
        [sys.executable, str(REPO / 'bench' / 'instantiate_bench.py'),
         '--workers', '1', '--install-delay', '0', '--services', site],
        capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    progress = proc.stderr.splitlines()
    assert re.search(r'run 1 of 1: 1 worker\(s\) \+ 1 master: instantiate',
                     progress[0])
    assert any(re.search(r'\] prepare: done in [\d.]+ s \(\d+/\d+\)', line)
               for line in progress)
    assert re.search(r'run 1 of 1: [\d.]+ s$', progress[-1])
    assert proc.stdout.splitlines()[1].split()[:3] == [
        'W', 'wall', 's']

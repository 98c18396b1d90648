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


def test_demo_names_nodes_by_vm_and_accounts_for_every_second(
        site, capsys, caplog):
    # The simple flavour: the HA flavour's lifecycle (scale, heals, the
    # whole VNF, terminate) is test_lifecycle_lab's, step by step; the
    # wait for the VIP in a master heal's breakdown is checked there.
    caplog.set_level(logging.INFO)
    assert run_flavour('simple', site) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()

    # The node table lists each VM next to its Kubernetes node.
    tables = [i for i, line in enumerate(lines) if line.split()[:4] ==
              ['VM', 'SERVER', 'IP', 'NODE']]
    assert len(tables) == 1
    rows = [line.split() for line in lines[tables[0] + 1:tables[0] + 4]]
    assert [row[3].split('-')[0] for row in rows] == [
        'master', 'worker', 'worker']
    assert all(row[0].startswith('vm-') and row[4] == 'Ready'
               for row in rows)
    assert any(line.startswith('registered VIM ') for line in lines)

    # The instantiate summary's parts add up to its total (each rounded
    # to 0.1 s).
    summaries = [r.getMessage() for r in caplog.records
                 if SUMMARY.match(r.getMessage())]
    assert [s.split()[0] for s in summaries] == ['instantiate']
    total, parts = _parts(summaries[0])
    assert abs(sum(parts.values()) - total) <= 0.06 * len(parts) + 0.1, \
        summaries[0]

    # It ends saying what happened, not what to do.
    assert lines[-1] == ('=== simple: stack vnflcm_kdemo-simple and its '
                         'network deleted (its VMs, namespaces and bridge '
                         'are gone) ===')
    assert 'lab down' not in out
    services = access.Site.of(site)
    assert 'vnflcm_kdemo-simple' not in {
        s.stack_name for s in services.heat().stacks.list()}
    assert services.connection().network.find_network(
        'kdemo-simple') is None


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

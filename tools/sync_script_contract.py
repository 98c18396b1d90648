#!/usr/bin/env python3
"""Rewrite the contract tables of scripts/install_k8s_cluster.sh from
kubernetes_mgmt/cluster/contract.py (their one definition).

Usage: tools/sync_script_contract.py [--check]
  --check  change nothing; exit 1 and print the differences when the
           script's tables are not the rendered ones.
"""
from __future__ import annotations

import difflib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kubernetes_mgmt.cluster import contract  # noqa: E402

SCRIPT = ROOT / 'scripts' / 'install_k8s_cluster.sh'


def main(argv: list[str]) -> int:
    text = SCRIPT.read_text(encoding='utf-8')
    wanted = contract.replace_tables(text)
    if wanted == text:
        return 0
    if '--check' in argv:
        sys.stdout.writelines(difflib.unified_diff(
            text.splitlines(keepends=True), wanted.splitlines(keepends=True),
            str(SCRIPT.relative_to(ROOT)), 'rendered from contract.py'))
        return 1
    SCRIPT.write_text(wanted, encoding='utf-8')
    print(f'rewrote the contract tables of {SCRIPT.relative_to(ROOT)}')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))

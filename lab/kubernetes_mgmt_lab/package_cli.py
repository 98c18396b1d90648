"""Running ``kubernetes-mgmt package ...`` in-process for the tests, and
reading what it printed and built."""
from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any


def run_package(capsys: Any, *argv: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``kubernetes-mgmt package ARGV``
    (``capsys``: pytest's capture); a traceback is never expected."""
    from kubernetes_mgmt.cli import main

    status = main(['package', *argv])
    out, err = capsys.readouterr()
    assert 'Traceback' not in out + err
    return status, out, err


def problems(err: str) -> list[str]:
    """The ``problem:`` lines verify printed, without the prefix."""
    return [line.removeprefix('problem: ') for line in err.splitlines()
            if line.startswith('problem: ')]


def zip_members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}

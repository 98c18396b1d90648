"""``kubernetes-mgmt ... | head``: when the reader of its output goes
away, the command stops quietly (the status a shell gives a program
SIGPIPE ended), without a BrokenPipeError traceback; a broken pipe that
is not standard output is still an error."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kubernetes_mgmt.cli import closed_pipe
from kubernetes_mgmt_lab import state as lab_state

REPO = Path(__file__).resolve().parents[2]


def _run(argv: list[str], reader: bool) -> subprocess.CompletedProcess:
    """The CLI of this checkout with its stdout a pipe whose reader is
    gone before it starts (``reader=False``) or reads it all."""
    env = {**os.environ,
           'PYTHONPATH': os.pathsep.join([str(REPO), str(REPO / 'lab')])}
    command = [sys.executable, '-m', 'kubernetes_mgmt.cli', *argv]
    if reader:
        return subprocess.run(command, capture_output=True, text=True,
                              env=env, timeout=120, check=False)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(command, stdout=write_end,
                              stderr=subprocess.PIPE, text=True, env=env,
                              timeout=120, check=False)
    finally:
        os.close(write_end)


@pytest.fixture
def lab_root(tmp_path) -> str:
    root = str(tmp_path)
    lab_state.save(lab_state.LabState(
        name='k', root=root, subnet='10.10.0.0/24', gateway='10.10.0.1',
        bridge='kbr0', username='u', password='p', tenant_id='t'),
        lab_state.state_path(root))
    return root


def test_lab_status_into_a_closed_pipe_stops_quietly(lab_root):
    done = _run(['lab', 'status', '--root', lab_root], reader=False)
    assert (done.returncode, done.stderr) == (141, '')
    read = _run(['lab', 'status', '--root', lab_root], reader=True)
    assert read.returncode == 0, read.stderr
    assert read.stdout.startswith('NAME  ROLE  IP  SSHD\n')


def test_help_into_a_closed_pipe_stops_quietly():
    for argv in (['lab', 'exec', '--help'], ['validate-request', '--help']):
        done = _run(argv, reader=False)
        assert (done.returncode, done.stderr) == (141, ''), argv


def test_a_broken_pipe_elsewhere_is_still_an_error():
    def writes_to_a_dead_child() -> int:
        raise BrokenPipeError(32, 'Broken pipe')

    with pytest.raises(BrokenPipeError):
        closed_pipe.quietly(writes_to_a_dead_child)
    assert closed_pipe.quietly(lambda: 3) == 3

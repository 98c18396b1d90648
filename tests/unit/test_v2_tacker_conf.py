"""Finding tacker-conductor's configuration files from the script's
process: real processes, read through /proc."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from kubernetes_mgmt.shim.v2 import tacker_conf

BASH = shutil.which('bash')
MASTER_TITLE = ('tacker-conductor: master process [/usr/bin/python3 '
                '/usr/bin/tacker-conductor --config-file '
                '/etc/tacker/tacker.conf --config-file=/etc/tacker/x.conf '
                '--config-dir /etc/tacker/conf.d]')
MASTER_ARGS = ['--config-file', '/etc/tacker/tacker.conf',
               '--config-file', '/etc/tacker/x.conf',
               '--config-dir', '/etc/tacker/conf.d']
WORKER_TITLE = 'tacker-conductor: ServiceWrapper worker(0)'


def _stop(process: subprocess.Popen) -> None:
    """End the process group started for the test (its own session)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=10)
    for stream in (process.stdin, process.stdout):
        if stream:
            stream.close()


def _started(process: subprocess.Popen) -> int:
    """The pid, once its new program's arguments show in /proc (just
    after exec they may still be empty)."""
    deadline = time.monotonic() + 10
    while not _read(process.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    return process.pid


def _read(pid: int) -> bytes:
    with open(f'/proc/{pid}/cmdline', 'rb') as f:
        return f.read()


def _cmdline(pid: int) -> list[bytes]:
    return _read(pid).split(b'\0')[:-1]


def _parent(pid: int) -> int:
    return tacker_conf._parent_of(pid)


def test_the_arguments_of_a_real_process():
    process = subprocess.Popen(
        [sys.executable, '-c', 'import time; time.sleep(30)',
         '--config-file', '/some/a.conf', '--config-dir=/some/dir',
         '--debug', '--config-file=/some/b.conf'],
        start_new_session=True)
    try:
        assert tacker_conf.parent_config_args(_started(process)) == [
            '--config-file', '/some/a.conf', '--config-dir', '/some/dir',
            '--config-file', '/some/b.conf']
    finally:
        _stop(process)


def test_the_default_is_the_parent_process(tmp_path):
    # The script is started by the conductor: its parent's arguments.
    code = ('from kubernetes_mgmt.shim.v2 import tacker_conf; '
            'print(tacker_conf.parent_config_args())')
    parent = textwrap.dedent(f'''
        import subprocess, sys
        out = subprocess.run([sys.executable, '-c', {code!r}],
                             capture_output=True, text=True, check=True)
        sys.stdout.write(out.stdout)
    ''')
    out = subprocess.run(
        [sys.executable, '-c', parent, '--config-file',
         str(tmp_path / 'tacker.conf')],
        capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == str(
        ['--config-file', str(tmp_path / 'tacker.conf')])


@pytest.fixture
def conductor():
    """A master whose title (one argv string, as setproctitle leaves it)
    holds the command line in brackets, a worker under it titled without
    arguments, and a "script" process under the worker. Yields the
    master's Popen and the script's pid."""
    if BASH is None:
        pytest.skip('bash is needed to give processes titles')
    script = textwrap.dedent(f'''\
        (exec -a '{WORKER_TITLE}' {BASH} <<'EOF'
        sleep 30 &
        echo $!
        wait
        EOF
        )
        wait
    ''')
    master = subprocess.Popen([MASTER_TITLE], executable=BASH,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              start_new_session=True)
    try:
        master.stdin.write(script.encode())
        master.stdin.close()
        script_pid = int(master.stdout.readline())
        yield master, script_pid
    finally:
        _stop(master)


def test_the_processes_are_as_tacker_conductor_leaves_them(conductor):
    master, script_pid = conductor
    worker = _parent(script_pid)
    assert _parent(worker) == master.pid
    assert _cmdline(master.pid) == [MASTER_TITLE.encode()]
    assert _cmdline(worker) == [WORKER_TITLE.encode()]


def test_the_master_title_is_found_above_the_worker(conductor):
    _, script_pid = conductor
    assert tacker_conf.parent_config_args(script_pid) == MASTER_ARGS


def test_the_master_title_read_directly(conductor):
    master, script_pid = conductor
    assert tacker_conf._argv(master.pid) == [
        '/usr/bin/python3', '/usr/bin/tacker-conductor', *MASTER_ARGS[:2],
        '--config-file=/etc/tacker/x.conf', *MASTER_ARGS[4:]]
    assert tacker_conf._argv(_parent(script_pid)) == [WORKER_TITLE]


def _titled(title: str) -> subprocess.Popen:
    """bash under ``title`` alone (argv[0], no other argument), waiting
    for its script on stdin."""
    return subprocess.Popen([title], executable=BASH,
                            stdin=subprocess.PIPE, start_new_session=True)


@pytest.mark.skipif(BASH is None, reason='bash gives processes titles')
def test_a_title_padded_with_blanks_is_read():
    # setproctitle may leave blanks after the title.
    process = _titled(MASTER_TITLE + '   ')
    try:
        assert _cmdline(_started(process)) == [
            (MASTER_TITLE + '   ').encode()]
        found = tacker_conf.parent_config_args(_started(process))
        assert found == MASTER_ARGS
    finally:
        _stop(process)


@pytest.mark.skipif(BASH is None, reason='bash gives processes titles')
def test_a_title_that_does_not_split_gives_no_arguments():
    process = _titled("tacker-conductor: master process [/usr/bin/x "
                      "--config-file /etc/it's.conf]")
    try:
        assert tacker_conf._argv(_started(process)) == []
    finally:
        _stop(process)


@pytest.mark.skipif(BASH is None, reason='bash gives processes titles')
def test_brackets_inside_arguments_are_not_a_title():
    # Several arguments: read as they are, whatever brackets they hold.
    process = subprocess.Popen(
        ['[title]', '-c', 'sleep 30; true # [x]', '--config-file', '/a.conf'],
        executable=BASH, start_new_session=True)
    try:
        assert tacker_conf.parent_config_args(_started(process)) == [
            '--config-file', '/a.conf']
    finally:
        _stop(process)


@pytest.mark.skipif(BASH is None, reason='bash gives processes titles')
def test_four_ancestors_without_arguments_give_none():
    # master (titled, no configuration) <- worker <- script: all three and
    # the walk's limit are inside processes started here.
    script = textwrap.dedent(f'''\
        (exec -a 'tacker-conductor: worker' {BASH} <<'EOF'
        (exec -a 'helper' {BASH} <<'EOT'
        sleep 30 &
        echo $!
        wait
        EOT
        )
        wait
        EOF
        )
        wait
    ''')
    master = subprocess.Popen(
        ['tacker-conductor: master process [/usr/bin/tacker-conductor]'],
        executable=BASH, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        start_new_session=True)
    try:
        master.stdin.write(script.encode())
        master.stdin.close()
        script_pid = int(master.stdout.readline())
        helper = _parent(script_pid)
        worker = _parent(helper)
        assert _parent(worker) == master.pid
        assert tacker_conf.parent_config_args(script_pid) == []
    finally:
        _stop(master)


def test_a_process_that_is_gone_gives_none():
    with open('/proc/sys/kernel/pid_max', encoding='ascii') as f:
        never = int(f.read())   # pids stay below pid_max
    assert tacker_conf._argv(never) == []
    assert tacker_conf._parent_of(never) == 1   # the walk ends


@pytest.mark.parametrize('argv, found', [
    ([], []),
    (['tacker-conductor'], []),
    (['x', '--config-file'], []),
    (['x', '--config-file', 'a.conf'], ['--config-file', 'a.conf']),
    (['x', '--config-dir=/d'], ['--config-dir', '/d']),
    (['x', '--config-files', 'a', '--config-file-x=b'], []),
    (['x', '--config', 'a', '-c', 'b'], []),
])
def test_config_args(argv, found):
    assert tacker_conf._config_args(argv) == found

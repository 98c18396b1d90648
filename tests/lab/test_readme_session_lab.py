"""README.rst's CLI session, run as a reader runs it: the ``$`` commands
of the console blocks under "The CLI session", taken from the README's
own text, pasted in order into one shell after ``lab tacker up`` (the
session's services; ``OS_CLIENT_CONFIG_FILE`` and ``OS_CLOUD`` as ``up``
prints them). Any command that fails fails the test, named with what it
printed.

A fresh ``lab tacker up`` has no VIM; the session's services may have a
default one registered by another module, which the test makes
non-default for the session and default again afterwards (Tacker keeps
one default VIM per project)."""
from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docutils.core
import docutils.nodes
import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / 'README.rst'
SECTION = 'The CLI session'
PROMPT = '$ '
# The whole session (an instantiate, two scales, a heal, a terminate)
# takes minutes; this only ends a hung one.
DEADLINE = 1800.0


@dataclass
class Ran:
    command: str
    status: int | None      # None: started, not finished
    seconds: float | None
    output: str


def session_commands(text: str) -> list[str]:
    """The ``$`` commands of the section's console blocks, in order. A
    line after a command that is indented continues it (a function body,
    a line after a backslash); anything else is refused, so that output
    pasted into a block is noticed."""
    section = _section(docutils.core.publish_doctree(
        text, settings_overrides={'report_level': 5}), SECTION)
    commands: list[str] = []
    for block in section.findall(docutils.nodes.literal_block):
        if 'console' not in block['classes']:
            continue
        for line in block.astext().splitlines():
            if line.startswith(PROMPT):
                commands.append(line[len(PROMPT):])
            elif line.startswith(' ') and commands:
                commands[-1] += '\n' + line
            elif line.strip():
                raise AssertionError(f'README.rst, "{SECTION}": a line that '
                                     f'is neither a command nor its '
                                     f'continuation: {line!r}')
    return commands


def _section(doctree, title: str):
    for section in doctree.findall(docutils.nodes.section):
        if section[0].astext() == title:
            return section
    raise AssertionError(f'README.rst has no section "{title}"')


def session_script(commands: list[str], record: Path) -> str:
    """One bash script that runs each command in the shell itself (so
    that variables, functions and ``cd`` carry over, as when pasted),
    with its output and status in files of ``record``; it stops at the
    first command that fails."""
    lines = []
    for i, command in enumerate(commands):
        at = shlex.quote(str(record / str(i)))
        lines += [f'echo "$EPOCHREALTIME" > {at}.start',
                  f'exec > {at}.out 2>&1',
                  command,
                  '__readme_status=$?',
                  f'echo "$__readme_status $EPOCHREALTIME" > {at}.end',
                  '[ "$__readme_status" -eq 0 ] || exit 3']
    return '\n'.join(lines) + '\n'


def results(commands: list[str], record: Path) -> list[Ran]:
    ran = []
    for i, command in enumerate(commands):
        start = record / f'{i}.start'
        if not start.exists():
            break
        output = (record / f'{i}.out').read_text(errors='replace') \
            if (record / f'{i}.out').exists() else ''
        end = record / f'{i}.end'
        if end.exists():
            status, ended = end.read_text().split()
            ran.append(Ran(command, int(status),
                           float(ended) - float(start.read_text()), output))
        else:
            ran.append(Ran(command, None, None, output))
    return ran


def test_the_session_is_found_and_is_valid_shell():
    """Without a lab: the README still has its session, and each command
    is one bash accepts."""
    commands = session_commands(README.read_text(encoding='utf-8'))
    joined = '\n'.join(commands)
    for expected in ('openstack vim register', 'openstack vnflcm instantiate',
                     'openstack vnflcm op show',
                     '--operational-state DISABLED',
                     'openstack vnf package delete'):
        assert expected in joined, expected
    for command in commands:
        proc = subprocess.run(['bash', '-n'], input=command, text=True,
                              capture_output=True, check=False)
        assert proc.returncode == 0, (command, proc.stderr)


@dataclass
class Site:
    root: object                # kubernetes_mgmt_lab...layout.Root
    env: dict[str, str]         # the two lines "lab tacker up" printed


@pytest.fixture
def fresh_site(tacker_site) -> Iterator[Site]:
    """The session's services as ``lab tacker up`` leaves them for the
    README's reader: no default VIM."""
    from kubernetes_mgmt_lab.openstack import clients
    from kubernetes_mgmt_lab.openstack.layout import Root

    root = Root(tacker_site.root)
    defaults = [v['ID'] for v in _cli(root, 'vim', 'list')
                if v['Is Default'] in (True, 'True')]
    for vim_id in defaults:
        _cli(root, 'vim', 'set', '--is-default', 'False', vim_id,
             parse=False)
    yield Site(root, clients.environment(root))
    # Best effort: a session that failed may have left its own VIM the
    # default, in use by its VNF.
    for vim in _cli(root, 'vim', 'list'):
        if vim['Is Default'] in (True, 'True') and vim['ID'] not in defaults:
            _try(_cli, root, 'vim', 'set', '--is-default', 'False',
                 vim['ID'], parse=False)
    for vim_id in defaults:
        _try(_cli, root, 'vim', 'set', '--is-default', 'True', vim_id,
             parse=False)


def _cli(root, *args: str, parse: bool = True):
    from kubernetes_mgmt_lab.openstack import clients

    proc = clients.openstack(root, *args, *(['-f', 'json'] if parse else []))
    assert proc.returncode == 0, f'openstack {" ".join(args)}: {proc.stderr}'
    return json.loads(proc.stdout) if parse else proc.stdout


def _try(fn, *args, **kwargs) -> None:
    """Clean-up after a failed session: report, never raise."""
    try:
        fn(*args, **kwargs)
    except Exception as exc:    # reported; the test has failed already
        print(f'clean-up: {exc}')


def site_records(root) -> dict[str, set[str]]:
    """What Tacker holds: VNF instances, packages, VIMs (ids)."""
    return {'vnf': {v['ID'] for v in _cli(root, 'vnflcm', 'list')},
            'package': {p['Id'] for p in _cli(root, 'vnf', 'package',
                                              'list')},
            'vim': {v['ID'] for v in _cli(root, 'vim', 'list')}}


def clean_up(root, left: dict[str, set[str]]) -> None:
    """Remove what a failed session left, so that the modules after this
    one find the services as they were (a cluster VIM named as theirs, a
    VNF on their network)."""
    from kubernetes_mgmt_lab.openstack.operator import Operator

    op = Operator(root)

    def terminate(vnf_id: str) -> None:
        if op.show(vnf_id)['Instantiation State'] == 'INSTANTIATED':
            op.terminate(vnf_id)

    for vnf_id in left['vnf']:
        _try(terminate, vnf_id)
        _try(_cli, root, 'vnflcm', 'delete', vnf_id, parse=False)
    for package_id in left['package']:
        _try(_cli, root, 'vnf', 'package', 'update', '--operational-state',
             'DISABLED', package_id)
        _try(_cli, root, 'vnf', 'package', 'delete', package_id,
             parse=False)
    for vim_id in left['vim']:
        _try(_cli, root, 'vim', 'set', '--is-default', 'False', vim_id,
             parse=False)
        _try(_cli, root, 'vim', 'delete', vim_id, parse=False)


def run_session(commands: list[str], env: dict[str, str],
                workdir: Path) -> tuple[list[Ran], float]:
    """The commands in one shell, as a reader pastes them: what each
    printed and its status, and the seconds it all took."""
    record = workdir / 'record'
    record.mkdir()
    home = workdir / 'home'
    home.mkdir()
    script = workdir / 'session.sh'
    script.write_text(session_script(commands, record), encoding='utf-8')
    # The reader's shell: the venv's kubernetes-mgmt on PATH, the two
    # lines "lab tacker up" printed, files under the test's directory.
    env = {**os.environ, **env, 'HOME': str(home), 'TMPDIR': str(workdir),
           'PATH': os.path.dirname(sys.executable) + os.pathsep
           + os.environ.get('PATH', '/usr/bin:/bin')}
    started = time.monotonic()
    proc = subprocess.Popen(['bash', str(script)], cwd=REPO, env=env,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        proc.wait(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return results(commands, record), time.monotonic() - started


@pytest.mark.lab
def test_the_readme_session_runs_command_by_command(fresh_site, tmp_path):
    commands = session_commands(README.read_text(encoding='utf-8'))
    before = site_records(fresh_site.root)
    try:
        ran, seconds = run_session(commands, fresh_site.env, tmp_path)
    finally:
        left = {kind: ids - before[kind]
                for kind, ids in site_records(fresh_site.root).items()}
    print(f'\nthe README session: {len(ran)} of {len(commands)} commands '
          f'in {seconds:.0f} s')
    for r in ran:
        took = '-' if r.seconds is None else f'{r.seconds:6.1f}'
        print(f'  {took:>6} s  {r.command.splitlines()[0][:90]}')
    failed = [r for r in ran if r.status != 0]
    if failed:
        clean_up(fresh_site.root, left)
        r = failed[0]
        state = ('did not finish within the session\'s deadline'
                 if r.status is None else f'exited {r.status}')
        pytest.fail(f'README.rst, "{SECTION}": command {ran.index(r) + 1} '
                    f'{state}:\n$ {r.command}\n{r.output}')
    assert len(ran) == len(commands)
    # The session removes what it made: it can be run again.
    assert not any(left.values()), left

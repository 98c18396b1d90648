"""The lab hosts' command agent and its C client: a command run through
them behaves as the same stand-in started in a new interpreter (output,
exit status, standard input, working directory, umask, user), signals
reach it, a dead client takes its command along, and without an agent
the client starts the stand-in itself.

The agent runs here as it does in a lab host, only outside namespaces
(the unit tests' hosts map private paths with KLAB_HOST_ROOT)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from kubernetes_mgmt.remote.retry import wait_until
from kubernetes_mgmt_lab.emulated import (
    agent_wrapper_script,
    import_paths,
    set_install_delay,
    testing,
    wrapper_script,
)
from kubernetes_mgmt_lab.emulated.agent_client import client_path

COMMANDS = ('apt-get', 'sysctl', 'dpkg-query')


@pytest.fixture
def host(tmp_path):
    return testing.make_host(str(tmp_path), str(tmp_path / 'cluster'), 'h0',
                             testing.random_loopback_base() + '5')


@pytest.fixture
def agent(tmp_path):
    """(the agent's socket, its process)."""
    path = str(tmp_path / 'agent.sock')
    proc = subprocess.Popen(
        [sys.executable, '-c', 'import sys; from kubernetes_mgmt_lab.'
         'emulated.agent import serve; serve(sys.argv[1])', path])
    try:
        assert wait_until(lambda: os.path.exists(path), deadline=30,
                          ceiling=0.1), 'the agent did not listen'
        yield path, proc
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def bins(tmp_path):
    """(directory of wrappers through the agent, directory of wrappers
    that start an interpreter)."""
    client = client_path(sys.executable, import_paths(),
                         cache=str(tmp_path / 'cache'))
    assert client, 'the client did not compile (is gcc installed?)'
    dirs = (tmp_path / 'via-agent', tmp_path / 'plain')
    for d in dirs:
        d.mkdir()
    for command in COMMANDS:
        for d, text in zip(dirs, (agent_wrapper_script(command, client),
                                  wrapper_script(command, sys.executable,
                                                 import_paths())),
                           strict=True):
            (d / command).write_text(text)
            (d / command).chmod(0o755)
    return dirs


def run(bin_dir, host, sock, *argv, stdin='', cwd=None, prefix=None,
        timeout=60):
    """``argv`` with ``bin_dir``'s wrappers first on PATH; ``prefix``: a
    shell command line that ends by exec-ing "$@" (argv)."""
    env = host.env(KLAB_AGENT_SOCKET=sock)
    env['PATH'] = f'{bin_dir}:{env["PATH"]}'
    command = ['sh', '-c', prefix, 'sh', *argv] if prefix else list(argv)
    return subprocess.run(command, input=stdin, capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=timeout,
                          check=False)


def agent_children(proc) -> list[int]:
    with open(f'/proc/{proc.pid}/task/{proc.pid}/children',
              encoding='ascii') as f:
        return [int(p) for p in f.read().split()]


def test_a_command_through_the_agent_answers_as_a_new_interpreter(
        tmp_path, host, agent, bins):
    """Two hosts' commands take turns on the agent's one worker, each with
    its own environment (the host it runs on): each answers as on a third
    host whose commands start new interpreters."""
    sock, proc = agent
    other = testing.make_host(str(tmp_path), host.cluster_dir, 'h1',
                              host.ip)
    plain = testing.make_host(str(tmp_path), host.cluster_dir, 'h2',
                              host.ip)
    workers = set()
    for argv, stdin in [(('apt-get', 'install', 'nfs-common'), 'n\n'),
                        (('apt-get', 'install', '-y', 'nfs-common'), ''),
                        (('dpkg-query', '-W', 'nfs-common'), ''),
                        (('apt-get', 'frobnicate'), ''),
                        (('dpkg-query', '-W', 'absent'), '')]:
        # Each host's state goes through the same steps.
        want = run(bins[1], plain, sock, *argv, stdin=stdin)
        for via_host in (host, other):
            via = run(bins[0], via_host, sock, *argv, stdin=stdin)
            assert (via.returncode, via.stdout, via.stderr) == \
                (want.returncode, want.stdout, want.stderr), argv
            workers.update(agent_children(proc))
    assert len(workers) == 1, 'each command had a worker of its own'


def test_a_command_reads_nothing_an_earlier_one_was_given(host, agent,
                                                          bins):
    """The first answer reads one line of two; the second command, given
    nothing, must not get the line left over."""
    sock, _ = agent
    first = run(bins[0], host, sock, 'apt-get', 'install', 'curl',
                stdin='n\ny\n')
    assert first.stdout.endswith('[Y/n] ') and first.returncode == 1
    second = run(bins[0], host, sock, 'apt-get', 'install', 'curl')
    assert second.returncode == 1, second.stdout
    assert run(bins[0], host, sock, 'dpkg-query', '-W',
               'curl').returncode == 1


def test_the_command_works_in_the_callers_directory_with_its_umask(
        tmp_path, host, agent, bins):
    sock, _ = agent
    work = tmp_path / 'work'
    work.mkdir()
    (work / 'k.conf').write_text('net.ipv4.ip_forward = 1\n')
    done = run(bins[0], host, agent[0], 'sysctl', '-p', 'k.conf', cwd=work)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ['* Applying k.conf ...',
                                        'net.ipv4.ip_forward = 1']
    # haproxy's package writes its default configuration with open().
    done = run(bins[0], host, sock, 'apt-get', 'install', '-y', 'haproxy',
               prefix='umask 077 && exec "$@"')
    assert done.returncode == 0, done.stderr
    mode = os.stat(host.path('/etc/haproxy/haproxy.cfg')).st_mode & 0o777
    assert mode == 0o600


@pytest.mark.skipif(os.geteuid() != 0, reason='changes group: needs root')
def test_the_command_runs_as_the_calling_user_and_group(host, agent, bins):
    # Root with another group (the tests' files are root's alone): the
    # file the command creates shows the group it ran as. The next
    # command, as root with root's group, takes the same worker back.
    sock, proc = agent
    workers = set()
    for package, setpriv, made, gid in [
            ('haproxy', '--regid=65534 --clear-groups',
             '/etc/haproxy/haproxy.cfg', 65534),
            ('nfs-kernel-server', '--regid=0 --groups=0', '/etc/exports', 0)]:
        done = run(bins[0], host, sock, 'apt-get', 'install', '-y', package,
                   prefix=f'exec setpriv {setpriv} "$@"')
        assert done.returncode == 0, done.stderr
        owner = os.stat(host.path(made))
        assert (owner.st_uid, owner.st_gid) == (0, gid)
        workers.update(agent_children(proc))
    assert len(workers) == 1


def _slow_install(host, bins, sock):
    set_install_delay(host.cluster_dir, 60)
    env = host.env(KLAB_AGENT_SOCKET=sock)
    env['PATH'] = f'{bins[0]}:{env["PATH"]}'
    return subprocess.Popen(['apt-get', 'install', '-y', 'kubelet'],
                            env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def test_a_command_holds_only_its_streams_and_its_link_to_the_agent(
        host, agent, bins):
    """Not the agent's listening socket, nor another client's connection:
    a command that held them would keep them open after the agent or
    that client is gone. Its worker's own link to the agent is closed
    in every program the command starts."""
    sock, proc = agent
    client = _slow_install(host, bins, sock)
    try:
        # Its first line: the command is in its stand-in, set up.
        assert client.stdout.readline().startswith(b'The following')
        child, = agent_children(proc)
        fds = sorted(int(fd) for fd in os.listdir(f'/proc/{child}/fd'))
        assert fds[:3] == [0, 1, 2] and len(fds) == 4, fds
        link = os.readlink(f'/proc/{child}/fd/{fds[3]}')
        agents = {os.readlink(f'/proc/{proc.pid}/fd/{fd}')
                  for fd in os.listdir(f'/proc/{proc.pid}/fd')}
        assert link.startswith('socket:') and link not in agents
        with open(f'/proc/{child}/fdinfo/{fds[3]}', encoding='ascii') as f:
            flags = int(f.read().split('flags:')[1].split()[0], 8)
        assert flags & os.O_CLOEXEC
    finally:
        client.kill()
        client.communicate()


@pytest.mark.parametrize('sig,code', [(signal.SIGTERM, -signal.SIGTERM),
                                      (signal.SIGKILL, -signal.SIGKILL)])
def test_a_signalled_or_killed_client_ends_its_command(host, agent, bins,
                                                       sig, code):
    sock, proc = agent
    client = _slow_install(host, bins, sock)
    try:
        assert wait_until(lambda: agent_children(proc), deadline=30,
                          ceiling=0.05), 'the command never started'
        client.send_signal(sig)
        assert client.wait(timeout=30) == code
    finally:
        client.kill()
        client.communicate()
    assert wait_until(lambda: not agent_children(proc), deadline=10,
                      ceiling=0.05), 'the command outlived its client'
    assert run(bins[1], host, sock, 'dpkg-query', '-W',
               'kubelet').returncode == 1      # the install never ended


def test_without_an_agent_the_client_starts_the_stand_in(tmp_path, host,
                                                         bins):
    missing = str(tmp_path / 'no-agent.sock')
    done = run(bins[0], host, missing, 'apt-get', 'install', '-y', 'curl')
    assert done.returncode == 0, done.stderr
    assert 'Setting up curl' in done.stdout

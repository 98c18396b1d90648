"""The SSH layer against real OpenSSH servers in lab VMs."""
import contextlib
import hashlib
import logging
import os
import secrets
import socket
import time
import uuid

import pytest

from kubernetes_mgmt import redact
from kubernetes_mgmt.engine.runner import run_each
from kubernetes_mgmt.errors import (
    CommandTimeout,
    ConnectError,
    HostKeyMismatch,
    RemoteError,
    TransferTimeout,
    Unresponsive,
)
from kubernetes_mgmt.remote.hostkeys import (
    HostKeyStore,
    StaticKeys,
    text_fingerprint,
)
from kubernetes_mgmt.remote.ssh import Endpoint, Login, Sessions, connect
from kubernetes_mgmt_lab.hostinit import SSHD_LOG

pytestmark = pytest.mark.lab


def endpoint(lab, host):
    return Endpoint(host.ip, Login(lab.state.username, lab.state.password),
                    label=host.name)


def test_one_connection_per_host_serves_commands_and_sftp(lab):
    hosts = lab.state.hosts[:5]
    assert len(hosts) >= 5
    before = {h.name: lab.ssh_accepts(h.name) for h in hosts}

    def work(host):
        with_session = sessions.get(endpoint(lab, host))
        for i in range(10):
            out = with_session.run(['echo', str(i)], step='echo')
            assert out.stdout == f'{i}\n'
        with_session.run(['id', '-u'], step='sudo id', sudo=True)
        path = f'/home/{lab.state.username}/upload-{uuid.uuid4().hex}'
        with_session.upload('hello\n', path, step='upload')
        with_session.upload('root-owned\n', '/etc/kmgmt-test/x.conf',
                            step='upload as root', sudo=True, mode=0o600)
        assert with_session.read_file(path, step='read') == b'hello\n'
        assert sessions.get(endpoint(lab, host)) is with_session
        # No command waits for the VM's delayed ACK (Nagle's algorithm).
        sock = with_session._client.get_transport().sock
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        return host.name

    with Sessions(lab.known_hosts()) as sessions:
        run_each('many commands', hosts, work, label=lambda h: h.name,
                 parallel=5)
    for host in hosts:
        expected = before[host.name] + 1
        assert lab.ssh_accepts(host.name, at_least=expected) == expected
        stat = lab.run_in_host(host.name,
                               ['stat', '-c', '%U %a',
                                '/etc/kmgmt-test/x.conf'])
        assert stat.stdout.split() == ['root', '600']


def test_a_large_file_is_streamed_whole_to_a_root_owned_path(
        lab, tmp_path):
    # An image archive: sent piece by piece, with sudo through install's
    # stdin and as the login user through SFTP; both arrive whole.
    local = tmp_path / 'image.tar'
    data = os.urandom(12 * 1024 * 1024 + 123)
    local.write_bytes(data)
    host = lab.state.hosts[0]
    home = f'/home/{lab.state.username}'
    with Sessions(lab.known_hosts()) as sessions:
        session = sessions.get(endpoint(lab, host))
        session.upload_file(local, '/var/lib/kmgmt-test/image.tar',
                            step='upload image bundle', sudo=True)
        session.upload_file(local, f'{home}/image.tar', step='upload',
                            mode=0o600)
        sums = session.run(['sha256sum', '/var/lib/kmgmt-test/image.tar',
                            f'{home}/image.tar'], step='check', sudo=True)
    expected = hashlib.sha256(data).hexdigest()
    assert [line.split()[0] for line in sums.stdout.splitlines()] == [
        expected, expected]
    owners = lab.run_in_host(host.name, [
        'stat', '-c', '%U %a', '/var/lib/kmgmt-test/image.tar',
        f'{home}/image.tar'])
    assert owners.stdout.split('\n')[:2] == [
        'root 644', f'{lab.state.username} 600']
    lab.run_in_host(host.name, ['rm', '-rf', '/var/lib/kmgmt-test',
                                f'{home}/image.tar'])


def test_host_whose_sshd_starts_late_is_reached(lab):
    host = lab.state.hosts[-1]
    lab.stop_sshd(host.name)
    started = time.monotonic()
    lab.start_sshd(host.name, delay=10)
    session = connect(endpoint(lab, host), lab.known_hosts(), deadline=60)
    try:
        waited = time.monotonic() - started
        assert session.run(['hostname'], step='hostname').stdout.strip() \
            == host.name
    finally:
        session.close()
    # The connection was made only once sshd was back, after the delay.
    assert waited >= 9


def vm_processes(lab, host, needle: str) -> list[str]:
    """Command lines of the processes in ``host`` (its network namespace)
    that contain ``needle``."""
    vm_net = os.stat(f'/run/netns/{host.netns}').st_ino
    found = []
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            if os.stat(f'/proc/{pid}/ns/net').st_ino != vm_net:
                continue
            with open(f'/proc/{pid}/cmdline', 'rb') as f:
                argv = f.read().replace(b'\0', b' ').decode()
        except OSError:  # gone meanwhile
            continue
        if needle in argv:
            found.append(f'{pid}: {argv}')
    return found


@pytest.mark.parametrize('sudo', [False, True], ids=['user', 'root'])
def test_command_outliving_its_timeout_is_killed_with_its_children(lab,
                                                                    sudo):
    host = lab.state.hosts[0]
    seconds = str(100000 + secrets.randbelow(100000))  # marks our sleeps
    # Children in the background and in a subshell: the whole group goes.
    script = 'sleep "$1" & (sleep "$1"; true) & wait'
    with Sessions(lab.known_hosts()) as sessions:
        session = sessions.get(endpoint(lab, host))
        # The sleeps last a day: the raise itself shows the timeout acted.
        with pytest.raises(CommandTimeout) as info:
            session.run_script(script, [seconds], step='wait for apiserver',
                               timeout=1, sudo=sudo)
        ps = lab.run_in_host(host.name, ['ps', '-eo', 'pid,user,args'])
        assert f'sleep {seconds}' not in ps.stdout
        assert vm_processes(lab, host, f'sleep {seconds}') == []
        # The connection still serves the next command.
        assert session.run(['echo', 'ok'], step='after').stdout == 'ok\n'
    message = str(info.value)
    assert f'[{host.name}] wait for apiserver' in message
    assert 'did not finish within 1 s; killed on the host (process group' \
        in message


def test_stalled_sftp_transfer_fails_within_its_deadline(lab):
    host = lab.state.hosts[1]
    home = f'/home/{lab.state.username}'
    with Sessions(lab.known_hosts()) as sessions:
        session = sessions.get(endpoint(lab, host))
        session.upload('warm\n', f'{home}/sftp-warm', step='warm up')
        servers = [line.split(':')[0] for line in
                   vm_processes(lab, host, 'sftp-server')]
        assert len(servers) == 1, servers
        # The peer stops reading: its sftp-server is stopped.
        lab.run_in_host(host.name, ['kill', '-STOP', *servers])
        try:
            started = time.monotonic()
            with pytest.raises(TransferTimeout) as info:
                session.upload(b'x' * 3_000_000, f'{home}/sftp-stalled',
                               step='upload CNI manifest', timeout=3)
            waited = time.monotonic() - started
        finally:
            lab.run_in_host(host.name, ['kill', '-CONT', *servers])
        # A new SFTP channel serves the next transfer.
        session.upload('after\n', f'{home}/sftp-after', step='after')
        assert session.read_file(f'{home}/sftp-after', step='read') == \
            b'after\n'
    # The stalled peer never reads: only the timeout could end the wait.
    assert waited >= 3
    message = str(info.value)
    assert message.startswith(f'[{host.name}] upload CNI manifest: SFTP '
                              f'write {home}/sftp-stalled did not finish '
                              f'within 3 s')


def test_hostile_value_reaches_remote_side_as_data(lab):
    host = lab.state.hosts[1]
    marker = f'/tmp/kmgmt-injected-{uuid.uuid4().hex}'
    value = (f"$(touch {marker}) `touch {marker}` '\"; touch {marker}\n"
             f"touch {marker} #")
    with Sessions(lab.known_hosts()) as sessions:
        session = sessions.get(endpoint(lab, host))
        assert session.run(['printf', '%s', value],
                           step='echo value').stdout == value
        assert session.run(['printf', '%s', value], step='echo as root',
                           sudo=True).stdout == value
        script = 'printf "%s" "$1"'
        assert session.run_script(script, [value], step='script',
                                  sudo=True).stdout == value
        session.upload(value, f'/home/{lab.state.username}/data.txt',
                       step='upload')
        assert lab.run_in_host(host.name,
                               ['test', '-e', marker]).returncode == 1
    assert not os.path.exists(marker)
    assert not os.path.exists(lab.host_path(host.name, marker))


def test_secrets_never_reach_the_logs_yet_output_is_data(lab, caplog):
    host = lab.state.hosts[2]
    token = 'eyJhbGciOiJSUzI1NiJ9.' + uuid.uuid4().hex
    proxy_password = 'prx-' + uuid.uuid4().hex
    redact.register(token)
    proxy = f'http://proxyuser:{proxy_password}@proxy.example:3128'
    with caplog.at_level(logging.DEBUG):
        with Sessions(lab.known_hosts()) as sessions:
            session = sessions.get(endpoint(lab, host))
            session.run(['true'], step='sudo', sudo=True)
            printed = session.run(['printf', '%s\n', token, proxy],
                                  step='print secrets')
            # What the driver parses comes back byte for byte.
            assert printed.stdout == f'{token}\n{proxy}\n'
            as_root = session.run(['printf', '%s', token], step='as root',
                                  sudo=True)
            assert as_root.stdout == token and as_root.stderr == ''
            session.upload(f'Authorization: Bearer {token}\n',
                           '/etc/kmgmt-test/token', step='token file',
                           sudo=True, mode=0o600)
            with pytest.raises(Exception) as info:
                session.run(['sh', '-c', 'echo "$0 $1" >&2; exit 3',
                             token, proxy], step='fail loudly')
    logged = caplog.text + str(info.value)
    assert 'print secrets' in logged  # the commands were logged
    for secret in (lab.state.password, token, proxy_password):
        assert secret not in logged


def test_a_vm_offering_another_key_than_it_published_gets_nothing(lab):
    host = lab.state.hosts[3]
    keys = lab.known_hosts()
    connect(endpoint(lab, host), keys).close()
    remembered = keys.known[host.ip]

    # Another machine on the address: a new VM with keys nobody vouches
    # for (the store still knows the old VM's key; the inventory too).
    replaced = lab.replace_host(host.name)
    assert replaced.ip == host.ip
    with pytest.raises(HostKeyMismatch) as info:
        connect(endpoint(lab, replaced), keys, deadline=30)
    message = str(info.value)
    assert host.ip in message and 'nothing was sent' in message
    assert text_fingerprint(remembered) in message
    offered = lab.host_keys().published(host.ip)
    assert any(fp in message for fp in offered.fingerprints)
    assert keys.known[host.ip] == remembered
    # The impostor never saw a login attempt, nor the password.
    assert lab.ssh_accepts(replaced.name) == 0
    assert 'Failed' not in _sshd_log(lab, replaced)

    # A VM rebuilt in place whose new keys are published is accepted.
    fresh = HostKeyStore(known=dict(keys.known), replacing={host.ip},
                         authority=lab.host_keys())
    connect(endpoint(lab, replaced), fresh, deadline=60).close()
    assert fresh.known[host.ip] != remembered

    # The operator option turns checking off entirely.
    lenient = HostKeyStore(known={host.ip: remembered}, checking=False)
    connect(endpoint(lab, replaced), lenient, deadline=30).close()


def test_a_vm_nothing_vouches_for_is_not_logged_into(lab):
    host = lab.state.hosts[2]
    with pytest.raises(ConnectError) as info:
        connect(endpoint(lab, host), HostKeyStore(authority=StaticKeys({})),
                deadline=3)
    assert f'[{host.name}] ssh connect' in str(info.value)
    assert 'has not published its SSH host keys' in str(info.value)
    with pytest.raises(ConnectError, match='nothing publishes one'):
        connect(endpoint(lab, host), HostKeyStore(), deadline=3)


def _sshd_log(lab, host) -> str:
    try:
        with open(lab.host_path(host.name, SSHD_LOG), encoding='utf-8',
                  errors='replace') as f:
            return f.read()
    except FileNotFoundError:
        return ''


def _sshd_processes(lab, host) -> list[str]:
    """PIDs of the sshd processes that serve connections (not the
    listener): what a VM whose SSH server hangs has stopped."""
    return [line.split(':')[0]
            for line in vm_processes(lab, host, 'sshd')
            if lab.state.username in line or '[priv]' in line
            or 'sshd-session' in line]


def test_a_server_that_stops_answering_fails_the_step_in_time(lab):
    host = lab.state.hosts[4]
    home = f'/home/{lab.state.username}'
    with Sessions(lab.known_hosts()) as sessions:
        session = sessions.get(endpoint(lab, host))
        session.run(['true'], step='warm up')
        with _stopped(lab, host):
            started = time.monotonic()
            with pytest.raises(Unresponsive) as command:
                session.run(['true'], step='check kubelet', timeout=3)
            command_wait = time.monotonic() - started
        # The dropped connection is made again for the next step.
        session = sessions.get(endpoint(lab, host))
        session.upload('x', f'{home}/warm', step='warm up sftp')
        with _stopped(lab, host):
            with pytest.raises(RemoteError) as transfer:
                session.upload('x', f'{home}/never', step='upload script',
                               timeout=3)
    assert str(command.value).startswith(f'[{host.name}] check kubelet: ')
    assert 'did not open a channel within 3 s' in str(command.value)
    assert command_wait >= 3
    assert str(transfer.value).startswith(f'[{host.name}] upload script: ')


@contextlib.contextmanager
def _stopped(lab, host):
    """The host's sshd processes serving connections stopped (SIGSTOP):
    the TCP connection stays up, nothing answers on it."""
    stopped = _sshd_processes(lab, host)
    assert stopped
    lab.run_in_host(host.name, ['kill', '-STOP', *stopped])
    try:
        yield
    finally:
        lab.run_in_host(host.name, ['kill', '-CONT', *stopped])


def test_a_server_that_accepts_but_never_answers_is_given_up(lab):
    # The kernel completes the TCP handshake for the stopped listener;
    # no SSH banner ever comes.
    host = lab.state.hosts[1]
    listener = [line.split(':')[0]
                for line in vm_processes(lab, host, 'sshd')
                if line not in ' '.join(_sshd_processes(lab, host))]
    lab.run_in_host(host.name, ['kill', '-STOP', *listener])
    try:
        started = time.monotonic()
        with pytest.raises(ConnectError) as info:
            connect(endpoint(lab, host), lab.known_hosts(), deadline=4,
                    attempt_timeout=2)
        waited = time.monotonic() - started
    finally:
        lab.run_in_host(host.name, ['kill', '-CONT', *listener])
    assert str(info.value).startswith(f'[{host.name}] ssh connect: ')
    assert waited < 10

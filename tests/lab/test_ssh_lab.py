"""The SSH layer against real OpenSSH servers in lab VMs."""
import logging
import os
import time
import uuid

import pytest

from kubernetes_mgmt import redact
from kubernetes_mgmt.errors import CommandTimeout, HostKeyMismatch
from kubernetes_mgmt.orchestration.parallel import for_each
from kubernetes_mgmt.remote.hostkeys import HostKeyStore
from kubernetes_mgmt.remote.ssh import Endpoint, Login, Sessions, connect

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
        return host.name

    with Sessions(HostKeyStore()) as sessions:
        for_each(hosts, work, phase='many commands', label=lambda h: h.name,
                 parallel=5)
    for host in hosts:
        expected = before[host.name] + 1
        assert lab.ssh_accepts(host.name, at_least=expected) == expected
        stat = lab.run_in_host(host.name,
                               ['stat', '-c', '%U %a',
                                '/etc/kmgmt-test/x.conf'])
        assert stat.stdout.split() == ['root', '600']


def test_host_whose_sshd_starts_late_is_reached(lab):
    host = lab.state.hosts[-1]
    lab.stop_sshd(host.name)
    started = time.monotonic()
    lab.start_sshd(host.name, delay=10)
    session = connect(endpoint(lab, host), HostKeyStore(), deadline=60)
    try:
        waited = time.monotonic() - started
        assert session.run(['hostname'], step='hostname').stdout.strip() \
            == host.name
    finally:
        session.close()
    # The connection was made only once sshd was back, after the delay.
    assert waited >= 9


def test_command_outliving_its_timeout_names_host_and_step(lab):
    host = lab.state.hosts[0]
    with Sessions(HostKeyStore()) as sessions:
        session = sessions.get(endpoint(lab, host))
        with pytest.raises(CommandTimeout) as info:
            session.run(['sleep', '30'], step='wait for apiserver',
                        timeout=1)
    message = str(info.value)
    assert f'[{host.name}] wait for apiserver' in message
    assert 'did not finish within 1 s' in message


def test_hostile_value_reaches_remote_side_as_data(lab):
    host = lab.state.hosts[1]
    marker = f'/tmp/kmgmt-injected-{uuid.uuid4().hex}'
    value = (f"$(touch {marker}) `touch {marker}` '\"; touch {marker}\n"
             f"touch {marker} #")
    with Sessions(HostKeyStore()) as sessions:
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


def test_secrets_never_reach_the_logs(lab, caplog):
    host = lab.state.hosts[2]
    token = 'eyJhbGciOiJSUzI1NiJ9.' + uuid.uuid4().hex
    proxy_password = 'prx-' + uuid.uuid4().hex
    redact.register(token)
    proxy = f'http://proxyuser:{proxy_password}@proxy.example:3128'
    with caplog.at_level(logging.DEBUG):
        with Sessions(HostKeyStore()) as sessions:
            session = sessions.get(endpoint(lab, host))
            session.run(['true'], step='sudo', sudo=True)
            session.run(['printf', '%s\n', token, proxy],
                        step='print secrets')
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


def test_changed_host_key_refused_unless_host_is_replaced(lab):
    host = lab.state.hosts[3]
    keys = HostKeyStore()
    connect(endpoint(lab, host), keys).close()
    remembered = keys.known[host.ip]

    replaced = lab.replace_host(host.name)
    assert replaced.ip == host.ip
    with pytest.raises(HostKeyMismatch) as info:
        connect(endpoint(lab, replaced), keys, deadline=30)
    assert host.ip in str(info.value)
    assert keys.known[host.ip] == remembered

    keys.replacing.add(host.ip)
    connect(endpoint(lab, replaced), keys, deadline=60).close()
    assert keys.known[host.ip] != remembered

    # The operator option turns checking off entirely.
    lenient = HostKeyStore(known={host.ip: remembered}, checking=False)
    connect(endpoint(lab, replaced), lenient, deadline=30).close()

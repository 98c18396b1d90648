"""A server's user data and console log through the lab cloud's Nova, as
a driver that logs in with keys of its own and checks each VM's host key
against its console would meet them.

Real: openstacksdk's compute calls (server create, wait, console output),
the VMs' OpenSSH server and sudo, paramiko. Emulated: Nova and Neutron
(the lab cloud, served from this process without Keystone) and
cloud-init (the lab applies the cloud-config before the VM's sshd
starts). Two servers boot at once for the module on an empty lab of its
own: one with a RAW ``#cloud-config`` (users, keys, sudo, no password
login), one with host keys of its own in a MIME multipart as Heat makes
for ``SOFTWARE_CONFIG``.
"""
from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText

import paramiko
import pytest

from kubernetes_mgmt_lab import hosts
from kubernetes_mgmt_lab.testing import throwaway_lab, unavailable_reason

pytestmark = pytest.mark.lab

BEGIN_KEYS = '-----BEGIN SSH HOST KEY KEYS-----'
END_KEYS = '-----END SSH HOST KEY KEYS-----'
# paramiko's names of the host key algorithms, by key type.
ALGORITHMS = {'ssh-ed25519': 'ssh-ed25519',
              'ecdsa-sha2-nistp256': 'ecdsa-sha2-nistp256',
              'ssh-rsa': 'rsa-sha2-512'}


class Cloud:
    """The lab cloud of an empty lab, and a client of it."""

    def __init__(self, lab, url: str):
        from keystoneauth1 import session
        from keystoneauth1.token_endpoint import Token
        from openstack import connection

        self.lab, self.url = lab, url
        self.servers: dict = {}
        self.session = session.Session(auth=Token(url, 'lab-test-token'))
        self.conn = connection.Connection(
            session=self.session,
            compute_endpoint_override=f'{url}/compute/v2.1')

    def port(self) -> dict:
        networks = self.session.get(
            f'{self.url}/network/v2.0/networks').json()['networks']
        return self.session.post(
            f'{self.url}/network/v2.0/ports',
            json={'port': {'network_id': networks[0]['id']}}).json()['port']

    def create(self, name: str, user_data: str):
        """A server booting with ``user_data`` (text; base64-encoded
        here, as Heat's Nova client sends it)."""
        return self.conn.compute.create_server(
            name=name, flavor_id='1', image_id='lab-image',
            networks=[{'port': self.port()['id']}],
            user_data=base64.b64encode(user_data.encode()).decode())

    def console(self, server, length: int | None = None) -> str:
        return self.conn.compute.get_server_console_output(
            server, length=length)['output']


@pytest.fixture(scope='module')
def keys(tmp_path_factory) -> dict:
    """Login keys for two users, and an ed25519 host key pair."""
    where = tmp_path_factory.mktemp('host-key')
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C',
                    'given@ci', '-f', str(where / 'host')], check=True)
    return {'ubuntu': paramiko.ECDSAKey.generate(),
            'deployer': paramiko.ECDSAKey.generate(),
            'host_private': (where / 'host').read_text(),
            'host_public': (where / 'host.pub').read_text().strip()}


def login_config(keys: dict) -> str:
    def public(key) -> str:
        return f'{key.get_name()} {key.get_base64()} ci@test'

    return f'''#cloud-config
ssh_authorized_keys:
  - {public(keys["ubuntu"])}
users:
  - default
  - name: ubuntu
    sudo: ALL=(ALL) NOPASSWD:ALL
    lock_passwd: false
  - name: deployer
    ssh_authorized_keys: ["{public(keys["deployer"])}"]
    sudo: ALL=(ALL) NOPASSWD:ALL
    shell: /bin/bash
ssh_pwauth: false
'''


def host_key_multipart(keys: dict) -> str:
    """Heat's multipart for SOFTWARE_CONFIG: its own cloud-config, then
    the user's text as a text/plain part."""
    private = ''.join(f'    {line}\n'
                      for line in keys['host_private'].splitlines())
    mine = MIMEText('#cloud-config\nssh_keys:\n  ed25519_private: |\n'
                    f'{private}  ed25519_public: {keys["host_public"]}\n')
    heat = MIMEText('\noutput: {all: "| tee -a /var/log/x.log"}\n',
                    'cloud-config')
    for part, name in ((heat, 'cloud-config'), (mine, '')):
        part.add_header('Content-Disposition', 'attachment', filename=name)
    return MIMEMultipart(_subparts=[heat, mine]).as_string()


@pytest.fixture(scope='module')
def cloud(keys):
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    from kubernetes_mgmt_lab.cloud import server as cloud_server

    with throwaway_lab(0, 0) as lab:
        api = cloud_server.start(os.path.join(lab.root, 'records.json'),
                                 [lab.root], 'lab-test-project')
        try:
            client = Cloud(lab, api.url)
            booting = {'login': client.create('login', login_config(keys)),
                       'host-key': client.create('host-key',
                                                 host_key_multipart(keys))}
            client.servers = {
                name: client.conn.compute.wait_for_server(
                    server, wait=120, interval=0.2)
                for name, server in booting.items()}
            yield client
        finally:
            api.shutdown()


def address(server) -> str:
    (found,) = [a['addr'] for net in server.addresses.values() for a in net]
    return found


def console_keys(output: str) -> list[str]:
    lines = output.splitlines()
    return lines[lines.index(BEGIN_KEYS) + 1:lines.index(END_KEYS)]


def fingerprint(key: paramiko.PKey) -> str:
    digest = hashlib.sha256(key.asbytes()).digest()
    return 'SHA256:' + base64.b64encode(digest).decode().rstrip('=')


def presented(ip: str, key_type: str) -> paramiko.PKey | None:
    """The host key of ``key_type`` the VM's sshd presents (None: it has
    none of that type)."""
    transport = paramiko.Transport((ip, 22))
    transport.get_security_options().key_types = [ALGORITHMS[key_type]]
    try:
        transport.start_client(timeout=15)
        return transport.get_remote_server_key()
    except paramiko.SSHException:
        return None
    finally:
        transport.close()


def connect(ip: str, console: str, user: str, **auth) -> paramiko.SSHClient:
    """Log in, trusting only the host keys the console shows."""
    client = paramiko.SSHClient()
    for line in console_keys(console):
        kind, blob = line.split()[:2]
        client.get_host_keys().add(ip, kind, paramiko.PKey.from_type_string(
            kind, base64.b64decode(blob)))
    client.connect(ip, username=user, allow_agent=False,
                   look_for_keys=False, timeout=15, **auth)
    return client


def run(client: paramiko.SSHClient, command: str) -> tuple[int, str]:
    _, out, _ = client.exec_command(command, timeout=30)
    text = out.read().decode()
    return out.channel.recv_exit_status(), text


def test_console_shows_the_host_keys_sshd_presents(cloud):
    server = cloud.servers['login']
    output = cloud.console(server)
    shown = console_keys(output)
    assert sorted(k.split()[0] for k in shown) == sorted(ALGORITHMS)
    host = cloud.lab.host_at(address(server))
    assert shown == hosts.host_public_keys(host)
    fingerprints = set(re.findall(r'cloud-init: \d+ (SHA256:\S+) ', output))
    assert len(fingerprints) == 3
    for line in shown:
        kind, blob = line.split()[:2]
        key = presented(address(server), kind)
        assert key is not None and key.get_base64() == blob
        assert fingerprint(key) in fingerprints
    # length: the last lines only.
    tail = cloud.console(server, length=4)
    assert tail == '\n'.join(output.split('\n')[-4:])


def test_users_log_in_with_their_keys_and_sudo_without_password(cloud,
                                                                keys):
    server = cloud.servers['login']
    ip, console = address(server), cloud.console(server)
    with connect(ip, console, 'deployer', pkey=keys['deployer']) as ssh:
        assert run(ssh, 'id -un; echo $SHELL') == (
            0, 'deployer\n/bin/bash\n')
        assert run(ssh, 'sudo -n true')[0] == 0
    # The image user with a rule of the user data's: it wins over the
    # image's own (which asks for the password).
    with connect(ip, console, 'ubuntu', pkey=keys['ubuntu']) as ssh:
        assert run(ssh, 'id -un; sudo -n id -un') == (0, 'ubuntu\nroot\n')
    # ssh_pwauth: false -- the image user's password no longer logs in.
    with pytest.raises(paramiko.AuthenticationException):
        connect(ip, console, 'ubuntu',
                password=cloud.lab.state.password).close()
    with pytest.raises(paramiko.AuthenticationException):
        connect(ip, console, 'deployer', pkey=keys['ubuntu']).close()


def test_ssh_keys_of_the_user_data_are_the_only_host_keys(cloud, keys):
    server = cloud.servers['host-key']
    assert console_keys(cloud.console(server)) == [keys['host_public']]
    kind, blob = keys['host_public'].split()[:2]
    key = presented(address(server), kind)
    assert key is not None and key.get_base64() == blob
    # cloud-init generates no other type when ssh_keys gives one.
    assert presented(address(server), 'ssh-rsa') is None
    assert presented(address(server), 'ecdsa-sha2-nistp256') is None


def test_replaced_host_keys_differ_from_the_console(cloud, keys):
    server = cloud.servers['host-key']
    ip = address(server)
    host = cloud.lab.host_at(ip)
    before = cloud.console(server)
    new = hosts.replace_host_keys(cloud.lab.state, host)
    assert [k.split()[0] for k in new] == ['ssh-ed25519']
    assert new != console_keys(before)
    key = presented(ip, 'ssh-ed25519')
    assert key is not None and key.get_base64() == new[0].split()[1]
    assert cloud.console(server) == before
    with pytest.raises(paramiko.BadHostKeyException):
        connect(ip, before, 'ubuntu', password=cloud.lab.state.password)


def test_a_vm_made_without_nova_has_its_host_keys_and_console(cloud):
    # After the servers: the lab allocates around their addresses.
    host = cloud.lab.add_host('master')
    keys = hosts.host_public_keys(host)
    assert sorted(k.split()[0] for k in keys) == sorted(ALGORITHMS)
    for line in keys:
        kind, blob = line.split()[:2]
        key = presented(host.ip, kind)
        assert key is not None and key.get_base64() == blob
    assert console_keys(hosts.console_log(host)) == keys


"""The lab's cloud-init: a server's user data read as cloud-init reads it
(cloud_init.py), applied to a VM's disk before its sshd starts
(first_boot.py), and its console output served as Nova serves it."""
from __future__ import annotations

import base64
import gzip
import os
import shutil
import stat
import subprocess
import time
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText

import pytest

from kubernetes_mgmt_lab import cloud_init, first_boot, image
from kubernetes_mgmt_lab import state as lab_state
from kubernetes_mgmt_lab.cloud.api import ApiError, Call, dispatch
from kubernetes_mgmt_lab.cloud.compute import Compute
from kubernetes_mgmt_lab.cloud.machines import Machines
from kubernetes_mgmt_lab.cloud.records import Records
from kubernetes_mgmt_lab.cloud_init import CloudConfig, User
from kubernetes_mgmt_lab.state import LabHost, LabState

TOP_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDefaultUserKey top@laptop'
DEPLOYER_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDeployerKey01 ci@x'
CLOUD_CONFIG = f'''#cloud-config
ssh_authorized_keys:
  - {TOP_KEY}
users:
  - default
  - name: deployer
    ssh_authorized_keys: [{DEPLOYER_KEY}]
    sudo: ALL=(ALL) NOPASSWD:ALL
    shell: /bin/bash
    groups: [sudo, kubeadmins]
ssh_pwauth: false
packages: [haproxy]
'''
needs_root = pytest.mark.skipif(os.geteuid() != 0,
                                reason='useradd and chown need root')


def b64(data: str | bytes) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.b64encode(raw).decode()


def users_of(config: CloudConfig) -> dict[str, User]:
    return {u.name: u for u in config.resolved_users('ubuntu')}


# -- reading the user data --------------------------------------------------

def test_raw_cloud_config_gives_users_keys_sudo_and_password_login():
    config = cloud_init.parse_user_data(b64(CLOUD_CONFIG))
    users = users_of(config)
    assert list(users) == ['ubuntu', 'deployer']
    assert users['ubuntu'].authorized_keys == (TOP_KEY,)
    # The lab image's default user keeps its password and sudo rule.
    assert (users['ubuntu'].lock_passwd, users['ubuntu'].sudo) == (
        False, None)
    deployer = users['deployer']
    assert deployer.authorized_keys == (DEPLOYER_KEY,)
    assert deployer.sudo == ('ALL=(ALL) NOPASSWD:ALL',)
    assert (deployer.shell, deployer.groups, deployer.lock_passwd) == (
        '/bin/bash', ('sudo', 'kubeadmins'), True)
    assert config.ssh_pwauth is False
    assert config.warnings == ()


def test_no_user_data_is_the_image_default_user_and_generated_keys():
    config = cloud_init.parse_user_data(None)
    assert [u.name for u in config.resolved_users('ubuntu')] == ['ubuntu']
    assert config.genkeytypes == ('rsa', 'ecdsa', 'ed25519')
    assert config.host_keys == {} and config.emit_keys_to_console


def heat_multipart(user_part: MIMEText) -> str:
    """The MIME multipart Heat's build_userdata makes for a server whose
    user_data_format is not RAW: its own cloud-config, boothook and part
    handler, then the user's data."""
    parts = [MIMEText('\n\noutput: {all: "| tee -a /var/log/x.log"}\n',
                      'cloud-config'),
             MIMEText('#!/bin/bash\necho boothook\n', 'cloud-boothook'),
             MIMEText('#part-handler\n', 'part-handler'),
             user_part]
    for part, name in zip(parts, ('cloud-config', 'boothook.sh',
                                  'part-handler.py', 'user'), strict=True):
        part.add_header('Content-Disposition', 'attachment', filename=name)
    return MIMEMultipart(_subparts=parts).as_string()


def test_software_config_multipart_takes_the_users_cloud_config_part():
    # SOFTWARE_CONFIG: the user's text goes in as a text/plain part.
    user_data = heat_multipart(MIMEText(CLOUD_CONFIG))
    config = cloud_init.parse_user_data(b64(user_data))
    assert users_of(config)['deployer'].authorized_keys == (DEPLOYER_KEY,)
    assert config.ssh_pwauth is False


def test_cfntools_multipart_leaves_the_users_text_to_cfn_tools():
    # HEAT_CFNTOOLS: the user's text is x-cfninitdata, which cloud-init
    # hands to Heat's part handler, never reads as cloud-config.
    user_data = heat_multipart(MIMEText(CLOUD_CONFIG, 'x-cfninitdata'))
    config = cloud_init.parse_user_data(b64(user_data))
    assert [u.name for u in config.resolved_users('ubuntu')] == ['ubuntu']
    assert config.ssh_pwauth is None


def test_gzipped_user_data_is_read_and_a_script_is_ignored():
    config = cloud_init.parse_user_data(b64(gzip.compress(
        CLOUD_CONFIG.encode())))
    assert 'deployer' in users_of(config)
    script = cloud_init.parse_user_data(b64('#!/bin/sh\nuseradd eve\n'))
    assert list(users_of(script)) == ['ubuntu']


@pytest.mark.parametrize('value, problem', [
    (12, 'a base64 string is required'),
    ('QQ', 'not base64'),
    ('QUFB' * 20000, 'longer than 65535')])
def test_user_data_nova_refuses(value, problem):
    with pytest.raises(cloud_init.UserDataError, match=problem) as caught:
        cloud_init.parse_user_data(value)
    assert 'user_data' in str(caught.value)


def test_broken_yaml_is_a_warning_that_shows_none_of_its_text():
    secret = 'b3BlbnNzaC1rZXktdjEAAAAABG5vbmU'
    config = cloud_init.parse_user_data(b64(
        f'#cloud-config\nssh_keys:\n  ed25519_private: "{secret}\n'))
    assert len(config.warnings) == 1
    assert 'not valid YAML' in config.warnings[0]
    assert secret not in repr(config)


def test_bad_entries_are_warned_about_and_skipped():
    config = cloud_init.parse_user_data(b64('''#cloud-config
users:
  - default
  - name: ../../etc
  - name: ops
    sudo: 42
    groups: [ok, "b@d"]
    shell: bash
    ssh_authorized_keys: "ssh-ed25519 AAAA ops"
ssh_keys: {dsa_private: x, ed25519_certificate: y}
ssh_pwauth: maybe
'''))
    users = users_of(config)
    assert list(users) == ['ubuntu', 'ops']
    assert users['ops'].sudo is None and users['ops'].shell is None
    assert users['ops'].groups == ('ok',)
    assert users['ops'].authorized_keys == ('ssh-ed25519 AAAA ops',)
    assert config.host_keys == {} and config.ssh_pwauth is None
    text = '\n'.join(config.warnings)
    for field in ('users[1].name', 'users[2].sudo', 'users[2].groups',
                  'users[2].shell', '"dsa_private"',
                  '"ed25519_certificate"', 'ssh_pwauth'):
        assert field in text


def test_an_entry_for_the_default_users_name_wins_field_by_field():
    config = cloud_init.parse_user_data(b64(f'''#cloud-config
ssh_authorized_keys: ["{TOP_KEY}"]
users:
  - default
  - name: ubuntu
    sudo: ["ALL=(ALL) NOPASSWD:ALL"]
    ssh_authorized_keys: ["{DEPLOYER_KEY}"]
'''))
    (ubuntu,) = config.resolved_users('ubuntu')
    assert ubuntu.sudo == ('ALL=(ALL) NOPASSWD:ALL',)
    assert ubuntu.authorized_keys == (DEPLOYER_KEY, TOP_KEY)
    assert ubuntu.lock_passwd is False


def test_without_default_the_image_user_is_left_alone():
    config = cloud_init.parse_user_data(b64(
        f'#cloud-config\nssh_authorized_keys: ["{TOP_KEY}"]\n'
        'users: [{name: ubuntu}]\n'))
    (ubuntu,) = config.resolved_users('ubuntu')
    # Named without "default": a user like any other, its password
    # locked, and the top-level keys are not its own.
    assert ubuntu.authorized_keys == () and ubuntu.lock_passwd is True


# -- the console block ------------------------------------------------------

@pytest.fixture(scope='module')
def public_keys(tmp_path_factory) -> list[str]:
    where = tmp_path_factory.mktemp('keys')
    lines = []
    for kind, bits in (('ecdsa', '256'), ('ed25519', '256'),
                       ('rsa', '2048')):
        path = where / f'ssh_host_{kind}_key'
        subprocess.run(['ssh-keygen', '-q', '-t', kind, '-b', bits, '-N',
                        '', '-C', 'root@vm-3', '-f', str(path)], check=True)
        lines.append((where / f'{path.name}.pub').read_text().strip())
    return lines


def test_fingerprint_lines_are_what_ssh_keygen_prints(public_keys,
                                                      tmp_path):
    for line in public_keys:
        path = tmp_path / 'key.pub'
        path.write_text(line + '\n')
        printed = subprocess.run(['ssh-keygen', '-l', '-f', str(path)],
                                 capture_output=True, text=True,
                                 check=True).stdout.strip()
        assert cloud_init.fingerprint_line(line) == printed


def test_keys_block_as_cloud_init_prints_it(public_keys):
    prefix = '<14>Aug  1 10:00:00 cloud-init: '
    lines = cloud_init.keys_block(public_keys, CloudConfig(), prefix)
    assert lines[:2] == [prefix + '#' * 61,
                         prefix + '-----BEGIN SSH HOST KEY FINGERPRINTS-----']
    assert lines[2:5] == [prefix + cloud_init.fingerprint_line(k)
                          for k in public_keys]
    assert lines[5:] == [
        prefix + '-----END SSH HOST KEY FINGERPRINTS-----',
        prefix + '#' * 61, '-----BEGIN SSH HOST KEY KEYS-----',
        *public_keys, '-----END SSH HOST KEY KEYS-----']


def test_keys_block_honours_emit_and_the_blacklists(public_keys):
    quiet = cloud_init.parse_user_data(b64(
        '#cloud-config\nssh: {emit_keys_to_console: false}\n'))
    assert cloud_init.keys_block(public_keys, quiet, '') == []
    partial = cloud_init.parse_user_data(b64(
        '#cloud-config\nssh_fp_console_blacklist: [ssh-rsa]\n'
        'ssh_key_console_blacklist: [ecdsa-sha2-nistp256]\n'))
    text = '\n'.join(cloud_init.keys_block(public_keys, partial, ''))
    assert '(RSA)' not in text and '(ECDSA)' in text
    assert public_keys[0] not in text and public_keys[2] in text


# -- applied to a VM's disk -------------------------------------------------

@pytest.fixture
def vm_root(tmp_path) -> str:
    """A VM disk with what useradd reads and writes, and the lab image's
    sshd configuration and default user."""
    root = tmp_path / 'vm'
    etc = root / 'etc'
    for d in ('etc/default', 'etc/ssh', 'etc/sudoers.d', 'home', 'root'):
        (root / d).mkdir(parents=True)
    for name in ('passwd', 'group', 'shadow', 'gshadow', 'login.defs',
                 'default/useradd'):
        if os.path.exists(f'/etc/{name}'):
            shutil.copy2(f'/etc/{name}', etc / name)
    shutil.copytree('/etc/skel', etc / 'skel', symlinks=True)
    (etc / 'ssh/sshd_config').write_text(image.SSHD_CONFIG)
    subprocess.run(['useradd', '--prefix', str(root), '--create-home',
                    'ubuntu'], check=True)
    return str(root)


def mode(path: str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def shadow_field(root: str, user: str) -> str:
    with open(os.path.join(root, 'etc/shadow'), encoding='utf-8') as f:
        return next(line.split(':')[1] for line in f
                    if line.startswith(f'{user}:'))


@needs_root
def test_first_boot_makes_users_keys_and_sudo_rules(vm_root):
    config = cloud_init.parse_user_data(b64(CLOUD_CONFIG))
    first_boot.run_first_boot(vm_root, 'vm-3', 'ubuntu',
                              first_boot.FirstBoot(config), time.monotonic())
    users = first_boot.accounts(vm_root)
    deployer = users['deployer']
    assert deployer.home == '/home/deployer'
    with open(os.path.join(vm_root, 'etc/passwd'), encoding='utf-8') as f:
        assert any(line.startswith('deployer:') and
                   line.rstrip().endswith(':/bin/bash') for line in f)
    with open(os.path.join(vm_root, 'etc/group'), encoding='utf-8') as f:
        groups = {line.split(':')[0]: line.strip().split(':')[3]
                  for line in f}
    assert 'deployer' in groups['kubeadmins'].split(',')
    for name, key in (('deployer', DEPLOYER_KEY), ('ubuntu', TOP_KEY)):
        ssh_dir = os.path.join(vm_root, f'home/{name}/.ssh')
        keys = os.path.join(ssh_dir, 'authorized_keys')
        with open(keys, encoding='utf-8') as f:
            assert f.read() == key + '\n'
        assert (mode(ssh_dir), mode(keys)) == (0o700, 0o600)
        assert os.stat(keys).st_uid == users[name].uid
        assert os.stat(ssh_dir).st_gid == users[name].gid
    sudoers = os.path.join(vm_root, 'etc/sudoers.d/90-cloud-init-users')
    assert mode(sudoers) == 0o440
    with open(sudoers, encoding='utf-8') as f:
        assert 'deployer ALL=(ALL) NOPASSWD:ALL\n' in f.read()
    subprocess.run(['visudo', '-c', '-q', '-f', sudoers], check=True)
    # A new user has no password; the default user's is not locked.
    assert shadow_field(vm_root, 'deployer').startswith('!')
    assert not shadow_field(vm_root, 'ubuntu').startswith('!!')
    with open(os.path.join(vm_root, 'etc/ssh/sshd_config'),
              encoding='utf-8') as f:
        sshd = f.read().splitlines()
    assert 'PasswordAuthentication no' in sshd
    assert 'PasswordAuthentication yes' not in sshd


@needs_root
def test_an_existing_user_named_in_users_gets_its_password_locked(vm_root):
    image_hash = '$6$rounds=1000$salt$hash'
    path = os.path.join(vm_root, 'etc/shadow')
    with open(path, encoding='utf-8') as f:
        text = f.read().replace('ubuntu:!:', f'ubuntu:{image_hash}:')
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)
    config = cloud_init.parse_user_data(b64(
        '#cloud-config\nusers: [{name: ubuntu}]\n'))
    first_boot.apply_users(vm_root, 'ubuntu', config)
    assert shadow_field(vm_root, 'ubuntu') == '!' + image_hash


@needs_root
def test_given_host_keys_replace_generated_ones_on_the_console(vm_root,
                                                               tmp_path):
    key = tmp_path / 'given'
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C',
                    'given@ci', '-f', str(key)], check=True)
    public = (tmp_path / 'given.pub').read_text().strip()
    config = cloud_init.parse_user_data(b64(
        '#cloud-config\nssh_keys:\n  ed25519_private: |\n'
        + ''.join(f'    {line}\n' for line in key.read_text().splitlines())
        + f'  ed25519_public: {public}\n'))
    first_boot.run_first_boot(vm_root, 'vm-3', 'ubuntu',
                              first_boot.FirstBoot(config), time.monotonic())
    ssh = os.path.join(vm_root, 'etc/ssh')
    # cc_ssh generates no key when ssh_keys gives some.
    assert sorted(os.listdir(ssh)) == ['ssh_host_ed25519_key',
                                       'ssh_host_ed25519_key.pub',
                                       'sshd_config']
    assert mode(os.path.join(ssh, 'ssh_host_ed25519_key')) == 0o600
    with open(os.path.join(ssh, 'ssh_host_ed25519_key'),
              encoding='utf-8') as f:
        assert f.read() == key.read_text()
    assert first_boot.public_host_keys(vm_root) == [public]
    with open(first_boot.console_log_path(vm_root), encoding='utf-8') as f:
        console = f.read()
    assert cloud_init.fingerprint_line(public) in console
    begin = console.index('-----BEGIN SSH HOST KEY KEYS-----\n')
    end = console.index('-----END SSH HOST KEY KEYS-----')
    assert console[begin:end].splitlines()[1:] == [public]
    assert 'PRIVATE KEY' not in console


@needs_root
def test_a_private_host_key_alone_gets_its_public_file(vm_root, tmp_path):
    key = tmp_path / 'alone'
    subprocess.run(['ssh-keygen', '-q', '-t', 'ecdsa', '-b', '256', '-N',
                    '', '-f', str(key)], check=True)
    blob = (tmp_path / 'alone.pub').read_text().split()[1]
    config = CloudConfig(host_keys={'ecdsa_private': key.read_text()})
    assert first_boot.host_keys(vm_root, 'vm-3', config) == []
    (line,) = first_boot.public_host_keys(vm_root)
    assert line.split()[:2] == ['ecdsa-sha2-nistp256', blob]
    assert line.endswith(' root@localhost')


# -- Nova's console output --------------------------------------------------

CONSOLE = 'boot\nline 2\nline 3\x07\r\nlast\n'


@pytest.fixture
def compute(tmp_path) -> Compute:
    """Nova over one lab (a state file) whose VM vm-0 has a console log,
    with servers ACTIVE on it, still BUILDing, and ACTIVE without one."""
    lab_root = tmp_path / 'lab'
    vm = lab_root / 'hosts/vm-0'
    vm.mkdir(parents=True)
    (vm / first_boot.CONSOLE_LOG).write_text(CONSOLE)
    lab = LabState(name='k', root=str(lab_root), subnet='10.10.0.0/24',
                   gateway='10.10.0.1', bridge='kbr0', username='ubuntu',
                   password='pw', tenant_id='t', hosts=[LabHost(
                       name='vm-0', role='server', ip='10.10.0.11',
                       netns='k-vm-0', root=str(vm), server_id='active')])
    lab_state.save(lab, lab_state.state_path(str(lab_root)))
    records = Records(str(tmp_path / 'records.json'))
    with records.changing() as data:
        for ident, status, host in (('active', 'ACTIVE', 'vm-0'),
                                    ('building', 'BUILD', None),
                                    ('gone-vm', 'ACTIVE', 'vm-9')):
            data['servers'][ident] = {'id': ident, 'status': status,
                                      'lab_host': host, 'lab_network': 'n'}
    return Compute(records, network=None,
                   machines={'n': Machines(str(lab_root))},
                   compute_hosts=['compute-0'], project_id='p')


def action(compute: Compute, server: str, body: object):
    call = Call(method='POST', path=f'/v2.1/servers/{server}/action',
                query={}, body=body, token='t', base_url='http://x')
    return dispatch(compute.routes(), call)


@pytest.mark.parametrize('length, output', [
    (None, 'boot\nline 2\nline 3\nlast\n'),
    (-1, 'boot\nline 2\nline 3\nlast\n'),
    ('-1', 'boot\nline 2\nline 3\nlast\n'),
    (2, 'last\n'),          # Nova's tail: the text after the last line
    ('3', 'line 3\nlast\n'),
    (0, '')])
def test_console_output_is_the_tail_nova_gives(compute, length, output):
    body = {'os-getConsoleOutput': {} if length is None else
            {'length': length}}
    reply = action(compute, 'active', body)
    assert (reply.status, reply.body) == (200, {'output': output})


def test_console_output_without_length_member_is_all_of_it(compute):
    reply = action(compute, 'active', {'os-getConsoleOutput': {
        'length': None}})
    assert reply.body['output'].startswith('boot\n')


@pytest.mark.parametrize('server, body, status, words', [
    ('nope', {'os-getConsoleOutput': {}}, 404, 'could not be found'),
    ('building', {'os-getConsoleOutput': {}}, 409, 'is not ready'),
    ('gone-vm', {'os-getConsoleOutput': {}}, 404, 'console available'),
    ('active', {'os-getConsoleOutput': {'length': -2}}, 400, 'length'),
    ('active', {'os-getConsoleOutput': {'length': 'x'}}, 400, 'length'),
    ('active', {'os-getConsoleOutput': {'length': 1.5}}, 400, 'length'),
    ('active', {'os-getConsoleOutput': {'lines': 1}}, 400,
     'os-getConsoleOutput'),
    ('active', {'os-stop': None}, 404, 'does not serve the server action'),
    ('active', [], 400, 'one action')])
def test_console_output_refusals(compute, server, body, status, words):
    with pytest.raises(ApiError) as caught:
        action(compute, server, body)
    assert caught.value.status == status
    assert words in caught.value.message


def test_user_data_nova_refuses_fails_the_create_before_anything(compute):
    call = Call(method='POST', path='/v2.1/servers', query={},
                body={'server': {'name': 'x', 'flavorRef': '1',
                                 'user_data': 'QQ'}},
                token='t', base_url='http://x')
    before = compute.records.all('servers')
    with pytest.raises(ApiError) as caught:
        compute.create_server(call)
    assert caught.value.status == 400
    assert 'user_data' in caught.value.message
    assert compute.records.all('servers') == before

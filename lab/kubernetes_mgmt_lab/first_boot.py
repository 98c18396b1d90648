"""A lab VM's first boot, done on its disk before its init starts sshd:
what cloud-init would do there with the server's cloud-config
(cloud_init.py) -- host keys (module ssh), users, their keys and sudo
rules (users_groups, ssh), password login (set_passwords) -- and the
console log the hypervisor keeps for the server, with the host keys
cloud-init prints to the console (keys_to_console).

Everything here works on the VM's private directories under ``root``
(the VM's disk directory); the console log lies beside them, where the
VM cannot see it.
"""
from __future__ import annotations

import datetime
import glob
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kubernetes_mgmt.redact import get_logger
from kubernetes_mgmt_lab import cloud_init
from kubernetes_mgmt_lab.cloud_init import KEY_TYPES, CloudConfig, User
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.namespaces import PRIVATE_DIRS
from kubernetes_mgmt_lab.sysrun import run

LOG = get_logger(__name__)

CONSOLE_LOG = 'console.log'
SUDOERS = '/etc/sudoers.d/90-cloud-init-users'
SSHD_CONFIG = '/etc/ssh/sshd_config'
HOST_KEY = '/etc/ssh/ssh_host_{}_key'
# RSA at 2048 bits keeps a 20-VM lab quick to boot on two cores.
KEYGEN_OPTIONS = {'ed25519': [], 'ecdsa': ['-b', '256'],
                  'rsa': ['-b', '2048']}
CLOUD_INIT = 'Cloud-init v. 24.4.1-0ubuntu0~24.04.1'
_PASSWORD_AUTH = re.compile(r'^\s*PasswordAuthentication\s.*$',
                            re.MULTILINE | re.IGNORECASE)


@dataclass(frozen=True)
class FirstBoot:
    """What a server brings to its VM's first boot (none for a VM the
    lab makes without the cloud: the image's user, generated keys)."""

    config: CloudConfig = field(default_factory=CloudConfig)
    admin_pass: str | None = field(default=None, repr=False)


def on_disk(root: str, path: str) -> str:
    """Where ``path`` of the VM lies under its disk directory ``root``;
    only its private directories are its own."""
    path = os.path.normpath(os.path.join('/', path))
    if not any(path == f'/{d}' or path.startswith(f'/{d}/')
               for d in PRIVATE_DIRS):
        raise LabError(f'{path} is not in a directory of the VM\'s own')
    return os.path.join(root, path.lstrip('/'))


def _write(path: str, text: str, mode: int, uid: int = 0,
           gid: int = 0) -> None:
    # Made with its mode: a private key is never readable by others.
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f'{path}.tmp'
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, 'w', encoding='utf-8') as f:
        os.fchmod(f.fileno(), mode)
        os.fchown(f.fileno(), uid, gid)
        f.write(text)
    os.replace(tmp, path)


# -- host keys --------------------------------------------------------------

def host_keys(root: str, host_name: str, config: CloudConfig) -> list[str]:
    """The VM's sshd host keys: those of ``ssh_keys``, else new ones of
    ``ssh_genkeytypes`` (cc_ssh generates none when keys are given).
    Returns what cloud-init would warn about."""
    if not config.host_keys:
        for kind in config.genkeytypes:
            run(['ssh-keygen', '-q', '-t', kind, *KEYGEN_OPTIONS[kind],
                 '-N', '', '-C', f'root@{host_name}',
                 '-f', on_disk(root, HOST_KEY.format(kind))])
        return []
    for name, text in config.host_keys.items():
        kind, part = name.rsplit('_', 1)
        path = on_disk(root, HOST_KEY.format(kind))
        if part == 'public':
            _write(f'{path}.pub', text, 0o644)
        else:
            _write(path, text, 0o600)
    warnings = []
    for kind in KEY_TYPES:
        if f'{kind}_private' in config.host_keys and \
                f'{kind}_public' not in config.host_keys:
            warnings += _derive_public(on_disk(root, HOST_KEY.format(kind)))
    return warnings


def _derive_public(private: str) -> list[str]:
    """The public key file of a private key given alone, as cc_ssh makes
    it (``ssh-keygen -y``, comment root@localhost)."""
    proc = run(['ssh-keygen', '-y', '-f', private], check=False)
    if proc.returncode != 0:
        return [f'Failed generating a key for {private}.pub from '
                f'{os.path.basename(private)}']
    _write(f'{private}.pub', f'{proc.stdout.strip()} root@localhost\n',
           0o644)
    return []


def public_host_keys(root: str) -> list[str]:
    """The VM's public host keys, one line each, in the order a shell
    glob lists their files (as cloud-init prints them)."""
    keys = []
    pattern = on_disk(root, '/etc/ssh') + '/ssh_host_*key.pub'
    for path in sorted(glob.glob(pattern)):
        with open(path, encoding='utf-8', errors='replace') as f:
            line = f.readline().strip()
        if line:
            keys.append(line)
    return keys


# -- users ------------------------------------------------------------------

@dataclass(frozen=True)
class Account:
    uid: int
    gid: int
    home: str


def accounts(root: str) -> dict[str, Account]:
    """The VM's users, from its /etc/passwd."""
    found = {}
    with open(on_disk(root, '/etc/passwd'), encoding='utf-8') as f:
        for line in f:
            fields = line.rstrip('\n').split(':')
            if len(fields) >= 7:
                found[fields[0]] = Account(int(fields[2]), int(fields[3]),
                                           fields[5])
    return found


def _groups(root: str) -> set[str]:
    with open(on_disk(root, '/etc/group'), encoding='utf-8') as f:
        return {line.split(':', 1)[0] for line in f if ':' in line}


def apply_users(root: str, default_user: str,
                config: CloudConfig) -> list[str]:
    """Create the missing users, lock passwords, write sudo rules and
    authorized keys; returns what went wrong, user by user (the VM still
    boots, as with cloud-init)."""
    warnings: list[str] = []
    users = config.resolved_users(default_user)
    known = accounts(root)
    for user in users:
        if user.name not in known:
            try:
                _add_user(root, user)
            except LabError as exc:
                warnings.append(f'Failed to create user {user.name}: {exc}')
    known = accounts(root)
    locked = [u.name for u in users if u.name in known and u.lock_passwd]
    if locked:
        _lock_passwords(root, locked)
    _write_sudo_rules(root, [u for u in users if u.name in known])
    for user in users:
        if user.name in known and user.authorized_keys:
            try:
                _authorize(root, known[user.name], user.authorized_keys)
            except LabError as exc:
                warnings.append(f'Applying SSH keys of {user.name} failed: '
                                f'{exc}')
    return warnings


def _add_user(root: str, user: User) -> None:
    """useradd on the VM's /etc and /home (``--prefix``), its missing
    groups made first, as cloud-init does."""
    have = _groups(root)
    for group in user.groups:
        if group not in have:
            run(['groupadd', '--prefix', root, group])
    argv = ['useradd', '--prefix', root, '--create-home']
    if user.shell:
        argv += ['--shell', user.shell]
    if user.groups:
        argv += ['--groups', ','.join(user.groups)]
    run([*argv, '--', str(user.name)])


def _lock_passwords(root: str, names: list[str]) -> None:
    """``passwd -l``: a ``!`` before the password hash."""
    edit_shadow(on_disk(root, '/etc/shadow'),
                lambda user, hashed: '!' + hashed
                if user in names and not hashed.startswith('!') else hashed)


def edit_shadow(path: str, new_hash: Callable[[str, str], str]) -> None:
    """Rewrite ``/etc/shadow`` at ``path`` (its owner and mode kept): each
    user's password hash becomes ``new_hash(user, hash)``."""
    info = os.stat(path)
    with open(path, encoding='utf-8') as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines):
        fields = line.split(':')
        if len(fields) > 1:
            fields[1] = new_hash(fields[0], fields[1])
            lines[i] = ':'.join(fields)
    _write(path, '\n'.join(lines) + '\n', info.st_mode & 0o777,
           info.st_uid, info.st_gid)


def _write_sudo_rules(root: str, users: list[User]) -> None:
    blocks = [f'\n# User rules for {u.name}\n'
              + ''.join(f'{u.name} {rule}\n' for rule in u.sudo)
              for u in users if u.sudo]
    if blocks:
        _write(on_disk(root, SUDOERS),
               f'# Created by {CLOUD_INIT} on {_stamp(_now())}\n'
               + ''.join(blocks), 0o440)


def _authorize(root: str, account: Account, keys: tuple[str, ...]) -> None:
    """~/.ssh/authorized_keys with ``keys`` added (0700 / 0600, the
    user's own, as sshd's StrictModes wants them)."""
    ssh_dir = os.path.join(on_disk(root, account.home), '.ssh')
    path = os.path.join(ssh_dir, 'authorized_keys')
    os.makedirs(ssh_dir, mode=0o700, exist_ok=True)
    os.chmod(ssh_dir, 0o700)
    os.chown(ssh_dir, account.uid, account.gid)
    present: list[str] = []
    if os.path.exists(path):
        with open(path, encoding='utf-8') as f:
            present = [line.rstrip('\n') for line in f]
    added = [k for k in keys if k not in present]
    _write(path, ''.join(f'{line}\n' for line in present + added), 0o600,
           account.uid, account.gid)


# -- sshd and the console ---------------------------------------------------

def apply_sshd(root: str, config: CloudConfig) -> None:
    """``ssh_pwauth``: sshd's PasswordAuthentication."""
    if config.ssh_pwauth is None:
        return
    path = on_disk(root, SSHD_CONFIG)
    with open(path, encoding='utf-8') as f:
        text = f.read()
    line = f'PasswordAuthentication {"yes" if config.ssh_pwauth else "no"}'
    text, found = _PASSWORD_AUTH.subn(line, text)
    if not found:
        text += f'{line}\n'
    _write(path, text, 0o644)


def console_log_path(root: str) -> str:
    return os.path.join(root, CONSOLE_LOG)


def write_console_log(root: str, host_name: str, config: CloudConfig,
                      warnings: list[str], started: float) -> None:
    """The console of the VM's first boot: a few boot lines, cloud-init's
    warnings, and the host keys as cc_keys_to_console prints them."""
    now = _now()

    def boot(text: str) -> str:
        return f'[{time.monotonic() - started + 1.5:12.6f}] {text}'

    stamp = _stamp(now)
    up = f'Up {time.monotonic() - started + 1.5:.2f} seconds'
    syslog = f'<14>{now:%b} {now.day:2d} {now:%H:%M:%S} cloud-init: '
    lines = [
        boot(f'Linux version {os.uname().release} (lab VM {host_name})'),
        boot(f'cloud-init[312]: {CLOUD_INIT} running \'init\' at {stamp}. '
             f'{up}.'),
        *(boot(f'cloud-init[312]: {now:%Y-%m-%d %H:%M:%S},000 - '
               f'lab[WARNING]: {w}') for w in warnings),
        boot(f'cloud-init[498]: {CLOUD_INIT} running \'modules:final\' at '
             f'{stamp}. {up}.'),
        *cloud_init.keys_block(public_host_keys(root), config, syslog),
        boot(f'cloud-init[498]: {CLOUD_INIT} finished at {stamp}. '
             f'Datasource DataSourceOpenStackLocal [net,ver=2].  {up}'),
        '', f'Ubuntu 24.04 LTS {host_name} ttyS0', '',
        f'{host_name} login: ']
    _write(console_log_path(root), '\n'.join(lines), 0o600)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _stamp(when: datetime.datetime) -> str:
    return when.strftime('%a, %d %b %Y %H:%M:%S %z')


# -- all of it --------------------------------------------------------------

def run_first_boot(root: str, host_name: str, default_user: str,
                   boot: FirstBoot, started: float) -> None:
    """Host keys, users, sshd and console, in cloud-init's order (the
    server's adminPass, set by the caller, before any lock)."""
    config = boot.config
    warnings = list(config.warnings)
    warnings += host_keys(root, host_name, config)
    warnings += apply_users(root, default_user, config)
    apply_sshd(root, config)
    for warning in warnings:
        LOG.warning('lab: %s, cloud-init: %s', host_name, warning)
    write_console_log(root, host_name, config, warnings, started)

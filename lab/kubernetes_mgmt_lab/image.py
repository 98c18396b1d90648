"""The "VM image" of a lab: the private directories every new host starts
from, built once per lab from the machine's own /etc.

Built here: the login user with its password, sudo that asks for it, an
sshd configuration. Not here (per host, see hosts.py): host keys, host
name, addresses.
"""
from __future__ import annotations

import glob
import os
import secrets
import shutil
import string

from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.namespaces import PRIVATE_DIRS
from kubernetes_mgmt_lab.sysrun import run

# Small package state a fresh VM would have (haproxy's chroot among it);
# dpkg/info holds file lists only and is large.
_VAR_LIB_COPIED = ('dpkg', 'haproxy', 'misc', 'pam', 'ucf')
_VAR_LIB_SKIPPED = ('dpkg/info',)

SSHD_CONFIG = """\
# Lab VM sshd: password logins, every accepted login logged.
Port 22
HostKey /etc/ssh/ssh_host_ed25519_key
HostKey /etc/ssh/ssh_host_ecdsa_key
HostKey /etc/ssh/ssh_host_rsa_key
PidFile /run/sshd.pid
LogLevel INFO
PermitRootLogin no
PasswordAuthentication yes
KbdInteractiveAuthentication no
UsePAM yes
MaxSessions 64
MaxStartups 100:30:200
MaxAuthTries 6
LoginGraceTime 60
UseDNS no
X11Forwarding no
PrintMotd no
AcceptEnv LANG LC_*
Subsystem sftp /usr/lib/openssh/sftp-server
"""

# The login user's sudo rule. sudo applies the last rule that matches, and
# reads sudoers.d in name order: a rule cloud-init writes for the user
# (90-cloud-init-users) comes later and wins, as on a cloud image.
SUDO_RULE_FILE = 'sudoers.d/10-lab-user'

# Runs in a throw-away mount namespace whose private directories are the
# image's, so useradd and chpasswd change the image only.
_ADD_USER = r'''
set -eu
image=$1 user=$2
shift 2
for d in "$@"; do mount --bind "$image/$d" "/$d"; done
if ! getent passwd "$user" >/dev/null; then
    useradd --create-home --shell /bin/bash --comment 'Lab VM user' "$user"
fi
chpasswd --encrypted
'''


_SHA_CRYPT_ROUNDS = 1000
_SALT_CHARACTERS = string.ascii_letters + string.digits + './'


def password_hash(password: str) -> str:
    """SHA-512 crypt with the fewest rounds glibc takes (1000, not 5000),
    not Debian's default yescrypt (15 ms a check, by design): sshd and
    every sudo of the driver check the VM user's password, 6 ms each at
    5000 rounds, and a benchmark's 17 VMs share two cores."""
    salt = ''.join(secrets.choice(_SALT_CHARACTERS) for _ in range(16))
    return run(['openssl', 'passwd', '-6', '-salt',
                f'rounds={_SHA_CRYPT_ROUNDS}${salt}', '-stdin'],
               input=f'{password}\n').stdout.strip()


def sudoers_rule(username: str) -> str:
    return ('# The lab VM user may run anything, with its password.\n'
            'Defaults secure_path="/usr/local/sbin:/usr/local/bin:'
            '/usr/sbin:/usr/bin:/sbin:/bin"\n'
            f'{username} ALL=(ALL:ALL) ALL\n')


def write_file(path: str, text: str, mode: int = 0o644) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f'{path}.tmp'
    with open(tmp, 'w', encoding='utf-8') as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def build(image: str, username: str, password: str) -> None:
    """(Re)build the image under ``image``."""
    os.makedirs(image, mode=0o700, exist_ok=True)
    for entry in os.listdir(image):     # a rebuild starts empty
        path = os.path.join(image, entry)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    run(['cp', '-a', '/etc', os.path.join(image, 'etc')])
    for d in PRIVATE_DIRS:
        os.makedirs(os.path.join(image, d), mode=0o755, exist_ok=True)
    os.chmod(os.path.join(image, 'root'), 0o700)
    _forget_machine(os.path.join(image, 'etc'))
    _copy_var_lib(os.path.join(image, 'var/lib'))
    _fresh_var_log(os.path.join(image, 'var/log'))
    _fresh_run(os.path.join(image, 'run'))
    etc = os.path.join(image, 'etc')
    _as_ubuntu(etc)
    write_file(os.path.join(etc, 'ssh/sshd_config'), SSHD_CONFIG)
    rule = os.path.join(etc, SUDO_RULE_FILE)
    write_file(rule, sudoers_rule(username), mode=0o440)
    run(['visudo', '-c', '-q', '-f', rule])
    os.makedirs(os.path.join(etc, 'klab'), mode=0o755, exist_ok=True)
    _add_user(image, username, password)


# Configuration of packages the machine has for the lab's own use (a real
# containerd, registry and skopeo): a fresh VM has none of it, and the
# install script must find containerd's config as the VM's package left it.
_HOST_ONLY_ETC = ('containerd', 'docker', 'containers')


def _forget_machine(etc: str) -> None:
    """Drop what identifies the machine or grants it extra rights, and
    the configuration of packages only the machine has."""
    for name in _HOST_ONLY_ETC:
        shutil.rmtree(os.path.join(etc, name), ignore_errors=True)
    for path in glob.glob(os.path.join(etc, 'ssh/ssh_host_*')):
        os.unlink(path)
    for path in glob.glob(os.path.join(etc, 'ssh/sshd_config.d/*')):
        os.unlink(path)
    for path in glob.glob(os.path.join(etc, 'sudoers.d/*')):
        if os.path.basename(path) != 'README':
            os.unlink(path)


# The VMs run the cloud image our users deploy (Ubuntu), whatever the
# machine under the lab is; scripts read the release from here.
UBUNTU_RELEASE = '''\
PRETTY_NAME="Ubuntu 24.04 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
VERSION="24.04 LTS (Noble Numbat)"
VERSION_CODENAME=noble
ID=ubuntu
ID_LIKE=debian
UBUNTU_CODENAME=noble
'''


def _as_ubuntu(etc: str) -> None:
    path = os.path.join(etc, 'os-release')
    if os.path.islink(path):  # Debian links it into /usr, which is shared
        os.unlink(path)
    write_file(path, UBUNTU_RELEASE)
    write_file(os.path.join(etc, 'lsb-release'),
               'DISTRIB_ID=Ubuntu\nDISTRIB_RELEASE=24.04\n'
               'DISTRIB_CODENAME=noble\n'
               'DISTRIB_DESCRIPTION="Ubuntu 24.04 LTS"\n')


def _copy_var_lib(var_lib: str) -> None:
    def skipped(src: str, names: list[str]) -> set[str]:
        rel = os.path.relpath(src, '/var/lib')
        if rel in _VAR_LIB_SKIPPED:
            return set(names)
        return set()

    for name in _VAR_LIB_COPIED:
        src = os.path.join('/var/lib', name)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(var_lib, name),
                            symlinks=True, ignore=skipped,
                            dirs_exist_ok=True)


def _fresh_var_log(var_log: str) -> None:
    # Login records sshd's PAM session writes to.
    for name, mode in (('wtmp', 0o664), ('btmp', 0o660),
                       ('lastlog', 0o664)):
        path = os.path.join(var_log, name)
        with open(path, 'w', encoding='utf-8'):
            pass
        os.chmod(path, mode)


def _fresh_run(run_dir: str) -> None:
    os.makedirs(os.path.join(run_dir, 'sshd'), mode=0o755, exist_ok=True)
    lock = os.path.join(run_dir, 'lock')
    os.makedirs(lock, exist_ok=True)
    os.chmod(lock, 0o1777)  # noqa: S103 - like /run/lock on a VM


def _add_user(image: str, username: str, password: str) -> None:
    if ':' in username or '\n' in password or '\n' in username:
        raise LabError('the lab user name must not contain ":" and the '
                       'password no line break')
    run(['unshare', '--mount', '--propagation', 'private', '--',
         'sh', '-c', _ADD_USER, 'lab-image-user', image, username,
         *PRIVATE_DIRS],
        input=f'{username}:{password_hash(password)}\n')

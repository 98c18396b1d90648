"""Persistent mount and UTS namespaces of lab hosts.

A host's namespaces outlive any process, the way ``ip netns`` keeps network
namespaces: each is an nsfs file bind-mounted under ``<lab root>/ns``, a
directory bind-mounted onto itself with private propagation (the kernel
only accepts mount-namespace files on a private mount).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.sysrun import run

# Directories a host owns; everything else is the machine's.
PRIVATE_DIRS = ('etc', 'root', 'var/lib', 'var/log', 'usr/local/bin', 'home',
                'run')

NETNS_DIR = '/run/netns'

# Runs inside the new namespaces: drop the copies of other namespaces'
# files the new mount table inherited (they would keep those namespaces
# alive), put the host's private directories in place, show a sysfs of the
# host's own network, and name the host.
_SETUP = r'''
set -eu
root=$1 name=$2 nsdir=$3
shift 3
# The kernel's own knob: the host's /usr/local/bin may hold a stand-in.
printf '%s' "$name" > /proc/sys/kernel/hostname
for m in "$nsdir" /run/netns; do
    if mountpoint -q "$m"; then umount -R "$m"; fi
done
for d in "$@"; do
    mount --bind "$root/$d" "/$d"
done
umount -l /sys
mount -t sysfs sysfs /sys
'''


@dataclass(frozen=True)
class HostNamespaces:
    """Where one host's namespaces are pinned."""

    mnt: str
    uts: str
    net: str

    @classmethod
    def of(cls, ns_dir: str, host: str, netns: str) -> HostNamespaces:
        return cls(mnt=os.path.join(ns_dir, f'{host}.mnt'),
                   uts=os.path.join(ns_dir, f'{host}.uts'),
                   net=os.path.join(NETNS_DIR, netns))

    def enter_argv(self) -> list[str]:
        """Prefix that runs a command inside the host."""
        return ['nsenter', f'--mount={self.mnt}', f'--uts={self.uts}',
                f'--net={self.net}', '--']


def decode_mount_path(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as octal.
    for code, char in (('\\040', ' '), ('\\011', '\t'), ('\\012', '\n'),
                       ('\\134', '\\')):
        field = field.replace(code, char)
    return field


def mount_points() -> list[str]:
    with open('/proc/self/mountinfo', encoding='utf-8') as f:
        return [decode_mount_path(line.split()[4]) for line in f]


def mounts_under(root: str) -> list[str]:
    """Mount points at or below ``root``, deepest first."""
    root = os.path.realpath(root)
    found = {p for p in mount_points()
             if p == root or p.startswith(root.rstrip('/') + '/')}
    return sorted(found, key=lambda p: (p.count('/'), p), reverse=True)


def is_mount_point(path: str) -> bool:
    return os.path.realpath(path) in set(mount_points())


def prepare_ns_dir(ns_dir: str) -> None:
    os.makedirs(ns_dir, mode=0o700, exist_ok=True)
    if not is_mount_point(ns_dir):
        run(['mount', '--bind', ns_dir, ns_dir])
    run(['mount', '--make-private', ns_dir])


def mount_tmpfs(path: str, label: str) -> None:
    """Keep ``path`` in memory: VM disks are thousands of small files and
    creating files on some machines' disks costs a millisecond each."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    if not is_mount_point(path):
        run(['mount', '-t', 'tmpfs', '-o', 'mode=0700', label, path])


def create(ns: HostNamespaces, host_root: str, hostname: str,
           ns_dir: str) -> None:
    """New mount and UTS namespaces for a host whose network namespace
    already exists."""
    for path in (ns.mnt, ns.uts):
        if is_mount_point(path):
            raise LabError(f'namespace file {path} is already in use')
        with open(path, 'w', encoding='utf-8'):
            pass
    run(['unshare', f'--mount={ns.mnt}', f'--uts={ns.uts}',
         '--propagation', 'private', '--',
         'nsenter', f'--net={ns.net}', '--',
         'sh', '-c', _SETUP, 'lab-host-setup', host_root, hostname, ns_dir,
         *PRIVATE_DIRS])


def release(ns: HostNamespaces) -> None:
    """Unpin the mount and UTS namespaces; the kernel frees them once no
    process is left inside."""
    for path in (ns.mnt, ns.uts):
        unmount(path)
        if os.path.exists(path):
            os.unlink(path)


def unmount(path: str) -> None:
    if not is_mount_point(path):
        return
    if run(['umount', path], check=False).returncode != 0:
        # Still busy: detach now, the kernel finishes when it is unused.
        run(['umount', '-l', path])


def unmount_all_under(root: str) -> None:
    # Several rounds: a path may carry stacked mounts.
    for _ in range(10):
        found = mounts_under(root)
        if not found:
            return
        for path in found:
            unmount(path)
    left = mounts_under(root)
    if left:
        raise LabError(f'could not unmount {", ".join(left)}')

"""Cinder volumes of lab hosts: one sparse file per volume, attached as a
loop device, so a VM sees a real, empty block device that the machine's
own mkfs.ext4, blkid and mount work on.

The VM mounts the device in its own mount namespace (invisible to the
machine). Before that namespace goes, ``release`` unmounts the device
inside it, so the loop device is not busy and detaches at once. Loop
devices are found by their backing file through sysfs, never by a
recorded name alone: a ``lab down`` after a crash frees what a half-done
``lab up`` attached, and a device number reused by someone else is never
touched.
"""
from __future__ import annotations

import glob
import os

from kubernetes_mgmt.lab.errors import LabError
from kubernetes_mgmt.lab.state import LabHost
from kubernetes_mgmt.lab.sysrun import run
from kubernetes_mgmt.redact import get_logger
from kubernetes_mgmt.remote.retry import wait_until

LOG = get_logger(__name__)

SIZE = 64 * 1024 * 1024     # bytes; sparse, so it costs what is written
DIR = 'volumes'             # under the host's directory, not inside the VM
SYS_BLOCK = '/sys/block'
DETACH_DEADLINE = 10.0
_DELETED = ' (deleted)'


def backing_file(host: LabHost, volume: str) -> str:
    return os.path.join(host.root, DIR, f'{volume}.img')


def attached(sys_block: str = SYS_BLOCK) -> dict[str, str]:
    """Attached loop devices: device path -> backing file."""
    found = {}
    pattern = os.path.join(sys_block, 'loop*', 'loop', 'backing_file')
    for path in glob.glob(pattern):
        try:
            with open(path, encoding='utf-8', errors='replace') as f:
                back = f.read().rstrip('\n')
        except OSError:
            continue        # detached meanwhile
        if back.endswith(_DELETED):     # the file was removed, still held
            back = back[:-len(_DELETED)]
        device = path.split(os.sep)[-3]
        found[f'/dev/{device}'] = back
    return found


def attached_under(directory: str,
                   sys_block: str = SYS_BLOCK) -> dict[str, str]:
    """Loop devices whose backing file lies below ``directory``."""
    prefix = os.path.realpath(directory).rstrip('/') + '/'
    return {dev: back for dev, back in attached(sys_block).items()
            if back.startswith(prefix)}


def attach(host: LabHost) -> dict[str, str]:
    """A new empty volume for each of the host's volumes, attached:
    volume name -> device path. Call after the host's disk is laid down
    (a rebuilt host's directory starts empty, so its volumes are new)."""
    devices: dict[str, str] = {}
    try:
        for volume in sorted(host.volume_ids):
            path = backing_file(host, volume)
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            with open(path, 'xb') as f:     # never reuse an old volume
                f.truncate(SIZE)
            device = run(['losetup', '--find', '--show', path]
                         ).stdout.strip()
            if not device.startswith('/dev/'):
                raise LabError(f'losetup gave no device for {path}: '
                               f'{device!r}')
            devices[volume] = device
    except BaseException:
        detach(list(devices.values()))
        raise
    return devices


def unmount_inside(mnt_ns: str, devices: list[str]) -> None:
    """Unmount ``devices`` wherever the namespace pinned at ``mnt_ns``
    has them mounted (lazily: a mount still in use goes once unused)."""
    for device in devices:
        # Exit 32 "not mounted" is the usual case: nothing to do.
        run(['nsenter', f'--mount={mnt_ns}', '--', 'umount',
             '--all-targets', '--lazy', device], check=False)


def detach(devices: list[str]) -> None:
    for device in devices:
        # A device still mounted somewhere is only marked for detaching
        # (autoclear); the kernel finishes when its last user goes.
        run(['losetup', '--detach', device], check=False)


def release(directory: str, mnt_namespaces: list[str]) -> list[str]:
    """Unmount (inside ``mnt_namespaces``) and detach every loop device
    backed by a file below ``directory``; returns the devices."""
    devices = sorted(attached_under(directory))
    if not devices:
        return []
    for mnt_ns in mnt_namespaces:
        unmount_inside(mnt_ns, devices)
    detach(devices)
    # Detaching an unused device is immediate; wait for one that was
    # still in use by a namespace that is going away.
    if not wait_until(lambda: not attached_under(directory),
                      deadline=DETACH_DEADLINE):
        LOG.warning('lab: loop devices %s of %s are still attached '
                    '(in use outside the lab?); the kernel detaches them '
                    'once unused', ', '.join(sorted(attached_under(
                        directory))), directory)
    return devices

"""Cinder volumes of lab hosts: one sparse file per volume, attached as a
loop device, so a VM sees a real, empty block device that the machine's
own mkfs.ext4, blkid and mount work on.

A host with volumes gets a private /dev (a tmpfs holding the usual
character devices), where its volume is a block device node named as in a
VM (``/dev/vdb``) with the link udev makes for a virtio disk,
``/dev/disk/by-id/virtio-<first 20 characters of the volume id>``. So
the guest may name the volume differently from the device Heat reports,
as Nova does not guarantee that name inside the guest.

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

from kubernetes_mgmt.redact import get_logger
from kubernetes_mgmt.remote.retry import wait_until
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.namespaces import decode_mount_path
from kubernetes_mgmt_lab.state import LabHost
from kubernetes_mgmt_lab.sysrun import run

LOG = get_logger(__name__)

GIB = 1 << 30
SIZE_GIB = 1                # Cinder's unit; sparse, costs what is written
GUEST_DEVICE = '/dev/vdb'   # where the guest sees its first volume
BY_ID = '/dev/disk/by-id'
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
            devices[volume] = new_loop(
                path, host.volume_gib.get(volume, SIZE_GIB) * GIB)
    except BaseException:
        detach(list(devices.values()))
        raise
    return devices


def new_loop(path: str, size: int) -> str:
    """A new sparse file of ``size`` bytes at ``path`` (never an old
    one), attached: its loop device."""
    with open(path, 'xb') as f:
        f.truncate(size)
    device = run(['losetup', '--find', '--show', path]).stdout.strip()
    if not device.startswith('/dev/'):
        raise LabError(f'losetup gave no device for {path}: {device!r}')
    return device


def by_id_name(volume_id: str) -> str:
    """udev's name for a virtio disk whose serial is the volume id (the
    virtio serial holds 20 bytes)."""
    return f'virtio-{volume_id[:20]}'


# Runs inside the host's mount namespace: a tmpfs /dev with what programs
# expect there, moved over the machine's /dev (once).
_PRIVATE_DEV = r'''
set -eu
[ -e /dev/.lab-private ] && exit 0
stage=/run/lab-dev
mkdir -p "$stage"
mount -t tmpfs -o mode=0755,nosuid lab-dev "$stage"
for n in null zero full random urandom tty; do
    set -- $(stat -c '%t %T' "/dev/$n")
    mknod -m 0666 "$stage/$n" c "$((0x$1))" "$((0x$2))"
done
mknod -m 0666 "$stage/ptmx" c 5 2
mkdir "$stage/pts" "$stage/shm"
mount --bind /dev/pts "$stage/pts"
mount -t tmpfs -o mode=1777,nosuid,nodev shm "$stage/shm"
ln -s /proc/self/fd "$stage/fd"
ln -s /proc/self/fd/0 "$stage/stdin"
ln -s /proc/self/fd/1 "$stage/stdout"
ln -s /proc/self/fd/2 "$stage/stderr"
mkdir -p "$stage/disk/by-id"
: > "$stage/.lab-private"
mount --move "$stage" /dev
'''

# Block device node PATH (major MAJ, minor MIN) with by-id LINKs to it;
# links of those names that pointed elsewhere are replaced.
_PLACE = r'''
set -eu
path=$1 maj=$2 min=$3
shift 3
rm -f "$path"
mknod -m 0660 "$path" b "$maj" "$min"
for link; do ln -sfn "../..${path#/dev}" "/dev/disk/by-id/$link"; done
'''


def private_dev(mnt_ns: str) -> None:
    run(['nsenter', f'--mount={mnt_ns}', '--', 'bash', '-c', _PRIVATE_DEV])


def place(mnt_ns: str, device: str, guest_path: str,
          links: list[str]) -> None:
    """Show the machine's block ``device`` inside the host at
    ``guest_path``, with ``links`` (names under /dev/disk/by-id)."""
    if not (guest_path.startswith('/dev/') and '..' not in guest_path):
        raise LabError(f'{guest_path!r} is not a path under /dev')
    rdev = os.stat(device).st_rdev
    run(['nsenter', f'--mount={mnt_ns}', '--', 'bash', '-c', _PLACE, 'bash',
         guest_path, str(os.major(rdev)), str(os.minor(rdev)), *links])


def unplace(mnt_ns: str, guest_path: str) -> None:
    """Remove the node at ``guest_path`` (a disk that was moved)."""
    run(['nsenter', f'--mount={mnt_ns}', '--', 'rm', '-f', guest_path])


def blank_disk(host: LabHost, size: int) -> str:
    """A new empty disk of ``size`` bytes for ``host`` (released with its
    volumes): its loop device on the machine."""
    directory = os.path.join(host.root, DIR)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    count = len(glob.glob(os.path.join(directory, 'blank-*.img')))
    return new_loop(os.path.join(directory, f'blank-{count}.img'), size)


def expose(mnt_ns: str, host: LabHost) -> None:
    """The host's volumes inside it, as a VM sees virtio disks."""
    private_dev(mnt_ns)
    for volume, device in sorted(host.volume_devices.items()):
        place(mnt_ns, device, host.guest_devices.get(volume, GUEST_DEVICE),
              [by_id_name(host.volume_ids[volume])])


def unmount_inside(mnt_ns: str, devices: list[str]) -> None:
    """Unmount ``devices`` wherever the namespace pinned at ``mnt_ns``
    has them mounted (lazily: a mount still in use goes once unused).
    Found by device number: the host names them in its own /dev."""
    numbers = set()
    for device in devices:
        try:
            rdev = os.stat(device).st_rdev
        except OSError:
            continue
        numbers.add(f'{os.major(rdev)}:{os.minor(rdev)}')
    table = run(['nsenter', f'--mount={mnt_ns}', '--', 'cat',
                 '/proc/self/mountinfo'], check=False).stdout
    targets = [line.split()[4] for line in table.splitlines()
               if len(line.split()) > 4 and line.split()[2] in numbers]
    for target in sorted(targets, key=len, reverse=True):
        run(['nsenter', f'--mount={mnt_ns}', '--', 'umount', '--lazy',
             decode_mount_path(target)], check=False)


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

"""The Debian packages the lab needs on the machine, installed when
missing."""
from __future__ import annotations

import os
import shutil
import sys

from kubernetes_mgmt.redact import get_logger
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.sysrun import run

LOG = get_logger(__name__)

# A program (by name or path) or a file each package provides -> the
# package.
REQUIRED = {
    '/usr/sbin/sshd': 'openssh-server',
    'ssh-keygen': 'openssh-client',
    '/usr/sbin/haproxy': 'haproxy',
    '/usr/sbin/keepalived': 'keepalived',
    # The masters' etcd is real (emulated/etcd_server.py).
    '/usr/bin/etcd': 'etcd-server',
    '/usr/bin/etcdctl': 'etcd-client',
    'sudo': 'sudo',
    'ip': 'iproute2',
    'nsenter': 'util-linux',
    'useradd': 'passwd',
    # The storage host's volume: a loop device its VM formats and mounts.
    'losetup': 'mount',
    'mount': 'mount',
    'blkid': 'util-linux',
    'findmnt': 'util-linux',
    'mkfs.ext4': 'e2fsprogs',
    # The VMs' command agent client (emulated/klab_run.c), built here.
    'cc': 'gcc',
    '/usr/include/stdio.h': 'libc6-dev',
    # Air-gapped sites: a real registry, skopeo to push the lab's images
    # and a real containerd (with runc) to pull them (registry.py,
    # oci_images.py, real_containerd.py).
    '/usr/bin/containerd': 'containerd',
    '/usr/bin/ctr': 'containerd',
    'runc': 'runc',
    '/usr/bin/docker-registry': 'docker-registry',
    'skopeo': 'skopeo',
}


def _present(program: str) -> bool:
    if os.path.isabs(program):
        return os.path.exists(program)
    return shutil.which(
        program, path='/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:'
                      '/sbin:/bin') is not None


def missing(required: dict[str, str] = REQUIRED) -> list[str]:
    return sorted({pkg for prog, pkg in required.items()
                   if not _present(prog)})


def ensure(required: dict[str, str] = REQUIRED) -> None:
    """Install what is missing with apt-get; do nothing when all is there."""
    needed = missing(required)
    if not needed:
        return
    if shutil.which('apt-get') is None:
        raise LabError('the lab needs these Debian packages and apt-get is '
                       f'not available: {" ".join(needed)}')
    message = ('lab: installing Debian packages the lab needs: '
               f'{" ".join(needed)}')
    LOG.info(message)
    print(message, file=sys.stderr, flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    run(['apt-get', 'update'], env=env, timeout=600)
    run(['apt-get', 'install', '-y', '--no-install-recommends', *needed],
        env=env, timeout=1200)
    still = missing(required)
    if still:
        raise LabError('apt-get ran but these packages are still missing: '
                       f'{" ".join(still)}')

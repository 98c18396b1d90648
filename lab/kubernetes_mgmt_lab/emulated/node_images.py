"""A lab VM's image store: a real containerd (``real_containerd``) whose
root is the VM's private ``/var/lib/klab-containerd``, so what one
command pulled or imported is there for the next, as on a node.

The containerd runs only for one command at a time (``session``): it is
started under a lock of the VM, used, and stopped before the lock is
given up. Why not keep it running, as a node's containerd runs:

* nothing outlives a command, so power-off, reboot, ``lab down`` and a
  command killed half-way have no daemon to find and end (a killed
  command's containerd gets SIGTERM from the kernel: ``with_parent``);
* the command agent's worker keeps no child and stays reusable;
* one containerd at a time owns the root (its bolt database takes a
  file lock): parallel commands on a VM wait for each other instead of
  racing to start one;
* it costs ~0.2 s a command, and the install script runs ctr once or
  twice per node.

``images_of`` reads a VM's store, from inside the VM (an emulated
command's ``Context``) or from the machine (a host name and its lab),
under the same lock: for tests and for the emulated kubeadm.
"""
from __future__ import annotations

import contextlib
import os
import tempfile

from kubernetes_mgmt_lab import filelock
from kubernetes_mgmt_lab.real_containerd import NAMESPACE, RealContainerd

TYPE_CHECKING = False    # as in runner: no import of typing at start-up
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Protocol

    from kubernetes_mgmt_lab.emulated.runner import Context

    class Lab(Protocol):
        """What is read of a lab (kubernetes_mgmt_lab.manager.Lab, which
        sits above this package)."""

        def host_path(self, name: str, path: str) -> str: ...

# Paths as the VM sees them. The run directory is short: it holds the
# socket (a unix socket path holds 107 bytes).
ROOT = '/var/lib/klab-containerd'
RUN_DIR = '/run/klab-containerd'
LOCK = 'lock'


@contextlib.contextmanager
def session(root: str, run_dir: str, lock_dir: str | None = None,
            with_parent: bool = True, snapshotter: str | None = None
            ) -> Iterator[RealContainerd]:
    """The containerd of a VM whose store is ``root`` and whose socket
    goes under ``run_dir``, running for the block alone, under the VM's
    lock (in ``lock_dir``, default ``run_dir``). ``with_parent``: it dies
    with this process (a command's worker is single-threaded; a test
    process may not be, and its lab's teardown ends what it left).
    ``snapshotter``: for ctr's unpacking; None: overlayfs if it works on
    ``root``'s file system, else native."""
    with filelock.exclusive(os.path.join(lock_dir or run_dir, LOCK)):
        ctd = RealContainerd.start(root, run_dir=run_dir,
                                   with_parent=with_parent,
                                   snapshotter=snapshotter)
        try:
            yield ctd
        finally:
            ctd.stop()


def images_of(host: Context | str, lab: Lab | None = None,
              namespace: str = NAMESPACE) -> dict[str, str]:
    """Image name -> manifest digest of what a VM's containerd holds:
    ``host`` is the running command's ``Context`` (inside the VM) or a
    VM's name in ``lab`` (from the machine, reading the VM's disk)."""
    if isinstance(host, str):
        if lab is None:
            raise ValueError('images_of(name) needs the lab of the VM')
        return _from_machine(lab.host_path(host, ROOT),
                             lab.host_path(host, RUN_DIR), namespace)
    with session(host.path(ROOT), host.path(RUN_DIR),
                 snapshotter='native') as ctd:     # a listing unpacks none
        return ctd.images(namespace)


def _from_machine(root: str, vm_run_dir: str,
                  namespace: str) -> dict[str, str]:
    """The VM's store read by a containerd of the machine: the VM's lock,
    the VM's root, a socket in a short directory of its own (the VM's
    run directory, seen from here, may be too long a path for one).
    Listing unpacks nothing: no overlay probe on the VM's disk."""
    if not os.path.isdir(root):
        return {}       # its containerd never ran: no image
    with tempfile.TemporaryDirectory(prefix='kctr-', dir='/var/tmp') as run, \
            session(root, run, lock_dir=vm_run_dir, with_parent=False,
                    snapshotter='native') as ctd:
        return ctd.images(namespace)

"""Helpers for code that brings throw-away labs up: tests and benchmarks.

They pick a name, root and subnet that collide with no other lab, so a
test lab never touches the lab a developer runs."""
from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


def unavailable_reason() -> str | None:
    """Why the lab cannot run here, or None."""
    if os.geteuid() != 0:
        return 'the lab needs root (network and mount namespaces)'
    for tool in ('ip', 'unshare', 'nsenter'):
        if shutil.which(tool) is None:
            return f'the lab needs {tool}, which is not installed'
    probe = subprocess.run(['ip', 'netns', 'list'], capture_output=True,
                           text=True, check=False)
    if probe.returncode != 0:
        return f'"ip netns" is unavailable: {probe.stderr.strip()}'
    return None


def free_subnet() -> str:
    """A /24 that overlaps nothing on this machine (nor a running lab)."""
    from kubernetes_mgmt_lab import net
    from kubernetes_mgmt_lab.errors import LabError

    first, last = _third_octets()
    start = first + secrets.randbelow(max(1, (last - first) // 2))
    for third in range(start, last + 1):
        plan = net.AddressPlan.parse(f'10.10.{third}.0/24')
        try:
            net.check_subnet_free(plan, bridge='')
        except LabError:
            continue
        return str(plan.subnet)
    raise RuntimeError('no free 10.10.x.0/24 subnet for a test lab')


def _third_octets() -> tuple[int, int]:
    """The range of 10.10.X.0/24 this process picks from: with
    pytest-xdist, each worker has a share of its own, so that two labs
    made at the same moment never take the same subnet."""
    low, high = 200, 254
    worker = os.environ.get('PYTEST_XDIST_WORKER', '')
    count = int(os.environ.get('PYTEST_XDIST_WORKER_COUNT', '1') or 1)
    if not worker.startswith('gw') or count < 2:
        return low, high
    size = (high - low + 1) // count
    first = low + int(worker[2:]) % count * size
    return first, first + size - 1


def new_lab_args() -> dict:
    """Name, root and subnet of a throw-away lab."""
    return {'name': 'kt' + secrets.token_hex(3),
            'root': tempfile.mkdtemp(prefix='klab-test-', dir='/var/tmp'),
            'subnet': free_subnet()}


@contextlib.contextmanager
def throwaway_lab(masters: int = 1, workers: int = 1,
                  site: str | None = None, **options):
    """A lab with its own name, root and subnet, always torn down. With
    ``site`` (a services root) its VMs are a VNF stack in that root's
    real Heat, on a network of their own (``options``: ``storage``,
    ``anti_affinity``, ``role_passwords``); without, they are VMs and no
    stack (``options`` go to ``Lab.up``), for what needs no Heat."""
    if site is not None:
        with stack_lab(site, masters, workers, **options) as lab:
            yield lab
        return
    from kubernetes_mgmt_lab.manager import Lab

    args = new_lab_args()
    try:
        lab = Lab.up(masters=masters, workers=workers, **args, **options)
    except BaseException:
        shutil.rmtree(args['root'], ignore_errors=True)
        raise
    try:
        yield lab
    finally:
        lab.down()


@contextlib.contextmanager
def services(running: str | None, checkout: str) -> Iterator[str]:
    """The root of the lab's OpenStack services: ``running`` as it is,
    else services started now (with the plugin of ``checkout``) in a
    root of their own, stopped and removed at the end."""
    if running:
        yield running
        return
    from kubernetes_mgmt_lab.openstack import site

    root = tempfile.mkdtemp(prefix='kos-', dir='/var/tmp')
    try:
        site.up(root, checkout)
        yield root
    finally:
        site.down(root)
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def stack_lab(site: str, masters: int, workers: int, storage: bool = False,
              anti_affinity: bool = False,
              role_passwords: dict[str, str] | None = None):
    """A VNF stack of the services at ``site`` (vnf_stack.py), deleted
    with its network at the end; ``role_passwords``: role -> its VMs'
    password (their servers' adminPass)."""
    from kubernetes_mgmt_lab.openstack import vnf_stack
    from kubernetes_mgmt_lab.openstack.vnf_templates import Layout

    layout = Layout(masters, workers, storage, anti_affinity,
                    dict(role_passwords or {}))
    lab = vnf_stack.up(site, layout, 'kt' + secrets.token_hex(3),
                       free_subnet())
    try:
        yield lab
    finally:
        vnf_stack.down(lab)


def api_status(vim: dict, token: str) -> int:
    """HTTP status of an authenticated GET on a VIM's API server (``vim``:
    its ``auth_url`` and ``ssl_ca_cert``), trusting only the VIM's CA."""
    import ssl
    import urllib.error
    import urllib.request

    context = ssl.create_default_context(cadata=vim['ssl_ca_cert'])
    context.check_hostname = False
    request = urllib.request.Request(  # noqa: S310 - https only
        f"{vim['auth_url']}/api/v1/nodes",
        headers={'Authorization': f'Bearer {token}'})
    try:
        with urllib.request.urlopen(request, context=context,  # noqa: S310
                                    timeout=10) as reply:
            return reply.status
    except urllib.error.HTTPError as exc:
        return exc.code


@dataclass(frozen=True)
class LabVm:
    """A VM of a services root's lab (a server of its cloud)."""

    state: Any          # kubernetes_mgmt_lab.state.LabState
    host: Any           # kubernetes_mgmt_lab.state.LabHost


def lab_vm(root: Any, name: str, lab: int = 0) -> LabVm:
    """The lab VM ``name`` of lab ``lab`` of services root ``root``."""
    from kubernetes_mgmt_lab import state as lab_state
    from kubernetes_mgmt_lab.openstack import cloud

    state = lab_state.load(lab_state.state_path(cloud.lab_root(root, lab)))
    return LabVm(state, state.host(name))


@contextlib.contextmanager
def other_host_keys(vm: LabVm) -> Iterator[list[str]]:
    """Inside the block the VM's sshd presents new host keys, which its
    console does not show (as another machine on its address would);
    afterwards its own keys are back. Yields the new public keys."""
    from kubernetes_mgmt_lab import hosts

    ssh = hosts.disk_path(vm.host, '/etc/ssh')
    saved = {}
    for path in glob.glob(os.path.join(ssh, 'ssh_host_*')):
        with open(path, 'rb') as f:
            saved[path] = (f.read(), os.stat(path).st_mode & 0o777)
    try:
        yield hosts.replace_host_keys(vm.state, vm.host)
    finally:
        for path in glob.glob(os.path.join(ssh, 'ssh_host_*')):
            os.unlink(path)
        for path, (data, mode) in saved.items():
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            with os.fdopen(fd, 'wb') as f:
                f.write(data)
        hosts.stop_sshd(vm.state, vm.host)
        hosts.start_sshd(vm.state, vm.host)

"""Kubernetes emulated at the command level for the lab.

``install_commands`` puts stand-ins for kubeadm, kubectl, kubelet,
crictl, containerd, ctr, systemctl, apt-get, apt-mark, exportfs and
the kernel-touching tools (modprobe, sysctl, swapoff, ...) into a lab host's
private /usr/local/bin.  They share one cluster state in the lab's
cluster directory (``store``); each host keeps its own files (packages,
units, /etc/kubernetes) in its private directories.  HAProxy and
keepalived are not emulated: ``systemctl`` runs the real daemons; etcd
is real too (``etcd_server``: kubeadm starts it, etcdctl is Debian's),
and so are ``ctr`` and the containerd it talks to (``node_images``).
"""
from __future__ import annotations

import importlib
import os

from kubernetes_mgmt_lab import lazy

# Every emulated command imports this package first; its helpers are
# loaded on first use so a command pays only for the modules it needs
# (17 VMs share two cores in a benchmark).
_LAZY = {
    'LabConfig': 'config', 'set_install_delay': 'config',
    'set_install_delays': 'config',
    'update_config': 'config', 'clear_faults': 'faults',
    'inject_fault': 'faults', 'hold_commands': 'faults',
    'release_commands': 'faults', 'held_commands': 'faults',
    'fail_upgrade_node': 'faults', 'fail_upgrade_apply_midway': 'faults',
    'set_clock_offset': 'config', 'node_histories': 'view',
    'half_upgraded': 'view',
    'ClusterView': 'view',
    'expire_certificate_key': 'view', 'expire_tokens': 'view',
    'reset_cluster': 'view', 'set_host_down': 'view',
    'set_host_off': 'view',
}
__getattr__ = lazy.exports(__name__, _LAZY)


PACKAGE = 'kubernetes_mgmt_lab.emulated'
# command name -> module under this package
COMMANDS = {
    'kubeadm': 'kubeadm', 'kubectl': 'kubectl', 'kubelet': 'kubelet',
    'crictl': 'crictl', 'containerd': 'containerd', 'ctr': 'ctr',
    'systemctl': 'systemctl', 'apt-get': 'apt_get', 'apt-mark': 'apt_mark',
    'modprobe': 'modprobe', 'lsmod': 'lsmod', 'sysctl': 'sysctl',
    'swapoff': 'swapoff', 'swapon': 'swapon', 'hostname': 'hostname',
    'hostnamectl': 'hostnamectl', 'reboot': 'reboot',
    'shutdown': 'reboot', 'poweroff': 'reboot', 'dpkg': 'dpkg',
    'dpkg-query': 'dpkg', 'exportfs': 'exportfs',
}

__all__ = [
    'COMMANDS',
    'ClusterView',
    'LabConfig',
    'agent_wrapper_script',
    'clear_faults',
    'expire_certificate_key',
    'expire_tokens',
    'fail_upgrade_apply_midway',
    'fail_upgrade_node',
    'half_upgraded',
    'held_commands',
    'hold_commands',
    'import_paths',
    'inject_fault',
    'install_commands',
    'node_histories',
    'release_commands',
    'reset_cluster',
    'set_clock_offset',
    'set_host_down',
    'set_host_off',
    'set_install_delay',
    'set_install_delays',
    'update_config',
    'wrapper_script',
]


def wrapper_script(command: str, python: str,
                   import_paths: list[str] | tuple[str, ...] = ()) -> str:
    """The host's ``command``: a shell script running the stand-in's
    ``cli()``. ``-I -S`` (isolated, no site processing) and ``-c`` rather
    than ``-m`` keep the interpreter's start-up to its minimum: a cluster
    starts these hundreds of times on the lab's two cores. -I also keeps
    the caller's working directory off sys.path, so a stray file there
    cannot shadow our modules. ``import_paths``: where the lab, the
    product and their libraries are installed (-S leaves them out)."""
    import shlex  # not on the path of every command's start-up
    module = f'{PACKAGE}.{COMMANDS[command]}'
    code = (f'import sys; sys.path += {list(import_paths)!r}; '
            f'from {module} import cli; cli()')
    return ('#!/bin/sh\n'
            f'# lab stand-in for {command} (kubernetes_mgmt emulation)\n'
            f'KLAB_ARGV0={shlex.quote(command)} '
            f'exec {shlex.quote(python)} -I -S -c {shlex.quote(code)} '
            '"$@"\n')


def import_paths() -> list[str]:
    """The directories an interpreter started with -S needs on sys.path:
    this installation's site-packages and wherever the lab and the
    product were imported from (a source checkout, for instance)."""
    import sysconfig
    paths = [sysconfig.get_paths()[key] for key in ('purelib', 'platlib')]
    for package in ('kubernetes_mgmt_lab', 'kubernetes_mgmt'):
        module = importlib.import_module(package)
        paths.append(os.path.dirname(os.path.dirname(module.__file__)))
    return list(dict.fromkeys(os.path.realpath(p) for p in paths))


def agent_wrapper_script(command: str, client: str) -> str:
    """The host's ``command`` run by the host's command agent
    (``agent``) through its client, the executable ``client``."""
    import shlex
    module = f'{PACKAGE}.{COMMANDS[command]}'
    return ('#!/bin/sh\n'
            f'# lab stand-in for {command} (kubernetes_mgmt emulation), '
            'run by the host\'s command agent\n'
            f'exec {shlex.quote(client)} {shlex.quote(command)} {module} '
            '"$@"\n')


def install_commands(bin_dir: str, python: str, agent: bool = False) -> None:
    """Write the stand-in commands into ``bin_dir`` (a host's private
    /usr/local/bin), each running its module's ``cli()``: through the
    host's command agent with ``agent`` (a lab host, whose init runs one)
    if this machine can build its client, else in a new interpreter."""
    if not os.path.isabs(python):
        raise ValueError(f'python must be an absolute path: {python!r}')
    os.makedirs(bin_dir, exist_ok=True)
    paths = import_paths()
    client = None
    if agent:
        from kubernetes_mgmt_lab.emulated.agent_client import client_path
        client = client_path(python, paths)
    for command in COMMANDS:
        path = os.path.join(bin_dir, command)
        tmp = f'{path}.tmp'
        with open(tmp, 'w', encoding='utf-8') as f:
            f.write(agent_wrapper_script(command, client) if client
                    else wrapper_script(command, python, paths))
        os.chmod(tmp, 0o755)  # noqa: S103 - commands must be executable
        os.replace(tmp, path)

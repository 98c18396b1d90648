"""HAProxy and keepalived are really run on the lab masters: these start,
stop and reload the real daemons inside the host (the command already
runs in the host's namespaces), with pid files in the host's /run.
"""
from __future__ import annotations

import os
import signal

from kubernetes_mgmt_lab.emulated.host import host_path

START_TIMEOUT = 10.0


class Daemon:
    """A daemon systemctl really runs. A plain class: systemctl imports
    this module for every unit, and dataclasses cost a short command's
    whole start-up again."""

    def __init__(self, unit: str, binary: str, config: str, pidfile: str):
        self.unit = unit
        self.binary = binary
        self.config = config            # path as seen on the VM
        self.pidfile = pidfile

    def cfg(self) -> str:
        return host_path(self.config)

    def pid_path(self) -> str:
        return host_path(self.pidfile)


HAPROXY = Daemon('haproxy', 'haproxy', '/etc/haproxy/haproxy.cfg',
                 '/run/haproxy.pid')
KEEPALIVED = Daemon('keepalived', 'keepalived',
                    '/etc/keepalived/keepalived.conf',
                    '/run/keepalived.pid')
DAEMONS = {d.unit: d for d in (HAPROXY, KEEPALIVED)}


class DaemonError(Exception):
    """The daemon refused to start; ``output`` is what it said."""

    def __init__(self, output: str):
        super().__init__(output)
        self.output = output


def _alive(pid: int, binary: str) -> bool:
    try:
        with open(f'/proc/{pid}/comm', encoding='utf-8') as f:
            comm = f.read().strip()
        with open(f'/proc/{pid}/stat', encoding='utf-8') as f:
            zombie = f.read().rsplit(')', 1)[1].split()[0] == 'Z'
    except OSError:
        return False
    # Guard against a recycled pid: it must still be that program.
    return comm.startswith(binary[:15]) and not zombie


def pids(daemon: Daemon) -> list[int]:
    try:
        with open(daemon.pid_path(), encoding='utf-8') as f:
            found = [int(w) for w in f.read().split() if w.isdigit()]
    except OSError:
        return []
    return [p for p in found if _alive(p, daemon.binary)]


def is_running(daemon: Daemon) -> bool:
    return bool(pids(daemon))


def log_path(daemon: Daemon) -> str:
    return host_path(f'/var/log/klab/{daemon.unit}.log')


def _run(argv: list[str], daemon: Daemon) -> tuple[int, str]:
    """Run ``argv``; output goes to a log file, not a pipe, because a
    daemon that kept the pipe open would make us wait for it forever.
    """
    import subprocess  # only when a real daemon is (re)started
    path = log_path(daemon)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'a+', encoding='utf-8') as log:
        start = log.seek(0, os.SEEK_END)
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=log,
                              stderr=subprocess.STDOUT, timeout=60,
                              check=False)
        log.seek(start)
        return proc.returncode, log.read().strip()


def check_config(daemon: Daemon) -> None:
    if daemon is HAPROXY:
        argv = ['haproxy', '-c', '-f', daemon.cfg()]
    else:
        argv = ['keepalived', '-t', '-f', daemon.cfg()]
    if not os.path.exists(daemon.cfg()):
        raise DaemonError(f'{daemon.cfg()}: No such file or directory')
    rc, output = _run(argv, daemon)
    if rc != 0:
        raise DaemonError(output)


def _start_argv(daemon: Daemon, old: list[int]) -> list[str]:
    if daemon is HAPROXY:
        argv = ['haproxy', '-D', '-f', daemon.cfg(), '-p',
                daemon.pid_path()]
        return [*argv, '-sf', *map(str, old)] if old else argv
    run = os.path.dirname(daemon.pid_path())
    return ['keepalived', '-f', daemon.cfg(), '-p', daemon.pid_path(),
            '-r', os.path.join(run, 'keepalived_vrrp.pid'),
            '-c', os.path.join(run, 'keepalived_checkers.pid')]


def _wait(predicate, timeout: float = START_TIMEOUT) -> bool:
    from kubernetes_mgmt.remote.retry import wait_until
    return wait_until(predicate, deadline=timeout, ceiling=0.25)


def _prepare_dirs(daemon: Daemon) -> None:
    # What the packaged units' RuntimeDirectory= would create.
    os.makedirs(os.path.dirname(daemon.pid_path()), exist_ok=True)
    if daemon is HAPROXY:
        os.makedirs(host_path('/run/haproxy'), exist_ok=True)
        os.makedirs(host_path('/var/lib/haproxy'), exist_ok=True)


def start(daemon: Daemon, old: list[int] | None = None) -> None:
    if is_running(daemon) and old is None:
        return
    check_config(daemon)
    _prepare_dirs(daemon)
    if old is None:
        _remove_pidfile(daemon)
    rc, output = _run(_start_argv(daemon, old or []), daemon)
    if rc != 0:
        raise DaemonError(output)
    def fresh():
        return (any(p not in (old or []) for p in pids(daemon)))
    if not _wait(fresh):
        raise DaemonError(f'{daemon.unit} did not write its pid file')


def _remove_pidfile(daemon: Daemon) -> None:
    try:
        os.unlink(daemon.pid_path())
    except FileNotFoundError:
        pass


def stop(daemon: Daemon) -> None:
    running = pids(daemon)
    for pid in running:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    _wait(lambda: not any(_alive(p, daemon.binary) for p in running))
    for pid in running:
        if _alive(pid, daemon.binary):
            os.kill(pid, signal.SIGKILL)
    _remove_pidfile(daemon)


def reload(daemon: Daemon) -> None:
    """haproxy: new process takes over (-sf); keepalived: SIGHUP."""
    check_config(daemon)
    running = pids(daemon)
    if daemon is HAPROXY:
        start(daemon, old=running)
        return
    for pid in running[:1]:
        os.kill(pid, signal.SIGHUP)

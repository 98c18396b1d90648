"""The init of one lab host: ``python -m kubernetes_mgmt_lab.hostinit``.

Runs inside the host's namespaces, starts the host's OpenSSH server (and,
with ``--node-exporter-port``, Debian's Prometheus node exporter, as a VM
image that ships one would), the agent that runs its emulated commands
(``emulated.agent``), at a boot after the first its enabled units
(``emulated.boot``) and, as a child subreaper, reaps every orphan of
the host (daemons that sessions start) the way a VM's init does; this
machine's PID 1 may not reap.
Signals: SIGUSR1 starts sshd, SIGUSR2 stops it, SIGTERM stops the host.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import signal
import sys
import time

from kubernetes_mgmt.remote.retry import wait_until

PIDFILE = '/run/klab-init.pid'
SSHD = '/usr/sbin/sshd'
SSHD_LOG = '/var/log/sshd.log'
SSHD_CONFIG = '/etc/ssh/sshd_config'
NODE_EXPORTER = '/usr/bin/prometheus-node-exporter'
NODE_EXPORTER_LOG = '/var/log/node-exporter.log'
UNITS_DB = '/var/lib/klab/units.json'     # emulated.units' records
START_SSHD = signal.SIGUSR1
STOP_SSHD = signal.SIGUSR2
_PR_SET_CHILD_SUBREAPER = 36
_HANDLED = {signal.SIGCHLD, START_SSHD, STOP_SSHD,
            signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
_ENV = {'PATH': '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:'
                '/sbin:/bin',
        'LANG': 'C.UTF-8'}


def _log(message: str) -> None:
    print(f'{time.strftime("%H:%M:%S")} init: {message}', flush=True)


def _reaped_within(pid: int, seconds: float) -> bool:
    return wait_until(lambda: os.waitpid(pid, os.WNOHANG)[0] == pid,
                      deadline=seconds, first=0.01, ceiling=0.1)


class HostInit:
    def __init__(self, sshd_delay: float, node_exporter_port: int = 0):
        self.sshd_pid: int | None = None
        self.agent_pid: int | None = None
        self.exporter_pid: int | None = None
        self.exporter_port = node_exporter_port
        # When a delayed sshd start is due (a slowly booting VM).
        self.sshd_due: float | None = time.monotonic() + sshd_delay

    def start_sshd(self) -> None:
        self.sshd_due = None
        if self.sshd_pid is not None:
            return
        argv = [SSHD, '-D', '-E', SSHD_LOG, '-f', SSHD_CONFIG]
        self.sshd_pid = os.posix_spawn(
            SSHD, argv, _ENV, setsigmask=(), setsigdef=(signal.SIGPIPE,))
        _log(f'sshd started, pid {self.sshd_pid}')

    def stop_sshd(self) -> None:
        self.sshd_due = None
        if self.sshd_pid is None:
            return
        # Reap now so that a start right after a stop is not ignored.
        for sig in (signal.SIGTERM, signal.SIGKILL):
            os.kill(self.sshd_pid, sig)
            if _reaped_within(self.sshd_pid, 5.0):
                break
        _log(f'sshd stopped, pid {self.sshd_pid}')
        self.sshd_pid = None

    def start_exporter(self) -> None:
        """The node exporter, with one cheap collector: what matters is
        that it answers while the VM runs."""
        if not self.exporter_port or self.exporter_pid is not None:
            return
        if not os.path.exists(NODE_EXPORTER):
            _log(f'no {NODE_EXPORTER}: this VM runs no node exporter')
            self.exporter_port = 0
            return
        argv = [NODE_EXPORTER, '--collector.disable-defaults',
                '--collector.time',
                f'--web.listen-address=:{self.exporter_port}']
        with open(NODE_EXPORTER_LOG, 'ab') as log:
            self.exporter_pid = os.posix_spawn(
                NODE_EXPORTER, argv, _ENV, setsigmask=(),
                setsigdef=(signal.SIGPIPE,),
                file_actions=[(os.POSIX_SPAWN_DUP2, log.fileno(), 1),
                              (os.POSIX_SPAWN_DUP2, log.fileno(), 2)])
        _log(f'node exporter started on port {self.exporter_port}, pid '
             f'{self.exporter_pid}')

    def stop_exporter(self) -> None:
        if self.exporter_pid is not None:
            os.kill(self.exporter_pid, signal.SIGTERM)
            if not _reaped_within(self.exporter_pid, 5.0):
                os.kill(self.exporter_pid, signal.SIGKILL)
                _reaped_within(self.exporter_pid, 5.0)
            self.exporter_pid = None

    def start_agent(self) -> None:
        """The command agent, forked from this process (which has Python
        started already). Without it the commands start from scratch:
        slower, not different."""
        pid = os.fork()
        if pid == 0:
            try:
                from kubernetes_mgmt_lab.emulated import agent
                agent.serve()   # returns only by an exception
            except BaseException as e:
                _log(f'command agent failed: {e!r}')
            os._exit(1)
        self.agent_pid = pid
        _log(f'command agent started, pid {pid}')

    def stop_agent(self) -> None:
        if self.agent_pid is not None:
            os.kill(self.agent_pid, signal.SIGKILL)
            _reaped_within(self.agent_pid, 5.0)
            self.agent_pid = None

    def boot_units(self) -> None:
        """A host booted again (it has unit records): start its enabled
        units in the background, as systemd does (``emulated.boot``)."""
        if not os.path.exists(UNITS_DB):
            return
        argv = [sys.executable, '-m', 'kubernetes_mgmt_lab.emulated.boot']
        pid = os.posix_spawn(sys.executable, argv, dict(os.environ),
                             setsigmask=(), setsigdef=(signal.SIGPIPE,))
        _log(f'enabled units starting, pid {pid}')

    def reap(self) -> None:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.sshd_pid:
                _log(f'sshd exited, pid {pid}')
                self.sshd_pid = None
            elif pid == self.agent_pid:
                _log(f'command agent exited, pid {pid}')
                self.agent_pid = None
            elif pid == self.exporter_pid:
                _log(f'node exporter exited, pid {pid}')
                self.exporter_pid = None

    def run(self) -> int:
        self.start_agent()
        self.start_exporter()
        self.boot_units()
        while True:
            timeout = None
            if self.sshd_due is not None:
                timeout = max(0.0, self.sshd_due - time.monotonic())
            info = (signal.sigtimedwait(_HANDLED, timeout)
                    if timeout is not None else signal.sigwaitinfo(_HANDLED))
            if info is None:
                self.start_sshd()
            elif info.si_signo == signal.SIGCHLD:
                self.reap()
            elif info.si_signo == START_SSHD:
                self.start_sshd()
            elif info.si_signo == STOP_SSHD:
                self.stop_sshd()
            else:
                self.stop_sshd()
                self.stop_exporter()
                self.stop_agent()
                return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog='kubernetes_mgmt_lab.hostinit')
    parser.add_argument('--sshd-delay', type=float, default=0.0,
                        help='seconds before sshd starts (a slow boot)')
    parser.add_argument('--node-exporter-port', type=int, default=0,
                        help='start the node exporter on this port (0: '
                             'none)')
    args = parser.parse_args(argv)
    # Signals are taken synchronously; children get a clean mask.
    signal.pthread_sigmask(signal.SIG_BLOCK, _HANDLED)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        _log('cannot become a child subreaper; orphans stay unreaped')
    with open(PIDFILE, 'w', encoding='utf-8') as f:
        f.write(f'{os.getpid()}\n')
    _log(f'host up, sshd in {args.sshd_delay:g} s')
    return HostInit(args.sshd_delay, args.node_exporter_port).run()


if __name__ == '__main__':
    sys.exit(main())

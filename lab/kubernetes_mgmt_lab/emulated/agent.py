"""A lab host's command agent: the emulated commands, run by workers
forked from one warm Python process.

Starting an interpreter and importing a stand-in costs ~25 ms of CPU
before the command does anything; a cluster's install runs hundreds of
commands on the lab's two cores. The host's init (``hostinit``) starts
this agent inside the host's namespaces. The commands' wrappers exec the
``klab-run`` client (``klab_run.c``), which connects to ``SOCKET`` and
sends its umask with its standard streams attached. The agent takes the
rest from the kernel: the client's user and groups, command line,
environment and working directory. It hands the command to an idle
worker (``agent_worker``) if it runs as the agent's user, or forks a new
one; the worker becomes that command (identity, streams, directory,
environment) and runs the stand-in's ``cli()``, every module it needs
imported already (the agent loads them when it starts, while the host
boots). The command's exit status, or the signal that ended its
worker, goes back to the client, which ends the same way; the signals
the client gets are passed on (the worker is then not reused), and a
client that dies takes its command, and the worker, with it.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import os
import selectors
import signal
import socket
import struct
import sys

from kubernetes_mgmt_lab.emulated import COMMANDS, PACKAGE, agent_worker
from kubernetes_mgmt_lab.emulated.agent_worker import Job

SOCKET = '/run/klab-agent.sock'
MODULES = frozenset(f'{PACKAGE}.{m}' for m in COMMANDS.values())
# Imported before the first fork: every stand-in, and what kubeadm loads
# per sub-command (cryptography, YAML, the API server: ~0.2 s of CPU
# that each node's join would otherwise pay, as it runs only once there).
PRELOAD = (*sorted(MODULES), *(f'{PACKAGE}.{m}' for m in (
    'kubeadm_init', 'kubeadm_join', 'kubeadm_reset', 'kubeadm_token',
    'apiserver')))
REQUEST_TIMEOUT = 10.0
# Idle workers kept per host: commands seldom overlap on one VM.
MAX_IDLE = 2
_UCRED = struct.Struct('3i')     # pid, uid, gid (SO_PEERCRED)


def _job(conn: socket.socket, fds: list[int], umask: int) -> Job:
    """The command the client on ``conn`` asked for: what it sent, and
    the rest from the kernel."""
    raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                          _UCRED.size)
    pid, uid, gid = _UCRED.unpack(raw)
    argv = _proc_strings(pid, 'cmdline')
    if len(argv) < 3 or argv[2] not in MODULES:
        raise ValueError(f'not a lab command: {argv[1:3]}')
    env = dict(e.partition('=')[::2] for e in _proc_strings(pid, 'environ'))
    return Job(name=argv[1], module=argv[2], args=argv[3:], env=env,
               pid=pid, umask=umask, fds=fds, uid=uid, gid=gid,
               groups=_groups(pid))


def _proc_strings(pid: int, name: str) -> list[str]:
    with open(f'/proc/{pid}/{name}', 'rb') as f:
        raw = f.read()
    return [os.fsdecode(s) for s in raw.split(b'\0')[:-1]]


def _groups(pid: int) -> list[int]:
    with open(f'/proc/{pid}/status', encoding='ascii') as f:
        for line in f:
            if line.startswith('Groups:'):
                return [int(g) for g in line.split()[1:]]
    return []


def _log(message: str) -> None:
    print(f'agent: {message}', file=sys.stderr, flush=True)


def _receive(conn: socket.socket) -> Job:
    conn.settimeout(REQUEST_TIMEOUT)
    data, fds, _, _ = socket.recv_fds(conn, 64, 3)
    try:
        if len(fds) != 3 or not data.endswith(b'\n'):
            raise ValueError('malformed request')
        return _job(conn, fds, int(data, 8))
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


class Worker:
    """A worker process (``agent_worker``) and the client whose command
    it runs, if any."""

    def __init__(self, pid: int, control: socket.socket):
        self.pid = pid
        self.control = control
        self.client: socket.socket | None = None
        self.retire = False     # a signal reached it: not for reuse


class Agent:
    def __init__(self, path: str):
        self.selector = selectors.DefaultSelector()
        self.listener = _listen(path)
        self.selector.register(self.listener, selectors.EVENT_READ,
                               self._accept)
        self.user = os.getuid()
        self.idle: list[Worker] = []

    def serve(self) -> None:
        while True:
            for key, _ in self.selector.select():
                # An earlier event of the same batch may have closed this
                # one's descriptor (a worker ended as its client sent a
                # signal or died): its key is then no longer registered.
                if self.selector.get_map().get(key.fd) is key:
                    key.data()

    def _accept(self) -> None:
        conn, _ = self.listener.accept()
        try:
            job = _receive(conn)
            try:
                worker = self._assign(job)
            finally:
                for fd in job.fds:
                    os.close(fd)
        except Exception as e:   # a bad request must not end the agent
            _log(f'request refused: {e!r}')
            # The client then starts the command without the agent.
            with contextlib.suppress(OSError):
                conn.sendall(b'refused\n')
            conn.close()
            return
        conn.setblocking(False)
        worker.client = conn
        self.selector.register(conn, selectors.EVENT_READ,
                               functools.partial(self._from_client, worker))

    def _assign(self, job: Job) -> Worker:
        """An idle worker, if the command runs as the agent's user (the
        workers keep that user), else a new one."""
        while self.idle and job.uid == self.user:
            worker = self.idle.pop()
            try:
                socket.send_fds(worker.control, [job.encode()], job.fds)
                return worker
            except OSError:
                pass    # it died idle: its end of file is handled apart
        return self._fork(job)

    def _fork(self, job: Job) -> Worker:
        mine, theirs = socket.socketpair(socket.AF_UNIX,
                                         socket.SOCK_SEQPACKET)
        try:
            pid = os.fork()
        except OSError:
            mine.close()
            theirs.close()
            raise
        if pid == 0:
            agent_worker.work(job, theirs)   # never returns
        theirs.close()
        worker = Worker(pid, mine)
        self.selector.register(mine, selectors.EVENT_READ,
                               functools.partial(self._from_worker, worker))
        return worker

    def _from_client(self, worker: Worker) -> None:
        """Signal numbers, one byte each; end of file: the client died,
        and its command dies with it."""
        conn = worker.client
        try:
            data = conn.recv(64)
        except BlockingIOError:
            return
        except OSError:
            data = b''
        if not data:
            self._release(worker)
            _kill(worker.pid, signal.SIGKILL)
            return
        worker.retire = True
        for sig in data:
            _kill(worker.pid, sig)

    def _from_worker(self, worker: Worker) -> None:
        """The exit status of its command, the worker now idle; or end of
        file: the worker ended, and its status is the command's."""
        try:
            data = worker.control.recv(64)
        except OSError:
            data = b''
        if data:
            self._reply(worker, f'exit {int(data)}\n')
            self._idle(worker)
            return
        self.selector.unregister(worker.control)
        worker.control.close()
        _, status = os.waitpid(worker.pid, 0)
        if worker in self.idle:
            self.idle.remove(worker)
        code = os.waitstatus_to_exitcode(status)
        self._reply(worker, f'exit {code}\n' if code >= 0
                    else f'signal {-code}\n')

    def _idle(self, worker: Worker) -> None:
        if worker.retire or len(self.idle) >= MAX_IDLE:
            _kill(worker.pid, signal.SIGKILL)   # its end of file follows
        else:
            self.idle.append(worker)

    def _reply(self, worker: Worker, reply: str) -> None:
        conn = self._release(worker)
        if conn is None:
            return
        try:
            conn.setblocking(True)
            conn.sendall(reply.encode())
        except OSError:
            pass
        conn.close()

    def _release(self, worker: Worker) -> socket.socket | None:
        """The worker's client, no longer watched; None if it has none."""
        conn, worker.client = worker.client, None
        if conn is not None:
            self.selector.unregister(conn)
        return conn


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (OSError, ValueError):
        pass    # gone already, or not a signal


def _listen(path: str) -> socket.socket:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    # Every user of the host runs commands (as themselves).
    os.chmod(path, 0o666)  # noqa: S103
    listener.listen(64)
    return listener


def serve(path: str = SOCKET) -> None:
    """Serve the host's commands until killed."""
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    agent = Agent(path)     # clients wait in the backlog meanwhile
    for name in PRELOAD:
        importlib.import_module(name)
    gc.freeze()     # fewer copied pages in the children
    agent.serve()


if __name__ == '__main__':
    serve(*sys.argv[1:])

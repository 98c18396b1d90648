"""A lab host's command agent: the emulated commands, forked from one warm
Python process.

Starting an interpreter and importing a stand-in costs ~25 ms of CPU
before the command does anything; a cluster's install runs hundreds of
commands on the lab's two cores. The host's init (``hostinit``) starts
this agent inside the host's namespaces. The commands' wrappers exec the
``klab-run`` client (``klab_run.c``), which connects to ``SOCKET`` and
sends its umask with its standard streams attached. The agent takes the
rest from the kernel: the client's user and groups, command line,
environment and working directory. It forks; the child becomes that
command (identity, streams, directory, environment) and runs the
stand-in's ``cli()``, every module it needs imported already (the agent
loads them when it starts, while the host boots). The child's exit
status, or the signal that ended it, goes back to the client, which ends
the same way; the signals the client gets are passed on, and a client
that dies takes its command with it.
"""
from __future__ import annotations

import contextlib
import gc
import importlib
import os
import selectors
import signal
import socket
import struct
import sys
import traceback

from kubernetes_mgmt_lab.emulated import COMMANDS, PACKAGE

SOCKET = '/run/klab-agent.sock'
MODULES = frozenset(f'{PACKAGE}.{m}' for m in COMMANDS.values())
# Imported before the first fork: every stand-in, and what kubeadm loads
# per sub-command (cryptography, YAML, the API server: ~0.2 s of CPU
# that each node's join would otherwise pay, as it runs only once there).
PRELOAD = (*sorted(MODULES), *(f'{PACKAGE}.{m}' for m in (
    'kubeadm_init', 'kubeadm_join', 'kubeadm_reset', 'kubeadm_token',
    'apiserver')))
REQUEST_TIMEOUT = 10.0
_UCRED = struct.Struct('3i')     # pid, uid, gid (SO_PEERCRED)


class Request:
    """One command a client asked for."""

    def __init__(self, conn: socket.socket, fds: list[int], umask: int):
        self.conn = conn
        self.fds = fds
        self.umask = umask
        raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                              _UCRED.size)
        self.pid, self.uid, self.gid = _UCRED.unpack(raw)
        argv = _proc_strings(self.pid, 'cmdline')
        if len(argv) < 3 or argv[2] not in MODULES:
            raise ValueError(f'not a lab command: {argv[1:3]}')
        self.name, self.module, self.args = argv[1], argv[2], argv[3:]
        self.env = dict(e.partition('=')[::2]
                        for e in _proc_strings(self.pid, 'environ'))
        self.groups = _groups(self.pid)


class Running:
    """A forked command and the client waiting for it."""

    def __init__(self, request: Request, pid: int):
        self.conn = request.conn
        self.pid = pid
        self.pidfd = os.pidfd_open(pid)
        self.client_gone = False


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


def _receive(conn: socket.socket) -> Request:
    conn.settimeout(REQUEST_TIMEOUT)
    data, fds, _, _ = socket.recv_fds(conn, 64, 3)
    try:
        if len(fds) != 3 or not data.endswith(b'\n'):
            raise ValueError('malformed request')
        return Request(conn, fds, int(data, 8))
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


def _become(request: Request) -> None:
    """In the child: take the client's streams, directory, identity and
    environment, and drop every descriptor of the agent."""
    for target, fd in enumerate(request.fds):
        os.dup2(fd, target)
    _close_from(3)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.chdir(f'/proc/{request.pid}/cwd')
    os.umask(request.umask)
    if (request.uid, request.gid) != (os.getuid(), os.getgid()):
        os.setgroups(request.groups)
        os.setgid(request.gid)
        os.setuid(request.uid)
    os.environ.clear()
    os.environ.update(request.env, KLAB_ARGV0=request.name)
    sys.argv = [request.name, *request.args]


def _close_from(low: int) -> None:
    """Close every descriptor from ``low`` up: those open, as the kernel
    lists them (os.closerange up to the limit costs ~1 ms a command
    here)."""
    for name in os.listdir('/proc/self/fd'):
        fd = int(name)
        if fd >= low:
            try:
                os.close(fd)
            except OSError:
                pass    # the listing's own descriptor, closed already


def _run_child(request: Request) -> int:
    try:
        _become(request)
        sys.modules[request.module].cli()
        code = 0
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:   # as an interpreter would report it
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            pass
    return code


def _start(request: Request) -> Running:
    try:
        pid = os.fork()
        if pid == 0:
            os._exit(_run_child(request))
    finally:
        for fd in request.fds:
            os.close(fd)
    request.conn.setblocking(False)
    return Running(request, pid)


class Agent:
    def __init__(self, path: str):
        self.selector = selectors.DefaultSelector()
        self.listener = _listen(path)
        self.selector.register(self.listener, selectors.EVENT_READ)

    def serve(self) -> None:
        while True:
            for key, _ in self.selector.select():
                # An earlier event of the same batch may have closed this
                # one's connection (the command ended as its client sent
                # a signal or died): its key is then no longer registered.
                if self.selector.get_map().get(key.fd) is not key:
                    continue
                if key.fileobj is self.listener:
                    self._accept()
                elif key.fileobj is key.data.conn:
                    self._from_client(key.data)
                else:
                    self._ended(key.data)

    def _accept(self) -> None:
        conn, _ = self.listener.accept()
        try:
            running = _start(_receive(conn))
        except Exception as e:   # a bad request must not end the agent
            _log(f'request refused: {e!r}')
            # The client then starts the command without the agent.
            with contextlib.suppress(OSError):
                conn.sendall(b'refused\n')
            conn.close()
            return
        self.selector.register(conn, selectors.EVENT_READ, running)
        self.selector.register(running.pidfd, selectors.EVENT_READ, running)

    def _from_client(self, running: Running) -> None:
        """Signal numbers, one byte each; end of file: the client died,
        and its command dies with it."""
        try:
            data = running.conn.recv(64)
        except BlockingIOError:
            return
        except OSError:
            data = b''
        for sig in data:
            _kill(running.pid, sig)
        if not data:
            running.client_gone = True
            self.selector.unregister(running.conn)
            _kill(running.pid, signal.SIGKILL)

    def _ended(self, running: Running) -> None:
        _, status = os.waitpid(running.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        self.selector.unregister(running.pidfd)
        os.close(running.pidfd)
        if not running.client_gone:
            self.selector.unregister(running.conn)
            reply = f'exit {code}\n' if code >= 0 else f'signal {-code}\n'
            try:
                running.conn.setblocking(True)
                running.conn.sendall(reply.encode())
            except OSError:
                pass
        running.conn.close()


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

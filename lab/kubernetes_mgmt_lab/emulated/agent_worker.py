"""The command agent's worker: a process forked from the agent that runs
one emulated command at a time and, when a command left it as it found
it, waits for the next instead of exiting.

Forking the 35 MB agent and tearing the child down again cost ~10 ms of
CPU per command, far more than most stand-ins' own work; a worker pays
the fork and the copy-on-write faults once. What a command takes from
its caller is set anew for each one: standard streams (fresh Python
stream objects over the caller's descriptors), working directory,
umask, environment and command line. A command that changed what the
next one would inherit ends its worker as the forked command did: one
that ran as another user, left a thread or a child process behind (a
daemon it started is then adopted by the host's init, as before),
raised past the stand-in's error handling, or could not flush its
output.

The worker and the agent speak over a SOCK_SEQPACKET pair: the agent
sends a job (``Job.encode``, with the caller's three descriptors), the
worker answers with the exit status when it can take another. A worker
that exits instead: the agent reads the status from the process.
"""
from __future__ import annotations

import io
import json
import os
import signal
import socket
import sys
import traceback

JOB_BUFFER = 1 << 20    # an environment and command line, as JSON


class Job:
    """One command a client asked for, as the worker runs it. A plain
    class: the agent builds one per command."""

    def __init__(self, name: str, module: str, args: list[str],
                 env: dict[str, str], pid: int, umask: int,
                 fds: list[int], uid: int, gid: int, groups: list[int]):
        self.name = name
        self.module = module
        self.args = args
        self.env = env
        self.pid = pid       # the client's, for its working directory
        self.umask = umask
        self.fds = fds
        self.uid = uid
        self.gid = gid
        self.groups = groups

    def encode(self) -> bytes:
        """Every field but the descriptors, which travel beside it."""
        return json.dumps({k: v for k, v in vars(self).items()
                           if k != 'fds'}).encode()

    @classmethod
    def decode(cls, data: bytes, fds: list[int]) -> Job:
        return cls(fds=fds, **json.loads(data))


def work(job: Job, control: socket.socket) -> None:
    """Run ``job``, then the jobs the agent sends, until a command ends
    this worker; never returns, not even by an exception (a signal
    passed on as the worker went idle): this process is a fork of the
    agent."""
    try:
        _serve(job, control)
    finally:
        os._exit(1)


def _serve(job: Job, control: socket.socket) -> None:
    _close_from(3, keep={control.fileno(), *job.fds})
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    user = os.getuid()
    while True:
        code, clean = _run(job)
        # A worker that gave up its user cannot take that user's
        # commands any more; groups it can change back.
        if not clean or os.getuid() != user or _left_behind():
            os._exit(code)
        _reset(control.fileno())
        try:
            control.send(b'%d' % code)
            data, fds, _, _ = socket.recv_fds(control, JOB_BUFFER, 3)
        except OSError:
            os._exit(code)
        if not data or len(fds) != 3:
            os._exit(0)     # the agent is gone
        job = Job.decode(data, fds)


def _run(job: Job) -> tuple[int, bool]:
    """The command's exit status, and whether it ended the way a stand-in
    ends (an exit status, its output flushed)."""
    clean = True
    try:
        _become(job)
        sys.modules[job.module].cli()
        code = 0
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:   # as an interpreter would report it
        traceback.print_exc()
        code, clean = 1, False
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            clean = False   # its buffer would go to the next command
    return code, clean


def _become(job: Job) -> None:
    """Take the client's streams, directory, identity and environment."""
    for target, fd in enumerate(job.fds):
        os.dup2(fd, target)
        os.close(fd)
    _new_streams()
    os.chdir(f'/proc/{job.pid}/cwd')
    os.umask(job.umask)
    if (job.gid, set(job.groups)) != (os.getgid(), set(os.getgroups())):
        os.setgroups(job.groups)
        os.setgid(job.gid)
    if job.uid != os.getuid():
        os.setuid(job.uid)
    os.environ.clear()
    os.environ.update(job.env, KLAB_ARGV0=job.name)
    sys.argv = [job.name, *job.args]


def _new_streams() -> None:
    """Python's standard streams over fds 0-2, made like the agent's own:
    nothing an earlier command read ahead or left unwritten carries
    over."""
    made = []
    for fd, old in enumerate((sys.__stdin__, sys.__stdout__,
                              sys.__stderr__)):
        raw = open(fd, 'rb' if fd == 0 else 'wb', closefd=False)
        made.append(io.TextIOWrapper(
            raw, encoding=getattr(old, 'encoding', 'utf-8'),
            errors=getattr(old, 'errors', 'strict'),
            line_buffering=getattr(old, 'line_buffering', False)))
    sys.stdin, sys.stdout, sys.stderr = made


def _left_behind() -> bool:
    """A thread, or a child process (running or unreaped), the next
    command would share this process with."""
    tasks = os.listdir('/proc/self/task')
    if len(tasks) != 1:
        return True
    with open(f'/proc/self/task/{tasks[0]}/children', encoding='ascii') as f:
        return bool(f.read().split())


def _reset(control: int) -> None:
    """Between commands: hold no descriptor of the last caller (a pipe
    held open would keep its reader waiting) nor any the command left
    open, and no directory."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in range(3):
        os.dup2(null, fd)
    os.close(null)
    _close_from(3, keep={control})
    os.chdir('/')


def _close_from(low: int, keep: set[int]) -> None:
    """Close every descriptor from ``low`` up but those in ``keep``: those
    open, as the kernel lists them (os.closerange up to the limit costs
    ~1 ms a command here)."""
    for name in os.listdir('/proc/self/fd'):
        fd = int(name)
        if fd >= low and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass    # the listing's own descriptor, closed already

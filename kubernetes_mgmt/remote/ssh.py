"""One SSH connection per host, reused for every command and file transfer.

Commands are argv lists joined with ``shlex.join`` so every value reaches
the remote shell as data. sudo reads the password from stdin (never from
the command line). stdout and stderr are drained together so a chatty
command cannot block on a full pipe.

Every command has a deadline: it runs as the leader of its own session on
the VM, so that when the deadline passes its whole process group is killed
over the same connection. Every SFTP operation has a deadline too.
What a command prints is returned as it is (never masked): secrets are
masked only where text is shown (logs, error messages).
"""
from __future__ import annotations

import base64
import itertools
import posixpath
import re
import select
import shlex
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, TypeVar

import paramiko

from kubernetes_mgmt import redact
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import (
    CommandFailed,
    CommandTimeout,
    ConnectError,
    HostKeyMismatch,
    RemoteError,
    TransferTimeout,
    Unresponsive,
)
from kubernetes_mgmt.remote.hostkeys import (
    HostKeyPending,
    HostKeyStore,
    HostKeyUnverifiable,
    Target,
    policy_for,
)
from kubernetes_mgmt.remote.retry import Backoff

LOG = redact.get_logger(__name__)
T = TypeVar('T')

_CHUNK = 65536
# After the exit status arrives, trailing output may still be in flight;
# wait this long for end-of-file (a daemon that kept our stdout open must
# not hang the driver).
_EOF_GRACE = 2.0
_AUTH_ATTEMPTS = 3
_SFTP_CHUNK = 32768  # paramiko's largest SFTP request

# The command's session leader names its process group on stderr before it
# execs the command; that line (and only it) is removed from stderr.
_PGID_TAG = 'kmgmt-pgid'
_LEADER = f'printf "{_PGID_TAG} %s\\n" "$$" >&2; exec "$@"'
_PGID_LINE = re.compile(rf'(?m)^{_PGID_TAG} (\d+)\n'.encode())
# TERM the group, give it a moment to exit, then KILL what is left.
_KILL_SCRIPT = r'''
group=$1
kill -TERM -- "-$group" 2>/dev/null || exit 0
for _ in $(seq 50); do
    kill -0 -- "-$group" 2>/dev/null || exit 0
    sleep 0.1
done
kill -KILL -- "-$group"
'''
_KILL_TIMEOUT = 30.0


@dataclass(frozen=True)
class Login:
    """Who logs in. The password is optional: the driver logs in with its
    own key (``Sessions``' identity) where the VM accepts it."""

    username: str
    password: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Endpoint:
    """Where a VM is reached and who logs in; ``host_id`` (the Nova
    server id) is what its host key is known by."""

    address: str
    login: Login
    port: int = 22
    label: str = ''
    host_id: str | None = None

    @property
    def name(self) -> str:
        return self.label or self.address

    @property
    def target(self) -> Target:
        return Target(self.host_id or self.address, self.address,
                      self.name)


@dataclass(frozen=True)
class Result:
    exit_status: int
    stdout: str
    stderr: str


class SshSession:
    """An open connection to one VM."""

    def __init__(self, endpoint: Endpoint, client: paramiko.SSHClient,
                 auth_method: str = 'password'):
        self.endpoint = endpoint
        self.auth_method = auth_method   # how the driver logged in
        self._client = client
        self._sftp: paramiko.SFTPClient | None = None
        self._sudo_needs_password: bool | None = None
        self._lock = threading.Lock()
        self._sftp_lock = threading.Lock()
        # Time spent waiting for remote commands (benchmarks, progress).
        self.command_seconds = 0.0
        self._stats_lock = threading.Lock()

    # -- commands ---------------------------------------------------------

    def run(self, argv: Sequence[str], *, step: str, sudo: bool = False,
            timeout: float | None = None, input: str | bytes | None = None,
            check: bool = True) -> Result:
        """Run ``argv`` and return its result; raise on failure or timeout.

        ``input`` is written to the command's stdin (data, not code).
        On timeout the command's process group is killed on the VM.
        """
        return self._execute(list(argv), _as_bytes(input), step=step,
                             timeout=timeout, check=check,
                             as_root=sudo and not self._is_root())

    def run_script(self, script: str, args: Sequence[str] = (), *,
                   step: str, sudo: bool = False,
                   timeout: float | None = None,
                   check: bool = True) -> Result:
        """Run a bash script; ``args`` become its positional parameters."""
        return self.run(['bash', '-c', script, 'bash', *args], step=step,
                        sudo=sudo, timeout=timeout, check=check)

    # -- files ------------------------------------------------------------

    def upload(self, data: str | bytes, remote_path: str, *, step: str,
               mode: int = 0o644, sudo: bool = False,
               timeout: float | None = None) -> None:
        """Write ``data`` to ``remote_path`` (creating parent directories).

        With ``sudo`` root's ``install`` reads the data from stdin: the
        login user never owns a root file, and no copy of it is left
        anywhere when the upload fails half-way. The transfer fails after
        ``timeout`` (``sftp_timeout``) seconds.
        """
        self._upload(_as_bytes(data) or b'', remote_path, step=step,
                     mode=mode, sudo=sudo, timeout=timeout)

    def upload_file(self, local: Path, remote_path: str, *, step: str,
                    mode: int = 0o644, sudo: bool = False,
                    timeout: float | None = None) -> None:
        """``upload`` of a local file, read piece by piece as it is sent:
        an image archive of hundreds of MB never sits in memory whole."""
        with open(local, 'rb') as source:
            self._upload(source, remote_path, step=step, mode=mode,
                         sudo=sudo, timeout=timeout)

    def _upload(self, source: bytes | BinaryIO, remote_path: str, *,
                step: str, mode: int, sudo: bool,
                timeout: float | None) -> None:
        if not sudo or self._is_root():
            self._transfer(step, f'write {remote_path}', timeout,
                           lambda t: _sftp_write(t, _chunks(source),
                                                 remote_path, mode))
            return
        self._execute(['install', '-D', '-m', f'{mode:o}', '/dev/stdin',
                       remote_path], source, step=step,
                      timeout=timeout or CONF.kubernetes_mgmt.sftp_timeout,
                      check=True, as_root=True)

    def read_file(self, remote_path: str, *, step: str,
                  sudo: bool = False, timeout: float | None = None) -> bytes:
        if sudo and not self._is_root():
            out = self.run(['base64', '-w0', remote_path], step=step,
                           sudo=True, timeout=timeout)
            return base64.b64decode(out.stdout)
        return self._transfer(step, f'read {remote_path}', timeout,
                          lambda t: _sftp_read(t, remote_path))

    @property
    def alive(self) -> bool:
        transport = self._client.get_transport()
        return transport is not None and transport.is_active()

    def close(self) -> None:
        if self._sftp is not None:
            self._sftp.close()
        self._client.close()

    # -- internals --------------------------------------------------------

    def _execute(self, argv: list[str], stdin: bytes | BinaryIO | None,
                 *, step: str,
                 timeout: float | None, check: bool, as_root: bool = False,
                 kill_on_timeout: bool = True) -> Result:
        limit = float(timeout or CONF.kubernetes_mgmt.command_timeout)
        shown = shlex.join(argv)
        LOG.debug('[%s] %s: $ %s', self.endpoint.name, step, shown)
        command = shlex.join(['setsid', '-w', 'sh', '-c', _LEADER, 'sh',
                              *argv])
        chunks = _chunks(stdin)
        if as_root:
            command, chunks = self._with_sudo(command, chunks, step)
        deadline = time.monotonic() + limit
        chan = self._open_channel(step, limit)
        started = time.monotonic()
        try:
            status, out, err = self._converse(chan, command, chunks,
                                              deadline, step)
        except _Expired as expired:
            chan.close()
            fate = (self._kill_group(_process_group(expired.err), as_root,
                                     step)
                    if kill_on_timeout else 'left running')
            raise CommandTimeout(
                self.endpoint.name, step,
                f'did not finish within {limit:g} s; {fate}: '
                f'{shown[:200]}') from None
        finally:
            chan.close()
            with self._stats_lock:
                self.command_seconds += time.monotonic() - started
        err = _PGID_LINE.sub(b'', err, count=1)  # ours, not the command's
        result = Result(status, _text(out), _text(err))
        if check and status != 0:
            raise CommandFailed(self.endpoint.name, step, status,
                                result.stdout, result.stderr)
        return result

    def _converse(self, chan: paramiko.Channel, command: str,
                  stdin: Iterable[bytes], deadline: float,
                  step: str) -> tuple[int, bytes, bytes]:
        """Start ``command`` on ``chan``, feed it ``stdin``, collect its
        exit status and output, all before ``deadline``."""
        self._request(chan, deadline, step,
                      lambda: chan.exec_command(command))
        for chunk in stdin:
            chan.settimeout(max(0.001, deadline - time.monotonic()))
            try:
                chan.sendall(chunk)
            except TimeoutError:    # the host stopped reading its input
                raise _Expired(b'') from None
        chan.shutdown_write()
        return _collect(chan, deadline)

    def _open_channel(self, step: str, limit: float) -> paramiko.Channel:
        """A new channel; a server that does not answer within ``limit``
        fails the step, and the connection is dropped (the next use of
        the host connects again)."""
        transport = self._client.get_transport()
        if not self.alive:
            raise ConnectError(self.endpoint.name, step,
                               'SSH connection is closed')
        try:
            return transport.open_session(timeout=limit)
        except (paramiko.SSHException, EOFError, OSError) as exc:
            self.close()
            raise Unresponsive(
                self.endpoint.name, step,
                f'the SSH server did not open a channel within {limit:g} s '
                f'({exc}); the command was not started and the connection '
                'was dropped') from None

    def _request(self, chan: paramiko.Channel, deadline: float, step: str,
                 request: Callable[[], None]) -> None:
        """A channel request (exec, subsystem) that paramiko waits for
        without limit: bounded by closing the channel at ``deadline``."""
        with _Watchdog(chan, deadline) as watchdog:
            try:
                request()
            except (paramiko.SSHException, EOFError, OSError):
                if not watchdog.fired:
                    raise
        if watchdog.fired:
            self.close()
            raise Unresponsive(
                self.endpoint.name, step,
                'the SSH server did not answer the request to start the '
                'command in time; the connection was dropped')

    def _kill_group(self, group: int | None, as_root: bool,
                    step: str) -> str:
        """Kill a timed-out command's process group; say what happened."""
        if group is None:
            return 'not killed: it had not started on the host'
        try:
            self._execute(['bash', '-c', _KILL_SCRIPT, 'bash', str(group)],
                          None, step=f'{step} (kill)', timeout=_KILL_TIMEOUT,
                          check=True, as_root=as_root, kill_on_timeout=False)
        except RemoteError as exc:
            return f'killing its process group {group} failed: {exc.detail}'
        return f'killed on the host (process group {group})'

    def _is_root(self) -> bool:
        return self.endpoint.login.username == 'root'

    def _with_sudo(self, command: str, stdin: Iterator[bytes],
                   step: str) -> tuple[str, Iterator[bytes]]:
        # -k ignores cached credentials so sudo always reads the password we
        # send; otherwise the password line would reach the command's stdin.
        if self._sudo_password_needed(step):
            if not self.endpoint.login.password:
                raise CommandFailed(
                    self.endpoint.name, step, 1, '',
                    f'sudo asks user {self.endpoint.login.username!r} for '
                    'a password and the request gives none (the VM\'s user '
                    'data grants passwordless sudo to the login user: see '
                    'README, "Security")')
            password = self.endpoint.login.password.encode() + b'\n'
            return (f"sudo -k -S -p '' -- {command}",
                    itertools.chain([password], stdin))
        return f'sudo -n -- {command}', stdin

    def _sudo_password_needed(self, step: str) -> bool:
        with self._lock:
            if self._sudo_needs_password is None:
                probe = self._execute(['sudo', '-k', '-n', 'true'], None,
                                      step=step, timeout=None, check=False)
                self._sudo_needs_password = probe.exit_status != 0
            return self._sudo_needs_password

    # -- SFTP ---------------------------------------------------------------

    def _transfer(self, step: str, what: str, timeout: float | None,
                  action: Callable[[_Transfer], T]) -> T:
        """Run one SFTP operation within its deadline.

        One operation at a time per host: the deadline is armed on the
        shared SFTP channel. A timed-out channel is dropped (a late reply
        would answer the next request); the next operation opens another.
        """
        limit = float(timeout or CONF.kubernetes_mgmt.sftp_timeout)
        with self._sftp_lock:
            transfer = _Transfer(time.monotonic() + limit)
            try:
                transfer.sftp = self._sftp_client(transfer)
                return action(transfer)
            except TimeoutError:
                self._drop_sftp()
                raise TransferTimeout(
                    self.endpoint.name, step,
                    f'SFTP {what} did not finish within {limit:g} s '
                    f'(abandoned)') from None
            except (EOFError, paramiko.SSHException) as exc:
                self._drop_sftp()
                raise CommandFailed(self.endpoint.name, step, 1, '',
                                    f'cannot {what}: SFTP channel lost: '
                                    f'{exc}') from exc
            except OSError as exc:
                raise CommandFailed(self.endpoint.name, step, 1, '',
                                    f'cannot {what}: {exc}') from exc

    def _sftp_client(self, transfer: _Transfer) -> paramiko.SFTPClient:
        if self._sftp is None:
            transport = self._client.get_transport()
            if transport is None or not transport.is_active():
                raise EOFError('SSH connection is closed')
            try:
                chan = transport.open_session(timeout=transfer.remaining())
            except paramiko.SSHException:
                transfer.remaining()    # TimeoutError once it is spent
                raise
            try:
                chan.settimeout(transfer.remaining())
                with _Watchdog(chan, transfer.deadline) as watchdog:
                    try:
                        chan.invoke_subsystem('sftp')
                    except (paramiko.SSHException, EOFError):
                        if watchdog.fired:
                            raise TimeoutError('no answer') from None
                        raise
                self._sftp = paramiko.SFTPClient(chan)  # reads the version
            except BaseException:
                chan.close()
                raise
        return self._sftp

    def _drop_sftp(self) -> None:
        sftp, self._sftp = self._sftp, None
        if sftp is not None:
            sftp.close()


@dataclass
class _Transfer:
    """One SFTP operation: its deadline, armed before every request."""

    deadline: float
    sftp: paramiko.SFTPClient | None = None

    def remaining(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError('deadline passed')
        return left

    def call(self, fn: Callable[..., T], *args) -> T:
        self.sftp.get_channel().settimeout(self.remaining())
        return fn(*args)


def _chunks(source: bytes | BinaryIO | None) -> Iterator[bytes]:
    """``source`` (data or an open file) in pieces of at most
    ``_SFTP_CHUNK`` bytes, read as they are asked for."""
    if source is None:
        return
    if isinstance(source, bytes):
        for start in range(0, len(source), _SFTP_CHUNK):
            yield source[start:start + _SFTP_CHUNK]
        return
    while chunk := source.read(_SFTP_CHUNK):
        yield chunk


def _sftp_write(t: _Transfer, chunks: Iterable[bytes], path: str,
                mode: int) -> None:
    _sftp_makedirs(t, posixpath.dirname(path))
    f = t.call(t.sftp.open, path, 'wb')
    try:
        t.call(f.chmod, mode)  # before the content: secrets stay private
        for chunk in chunks:
            t.call(f.write, chunk)
        t.call(f.close)
    except TimeoutError:
        raise  # the channel is dropped; closing would wait again
    except BaseException:
        _close_quietly(t, f)
        raise


def _sftp_read(t: _Transfer, path: str) -> bytes:
    f = t.call(t.sftp.open, path, 'rb')
    chunks: list[bytes] = []
    try:
        while chunk := t.call(f.read, _SFTP_CHUNK):
            chunks.append(chunk)
    except TimeoutError:
        raise
    except BaseException:
        _close_quietly(t, f)
        raise
    t.call(f.close)
    return b''.join(chunks)


def _close_quietly(t: _Transfer, f: paramiko.SFTPFile) -> None:
    try:
        t.call(f.close)
    except (OSError, EOFError, paramiko.SSHException):
        pass


def _sftp_makedirs(t: _Transfer, path: str) -> None:
    if not path or path == '/':
        return
    try:
        t.call(t.sftp.stat, path)
    except TimeoutError:
        raise
    except OSError:
        _sftp_makedirs(t, posixpath.dirname(path))
        t.call(t.sftp.mkdir, path)


class _Watchdog:
    """Closes a channel at a deadline, which ends paramiko's unbounded
    wait for the answer to a channel request."""

    def __init__(self, chan: paramiko.Channel, deadline: float):
        self._chan = chan
        self.fired = False
        self._timer = threading.Timer(max(0.0, deadline - time.monotonic()),
                                      self._fire)
        self._timer.daemon = True

    def _fire(self) -> None:
        self.fired = True
        self._chan.close()

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._timer.cancel()


class _Expired(Exception):
    """The deadline passed; ``err`` is the stderr read so far."""

    def __init__(self, err: bytes):
        super().__init__('deadline passed')
        self.err = err


def _collect(chan: paramiko.Channel,
             deadline: float) -> tuple[int, bytes, bytes]:
    """Read stdout and stderr together until EOF; return (status, out, err).
    """
    out: list[bytes] = []
    err: list[bytes] = []
    fd = chan.fileno()
    eof_deadline: float | None = None
    while True:
        _drain(chan, out, err)
        if chan.eof_received:
            break
        now = time.monotonic()
        if chan.exit_status_ready() and eof_deadline is None:
            eof_deadline = now + _EOF_GRACE
        if eof_deadline is not None and now >= eof_deadline:
            break
        if now >= deadline:
            raise _Expired(b''.join(err))
        wait = min(deadline, eof_deadline or deadline) - now
        select.select([fd], [], [], max(0.0, min(wait, 1.0)))
    # The last data may have come with the EOF, after the drain above.
    _drain(chan, out, err)
    if not chan.status_event.wait(max(0.0, deadline - time.monotonic())):
        raise _Expired(b''.join(err))
    return chan.exit_status, b''.join(out), b''.join(err)


def _drain(chan: paramiko.Channel, out: list[bytes],
           err: list[bytes]) -> None:
    while chan.recv_ready():
        out.append(chan.recv(_CHUNK))
    while chan.recv_stderr_ready():
        err.append(chan.recv_stderr(_CHUNK))


def _process_group(err: bytes) -> int | None:
    match = _PGID_LINE.search(err)
    return int(match.group(1)) if match else None


def _text(data: bytes) -> str:
    # Data, not display: never masked (the driver parses it).
    return data.decode('utf-8', errors='replace')


def _as_bytes(data: str | bytes | None) -> bytes | None:
    if data is None or isinstance(data, bytes):
        return data
    return data.encode()


# -- connecting ---------------------------------------------------------------

_RETRYABLE = (OSError, EOFError, paramiko.SSHException)


def connect(endpoint: Endpoint, keys: HostKeyStore, *,
            identity: paramiko.PKey | None = None,
            deadline: float | None = None,
            attempt_timeout: float | None = None) -> SshSession:
    """Connect, retrying with backoff until ``deadline`` seconds pass.

    A VM that is still booting refuses or drops connections, or has not
    published its host keys yet, for a while; that is retried. A host key
    that differs from the known one is never retried. The driver's
    ``identity`` (its key) is offered first, then the password.
    """
    conf = CONF.kubernetes_mgmt
    total = float(deadline or conf.ssh_connect_deadline)
    per_attempt = float(attempt_timeout or conf.ssh_connect_timeout)
    backoff = Backoff(deadline=total)
    auth_failures = 0
    redact.register(endpoint.login.password)
    if identity is None and not endpoint.login.password:
        raise ConnectError(endpoint.name, 'ssh connect',
                           'neither a key nor a password to log in with')
    while True:
        try:
            return _connect_once(endpoint, keys, identity, per_attempt)
        except HostKeyMismatch:
            raise
        except HostKeyUnverifiable as exc:
            raise ConnectError(endpoint.name, 'ssh connect',
                               str(exc)) from None
        except paramiko.AuthenticationException as exc:
            auth_failures += 1
            if auth_failures >= _AUTH_ATTEMPTS:
                raise ConnectError(
                    endpoint.name, 'ssh connect',
                    f'authentication failed for user '
                    f'{endpoint.login.username!r} '
                    f'({_tried(identity, endpoint)}; {exc})') from None
            last = exc
        except (*_RETRYABLE, HostKeyPending) as exc:
            last = exc
        if not backoff.wait():
            raise ConnectError(endpoint.name, 'ssh connect',
                               _unreached(endpoint, total, last))
        LOG.debug('[%s] waiting for SSH: %s', endpoint.name, last)


def _tried(identity: paramiko.PKey | None, endpoint: Endpoint) -> str:
    methods = ['the driver\'s key'] if identity is not None else []
    if endpoint.login.password:
        methods.append('the password')
    return 'tried ' + ' and '.join(methods)


def _unreached(endpoint: Endpoint, total: float, last: Exception) -> str:
    if isinstance(last, HostKeyPending):
        return (f'{last} within {total:g} s: nothing vouches for the key '
                'it offers, so the driver did not log in (cloud-init '
                'prints the keys at first boot: see the server\'s console '
                'log)')
    return (f'not reachable on {endpoint.address}:{endpoint.port} within '
            f'{total:g} s (last error: {type(last).__name__}: {last})')


def _connect_once(endpoint: Endpoint, keys: HostKeyStore,
                  identity: paramiko.PKey | None,
                  timeout: float) -> SshSession:
    sock = _tcp_connection(endpoint, timeout)
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(policy_for(keys, endpoint.target))
    try:
        method = _log_in(client, sock, endpoint, identity, timeout)
    except BaseException:
        client.close()
        sock.close()
        raise
    transport = client.get_transport()
    if transport is not None:
        transport.set_keepalive(30)
    LOG.info('[%s] SSH connected (%s)', endpoint.name, method)
    return SshSession(endpoint, client, auth_method=method)


def _log_in(client: paramiko.SSHClient, sock: socket.socket,
            endpoint: Endpoint, identity: paramiko.PKey | None,
            timeout: float) -> str:
    """Connect and authenticate; returns the method that worked. The host
    key is checked (policy) before any credential is sent."""
    login = endpoint.login
    try:
        client.connect(
            endpoint.address, port=endpoint.port, username=login.username,
            pkey=identity,
            password=None if identity is not None else login.password,
            sock=sock, timeout=timeout, banner_timeout=timeout,
            auth_timeout=timeout, look_for_keys=False, allow_agent=False)
        return 'publickey' if identity is not None else 'password'
    except paramiko.AuthenticationException:
        transport = client.get_transport()
        if identity is None or not login.password or transport is None \
                or not transport.is_active():
            raise
    # The VM does not know the driver's key (no user data with it).
    transport.auth_password(login.username, login.password)
    return 'password'


def _tcp_connection(endpoint: Endpoint, timeout: float) -> socket.socket:
    """The TCP connection an SSH session runs over, without Nagle's
    algorithm: paramiko writes a channel's requests and data as separate
    small packets, and with Nagle each one after the first waited for the
    VM's delayed ACK (about 40 ms per command and per handshake step)."""
    sock = socket.create_connection((endpoint.address, endpoint.port),
                                    timeout=timeout)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except BaseException:
        sock.close()
        raise
    return sock


class Sessions:
    """The SSH connections of one operation: one per host, shared.

    Thread-safe: parallel steps on the same host share its connection
    (paramiko multiplexes channels over one transport).
    """

    def __init__(self, keys: HostKeyStore, *, deadline: float | None = None,
                 identity: paramiko.PKey | None = None):
        self.keys = keys
        self.identity = identity
        self._deadline = deadline
        self._warned_password = False
        self._sessions: dict[tuple[str, int], SshSession] = {}
        self._locks: dict[tuple[str, int], threading.Lock] = {}
        self._guard = threading.Lock()

    def get(self, endpoint: Endpoint, *,
            deadline: float | None = None) -> SshSession:
        """The host's connection, made on first use; ``deadline`` (seconds
        to connect) overrides the pool's for a host that may be down."""
        key = (endpoint.address, endpoint.port)
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            session = self._sessions.get(key)
            if session is None or not session.alive:
                session = connect(endpoint, self.keys,
                                  identity=self.identity,
                                  deadline=deadline or self._deadline)
                self._sessions[key] = session
                self._note_password_login(session)
            return session

    def _note_password_login(self, session: SshSession) -> None:
        """Once per operation: a VM let the driver in with the password
        only (its user data lacks the driver's key)."""
        if session.auth_method != 'password' or self.identity is None:
            return
        with self._guard:
            if self._warned_password:
                return
            self._warned_password = True
        LOG.warning('[%s] logged in with the VM password: the VM does not '
                    'accept the driver\'s own key (its user data does not '
                    'carry it: see README, "Security"); the password is '
                    'sent to the VM', session.endpoint.name)

    def drop(self, endpoint: Endpoint) -> None:
        """Close and forget a host's connection (its VM is going away)."""
        with self._guard:
            session = self._sessions.pop((endpoint.address, endpoint.port),
                                         None)
        if session is not None:
            session.close()

    def command_seconds(self) -> dict[str, float]:
        """Seconds spent in remote commands so far, by host address."""
        with self._guard:
            return {address: session.command_seconds
                    for (address, _), session in self._sessions.items()}

    def close(self) -> None:
        with self._guard:
            sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            session.close()

    def __enter__(self) -> Sessions:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

"""Keep passwords, tokens and proxy credentials out of what is shown.

Secrets are masked where text is *shown* (log records, exception messages,
CLI output), never in data: what a remote command returns reaches the
driver unchanged.

Secrets are registered as soon as they are read (request parsing, token
creation) into the scope of the running operation: ``operation()`` opens
one around each hook. A scope lives in a ``contextvars.ContextVar``, so
concurrent operations (threads or eventlet green threads) each see only
their own secrets, and a scope ends with its operation: nothing grows for
the life of the process. Work handed to other threads keeps the scope when
started through ``carry()`` / ``submit()`` (``engine.runner`` does).

Two patterns catch secrets we were never told about, in any scope:
credentials inside URLs (``scheme://user:pass@host``) and bearer tokens.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import logging
import re
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from typing import TextIO, TypeVar

MASK = '***'
_MIN_LEN = 3  # masking 1-2 character "secrets" would garble every line

_URL_CREDENTIALS = re.compile(r'(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)'
                              r'(?P<user>[^:/@\s]*):(?P<pw>[^@/\s]+)@')
_BEARER = re.compile(r'(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+')

T = TypeVar('T')


class Scope:
    """The secrets of one operation (and those of the scope it runs in:
    a lab or CLI process may open a long-lived scope around operations).
    """

    def __init__(self, name: str = '', parent: Scope | None = None,
                 hook: bool = False):
        self.name = name
        self.parent = parent
        self.hook = hook  # opened by scoped_hooks
        self._lock = threading.Lock()
        self._secrets: frozenset[str] = frozenset()
        self._pattern: re.Pattern[str] | None = None

    def add(self, values: set[str]) -> None:
        with self._lock:
            if values <= self._secrets:
                return
            self._secrets = self._secrets | values
            # Longest first so a secret containing another is masked whole.
            ordered = sorted(self._secrets, key=len, reverse=True)
            self._pattern = re.compile(
                '|'.join(re.escape(s) for s in ordered))

    def mask(self, text: str) -> str:
        scope: Scope | None = self
        while scope is not None:
            pattern = scope._pattern
            if pattern is not None:
                text = pattern.sub(MASK, text)
            scope = scope.parent
        return text

    def __len__(self) -> int:
        return len(self._secrets)


_current: contextvars.ContextVar[Scope | None] = contextvars.ContextVar(
    'kubernetes_mgmt_redaction_scope', default=None)


def current() -> Scope | None:
    """The scope of the running operation, if any."""
    return _current.get()


@contextlib.contextmanager
def operation(name: str = '', *, hook: bool = False) -> Iterator[Scope]:
    """A scope for one operation; its secrets are forgotten when it ends.

    Nested in an outer scope, it also masks the outer scope's secrets.
    """
    scope = Scope(name, parent=_current.get(), hook=hook)
    token = _current.set(scope)
    try:
        yield scope
    finally:
        _current.reset(token)


def register(*values: str | None) -> None:
    """Remember values that must never be shown during this operation.

    Outside any operation there is nothing to remember them in: only the
    URL-credential and bearer patterns apply (every hook opens a scope).
    """
    scope = _current.get()
    new = {v for v in values if isinstance(v, str) and len(v) >= _MIN_LEN}
    if scope is not None and new:
        scope.add(new)


def redact(text: object) -> str:
    """``text`` as a string with every secret known here masked."""
    s = str(text)
    scope = _current.get()
    if scope is not None:
        s = scope.mask(s)
    s = _URL_CREDENTIALS.sub(rf'\g<scheme>\g<user>:{MASK}@', s)
    return _BEARER.sub(rf'\g<1>{MASK}', s)


# -- carrying the scope into other threads -----------------------------------

def carry(fn: Callable[..., T]) -> Callable[..., T]:
    """``fn`` bound to the caller's context: run in another thread (or
    green thread) it masks with the caller's operation scope."""
    context = contextvars.copy_context()

    @functools.wraps(fn)
    def run(*args, **kwargs) -> T:
        # A context can be entered by one thread at a time: each call gets
        # its own copy (the Scope object inside is shared).
        return context.copy().run(fn, *args, **kwargs)

    return run


def submit(pool: Executor, fn: Callable[..., T], *args,
           **kwargs) -> Future[T]:
    """``pool.submit`` keeping the caller's operation scope."""
    return pool.submit(carry(fn), *args, **kwargs)


def scoped_hooks(cls: type[T]) -> type[T]:
    """Class decorator: each public method runs in its own operation
    scope (the driver object is shared by every operation of a process).
    """
    for name, member in list(vars(cls).items()):
        if name.startswith('_') or not inspect.isfunction(member):
            continue
        setattr(cls, name, _in_operation(member))
    return cls


def _in_operation(method: Callable[..., T]) -> Callable[..., T]:
    @functools.wraps(method)
    def hook(*args, **kwargs) -> T:
        scope = _current.get()
        if scope is not None and scope.hook:
            # A hook calling another method of its driver: same operation.
            return method(*args, **kwargs)
        with operation(method.__name__, hook=True):
            return method(*args, **kwargs)

    return hook


# -- where text is shown ------------------------------------------------------

class _MaskingStream:
    """A text stream that masks what is written to it."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(redact(text))

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextlib.contextmanager
def masked_output() -> Iterator[None]:
    """Mask what the command line prints (stdout and stderr)."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _MaskingStream(saved[0]), _MaskingStream(
        saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


class RedactingFilter(logging.Filter):
    """Rewrites a record's message with secrets masked."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string is not ours to fix
            return True
        record.msg = redact(message)
        record.args = None
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = redact(
                logging.Formatter().formatException(record.exc_info))
        return True


_FILTER = RedactingFilter()


def get_logger(name: str):
    """An oslo.log logger whose records are redacted at the source."""
    from oslo_log import log as oslo_logging

    adapter = oslo_logging.getLogger(name)
    std_logger = logging.getLogger(name)
    if _FILTER not in std_logger.filters:
        std_logger.addFilter(_FILTER)
    return adapter

"""Keep passwords, tokens and proxy credentials out of every log line.

Secrets are registered as soon as they are read (request parsing, token
creation); the logging filter and ``redact()`` replace them with ``***``.
Two patterns catch secrets we were never told about: credentials inside URLs
(``scheme://user:pass@host``) and bearer tokens.
"""
from __future__ import annotations

import logging
import re
import threading

MASK = '***'
_MIN_LEN = 3  # masking 1-2 character "secrets" would garble every line

_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None

_URL_CREDENTIALS = re.compile(r'(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)'
                              r'(?P<user>[^:/@\s]*):(?P<pw>[^@/\s]+)@')
_BEARER = re.compile(r'(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+')


def register(*values: str | None) -> None:
    """Remember values that must never be shown."""
    global _pattern
    new = {v for v in values if isinstance(v, str) and len(v) >= _MIN_LEN}
    with _lock:
        if new - _secrets:
            _secrets.update(new)
            # Longest first so a secret containing another is masked whole.
            ordered = sorted(_secrets, key=len, reverse=True)
            _pattern = re.compile('|'.join(re.escape(s) for s in ordered))


def redact(text: object) -> str:
    """Return ``text`` as a string with every known secret masked."""
    s = str(text)
    pattern = _pattern
    if pattern is not None:
        s = pattern.sub(MASK, s)
    s = _URL_CREDENTIALS.sub(rf'\g<scheme>\g<user>:{MASK}@', s)
    return _BEARER.sub(rf'\g<1>{MASK}', s)


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

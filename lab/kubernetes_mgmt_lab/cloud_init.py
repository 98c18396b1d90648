"""What a lab VM's cloud-init makes of its server's user data: the
``#cloud-config`` (alone, or the cloud-config parts of a MIME multipart
such as Heat makes) read once, in the API call that boots the server,
and reduced to what the lab applies at first boot (first_boot.py): users
and their authorized keys, sudo rules, host keys, password login, and
whether the host keys go to the console.

The rules are cloud-init's (modules ssh, users_groups, set_passwords,
keys_to_console), written for the lab; anything else in the cloud-config
is ignored. Private host keys pass through here: nothing below logs or
shows a value of the user data.
"""
from __future__ import annotations

import base64
import binascii
import email
import gzip
import hashlib
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import yaml

from kubernetes_mgmt.redact import get_logger

LOG = get_logger(__name__)

CLOUD_CONFIG = '#cloud-config'
KEY_TYPES = ('rsa', 'ecdsa', 'ed25519')       # host key types of cc_ssh
MAX_USER_DATA = 65535       # Nova's limit on the base64 text
# The top-level keys the lab applies; every other one is ignored.
HONOURED = ('ssh_authorized_keys', 'users', 'ssh_keys', 'ssh_genkeytypes',
            'ssh_deletekeys', 'ssh_pwauth', 'ssh', 'ssh_fp_console_blacklist',
            'ssh_key_console_blacklist')
USER_KEYS = ('name', 'ssh_authorized_keys', 'sudo', 'shell', 'groups',
             'lock_passwd')
# useradd's default NAME_REGEX on Debian and Ubuntu, at most 32 characters.
_NAME = re.compile(r'^[a-z_][a-z0-9_-]{0,30}\$?$')
_TRUE = ('true', 'yes', 'on', '1')
_FALSE = ('false', 'no', 'off', '0')
# MIME parts whose type is told by their first line, as cloud-init does.
_TYPED_BY_CONTENT = ('text/plain', 'text/x-not-multipart',
                     'application/octet-stream')


class UserDataError(ValueError):
    """A ``user_data`` Nova itself refuses (not base64, too long)."""


@dataclass(frozen=True)
class User:
    """One entry of ``users``. ``name`` None is the image's default user;
    None in the other fields: not given."""

    name: str | None
    authorized_keys: tuple[str, ...] = ()
    sudo: tuple[str, ...] | None = None
    shell: str | None = None
    groups: tuple[str, ...] = ()
    lock_passwd: bool | None = None


@dataclass(frozen=True)
class CloudConfig:
    """What the lab applies of one server's cloud-config."""

    users: tuple[User, ...] = (User(None),)
    # cc_ssh's ssh_keys: '<type>_private' / '<type>_public' -> file text.
    host_keys: Mapping[str, str] = field(default_factory=dict, repr=False)
    genkeytypes: tuple[str, ...] = KEY_TYPES
    ssh_pwauth: bool | None = None          # None: sshd_config unchanged
    emit_keys_to_console: bool = True
    fp_blacklist: tuple[str, ...] = ()      # key types, e.g. ssh-rsa
    key_blacklist: tuple[str, ...] = ()
    # What cloud-init would warn about on the console.
    warnings: tuple[str, ...] = ()

    def resolved_users(self, default_name: str) -> list[User]:
        """The users, in order, the default one named ``default_name``.
        Entries of one name are merged as cloud-init merges them: the
        first given value of a field wins, explicit entries before the
        default user's, whose password stays unlocked unless told (the
        lab image's default user keeps its password); keys add up."""
        order: list[str] = []
        entries: dict[str, list[User]] = {}
        defaults = [u for u in self.users if u.name is None]
        for user in self.users:
            name = user.name or default_name
            if name not in order:
                order.append(name)
            if user.name is not None:
                entries.setdefault(name, []).append(user)
        if defaults:
            entries.setdefault(default_name, []).extend(defaults)
        return [_combined(name, entries[name],
                          bool(defaults) and name == default_name)
                for name in order]


def _combined(name: str, entries: list[User], is_default: bool) -> User:
    def first(values):
        return next((v for v in values if v is not None), None)

    lock = first(u.lock_passwd for u in entries)
    return User(
        name=name,
        authorized_keys=tuple(dict.fromkeys(
            k for u in entries for k in u.authorized_keys)),
        sudo=first(u.sudo for u in entries),
        shell=first(u.shell for u in entries),
        groups=first(u.groups or None for u in entries) or (),
        lock_passwd=(not is_default) if lock is None else lock)


# -- reading the user data --------------------------------------------------

def parse_user_data(value: object) -> CloudConfig:
    """The cloud-config of a server's ``user_data`` (base64, as Nova
    takes it; None: none). Raises UserDataError for what Nova refuses;
    anything cloud-init would only warn about becomes a warning."""
    if value is None:
        return CloudConfig()
    texts = cloud_config_texts(decode_user_data(value))
    data, warnings = load(texts)
    return interpret(data, warnings)


def decode_user_data(value: object) -> bytes:
    if not isinstance(value, str):
        raise UserDataError('Invalid input for field/attribute user_data: '
                            'a base64 string is required')
    if len(value) > MAX_USER_DATA:
        raise UserDataError(f'Invalid input for field/attribute user_data: '
                            f'{len(value)} characters, longer than '
                            f'{MAX_USER_DATA}')
    try:
        # Not strict, as Nova's own check: characters outside the
        # alphabet (line breaks) are skipped.
        return base64.b64decode(value)
    except (binascii.Error, ValueError) as exc:
        raise UserDataError('Invalid input for field/attribute user_data: '
                            f'not base64 ({exc})') from None


def cloud_config_texts(raw: bytes) -> list[str]:
    """The cloud-config texts of the decoded user data: gzip undone, a
    MIME multipart split into its parts; other parts are ignored."""
    if raw[:2] == b'\x1f\x8b':
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            LOG.debug('user data: not valid gzip (%s); ignored', exc)
            return []
    text = raw.decode('utf-8', errors='replace')
    if 'mime-version:' not in text[:4096].lower():
        return _typed_by_content(text, 'user data')
    texts = []
    message = email.message_from_string(text)
    for n, part in enumerate(message.walk()):
        if part.is_multipart():
            continue
        kind = part.get_content_type()
        body = (part.get_payload(decode=True) or b'').decode(
            part.get_content_charset() or 'utf-8', errors='replace')
        where = f'part {n} ({kind}, {part.get_filename() or "no name"})'
        if kind == 'text/cloud-config':
            texts.append(body)
        elif kind in _TYPED_BY_CONTENT:
            texts += _typed_by_content(body, where)
        else:
            LOG.debug('user data: %s is not cloud-config; ignored', where)
    return texts


def _typed_by_content(text: str, where: str) -> list[str]:
    if text.startswith(CLOUD_CONFIG):
        return [text]
    LOG.debug('user data: %s does not start with %s; ignored', where,
              CLOUD_CONFIG)
    return []


def load(texts: list[str]) -> tuple[dict, list[str]]:
    """The cloud-config texts as one mapping (a later part's values win,
    mappings merged key by key) and what was wrong with them."""
    merged: dict = {}
    warnings: list[str] = []
    for n, text in enumerate(texts, 1):
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            # Only where: the message's snippet could show a private key.
            mark = getattr(exc, 'problem_mark', None)
            at = f' at line {mark.line + 1}' if mark is not None else ''
            warnings.append(f'cloud-config part {n} is not valid YAML{at}: '
                            f'{getattr(exc, "problem", None) or "error"}; '
                            'ignored')
            continue
        if data is None:
            continue
        if not isinstance(data, dict):
            warnings.append(f'cloud-config part {n} is a '
                            f'{type(data).__name__}, not a mapping; ignored')
            continue
        merged = _merge(merged, data)
    return merged, warnings


def _merge(old: dict, new: dict) -> dict:
    out = dict(old)
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


# -- what the lab applies ---------------------------------------------------

def interpret(data: dict, warnings: list[str] | None = None) -> CloudConfig:
    """The parts of a cloud-config mapping the lab applies."""
    warned: list[str] = list(warnings or [])
    for key in sorted(set(map(str, data)) - set(HONOURED)):
        LOG.debug('cloud-config: %s is not applied by the lab', key)
    top_keys = _strings(data.get('ssh_authorized_keys'),
                        'ssh_authorized_keys', warned, key_like=True)
    users = _users(data, top_keys, warned)
    ssh = data.get('ssh')
    if ssh is not None and not isinstance(ssh, dict):
        warned.append('ssh: must be a mapping; ignored')
        ssh = None
    return CloudConfig(
        users=users,
        host_keys=_host_keys(data.get('ssh_keys'), warned),
        genkeytypes=_genkeytypes(data, warned),
        ssh_pwauth=_pwauth(data.get('ssh_pwauth'), warned),
        emit_keys_to_console=not _is_false(
            (ssh or {}).get('emit_keys_to_console', True)),
        fp_blacklist=_strings(data.get('ssh_fp_console_blacklist'),
                              'ssh_fp_console_blacklist', warned),
        key_blacklist=_strings(data.get('ssh_key_console_blacklist'),
                               'ssh_key_console_blacklist', warned),
        warnings=tuple(warned))


def _users(data: dict, top_keys: tuple[str, ...],
           warned: list[str]) -> tuple[User, ...]:
    """``users`` as cloud-init normalizes it; the top-level authorized
    keys belong to the default user (without one, cloud-init gives them
    to root only, whose login the lab's sshd refuses)."""
    raw = data.get('users', ['default'])
    if isinstance(raw, str):
        raw = [u.strip() for u in raw.split(',')]
    if not isinstance(raw, list):
        warned.append(f'users: must be a list, not a '
                      f'{type(raw).__name__}; ignored')
        raw = []
    users: list[User] = []
    for n, entry in enumerate(raw):
        where = f'users[{n}]'
        if isinstance(entry, str) and entry:
            user = _user({'name': entry}, where, warned)
        elif isinstance(entry, dict):
            user = _user(entry, where, warned)
        else:
            warned.append(f'{where}: must be a name or a mapping; ignored')
            continue
        if user is not None:
            users.append(user)
    default = [u for u in users if u.name is None]
    if default:
        first = users.index(default[0])
        users[first] = replace(default[0], authorized_keys=tuple(
            dict.fromkeys(top_keys + default[0].authorized_keys)))
    elif top_keys:
        LOG.debug('cloud-config: ssh_authorized_keys without a default '
                  'user go to root only; not applied by the lab')
    return tuple(users)


def _user(entry: dict, where: str, warned: list[str]) -> User | None:
    for key in sorted(set(map(str, entry)) - set(USER_KEYS)):
        LOG.debug('cloud-config: %s.%s is not applied by the lab', where,
                  key)
    name = entry.get('name', 'default')
    if name == 'default':
        name = None
    elif not isinstance(name, str) or not _NAME.match(name):
        warned.append(f'{where}.name: {name!r} is not a valid user name; '
                      'user ignored')
        return None
    shell = entry.get('shell')
    if shell is not None and (not isinstance(shell, str)
                              or not shell.startswith('/')
                              or any(c in shell for c in '\n:')):
        warned.append(f'{where}.shell: must be an absolute path; ignored')
        shell = None
    lock = entry.get('lock_passwd')
    if lock is not None and not isinstance(lock, bool):
        warned.append(f'{where}.lock_passwd: must be true or false; '
                      'taken as true')
        lock = True
    return User(
        name=name,
        authorized_keys=_strings(entry.get('ssh_authorized_keys'),
                                 f'{where}.ssh_authorized_keys', warned,
                                 key_like=True),
        sudo=_sudo(entry.get('sudo'), f'{where}.sudo', warned),
        shell=shell,
        groups=_groups(entry.get('groups'), f'{where}.groups', warned),
        lock_passwd=lock)


def _sudo(value: object, where: str,
          warned: list[str]) -> tuple[str, ...] | None:
    if value is None or value is False:
        return None
    rules = [value] if isinstance(value, str) else value
    if not isinstance(rules, list) or not all(
            isinstance(r, str) and r.strip() and '\n' not in r
            for r in rules):
        warned.append(f'{where}: must be a sudoers rule or a list of them, '
                      'each on one line; ignored')
        return None
    return tuple(r.strip() for r in rules)


def _groups(value: object, where: str, warned: list[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    names = value.split(',') if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(g, str)
                                              for g in names):
        warned.append(f'{where}: must be a list of group names; ignored')
        return ()
    names = [g.strip() for g in names if g.strip()]
    bad = [g for g in names if not _NAME.match(g)]
    if bad:
        warned.append(f'{where}: {", ".join(map(repr, bad))} not valid '
                      'group names; ignored')
    return tuple(g for g in names if g not in bad)


def _strings(value: object, where: str, warned: list[str],
             key_like: bool = False) -> tuple[str, ...]:
    """A string or list of strings (authorized keys: also a mapping's
    values, as cloud-init takes them)."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    elif key_like and isinstance(value, dict):
        value = list(value.values())
    if not isinstance(value, list):
        warned.append(f'{where}: must be a list of strings; ignored')
        return ()
    kept = []
    for n, item in enumerate(value):
        if not isinstance(item, str) or '\n' in item.strip():
            warned.append(f'{where}[{n}]: must be one line of text; '
                          'ignored')
        elif item.strip():
            kept.append(item.strip())
    return tuple(dict.fromkeys(kept))


def _host_keys(value: object, warned: list[str]) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        warned.append('ssh_keys: must be a mapping; ignored')
        return {}
    known = {f'{t}_{part}' for t in KEY_TYPES for part in ('private',
                                                          'public')}
    keys = {}
    for name, text in value.items():
        if name not in known:
            # cc_ssh warns about unknown ones; the lab sets no host
            # certificates either.
            warned.append(f'ssh_keys: skipping unrecognized entry '
                          f'"{name}"')
        elif not isinstance(text, str) or not text.strip():
            warned.append(f'ssh_keys.{name}: must be the key file\'s text; '
                          'ignored')
        else:
            keys[name] = text if text.endswith('\n') else text + '\n'
    return keys


def _genkeytypes(data: dict, warned: list[str]) -> tuple[str, ...]:
    if 'ssh_genkeytypes' not in data:
        return KEY_TYPES
    names = _strings(data['ssh_genkeytypes'], 'ssh_genkeytypes', warned)
    for name in names:
        if name not in KEY_TYPES:
            LOG.debug('cloud-config: ssh_genkeytypes %s is not a key type '
                      'the lab generates', name)
    return tuple(n for n in names if n in KEY_TYPES)


def _pwauth(value: object, warned: list[str]) -> bool | None:
    if value is None or (isinstance(value, str)
                         and value.lower() == 'unchanged'):
        return None
    if _is_true(value):
        return True
    if _is_false(value):
        return False
    warned.append('ssh_pwauth: unrecognized value; PasswordAuthentication '
                  'left unchanged')
    return None


def _is_true(value: object) -> bool:
    return value is True or (isinstance(value, str)
                             and value.lower() in _TRUE)


def _is_false(value: object) -> bool:
    return value is False or (isinstance(value, str)
                              and value.lower() in _FALSE)


# -- the console ------------------------------------------------------------

_KEY_LABELS = {'ssh-rsa': 'RSA', 'ssh-ed25519': 'ED25519',
               'ecdsa-sha2-nistp256': 'ECDSA', 'ecdsa-sha2-nistp384':
               'ECDSA', 'ecdsa-sha2-nistp521': 'ECDSA'}


def fingerprint(blob_b64: str) -> str:
    """OpenSSH's SHA256 fingerprint of a public key blob (base64)."""
    digest = hashlib.sha256(base64.b64decode(blob_b64)).digest()
    return 'SHA256:' + base64.b64encode(digest).decode().rstrip('=')


def key_bits(blob_b64: str) -> int:
    """The size ``ssh-keygen -l`` shows for a public key blob."""
    blob = base64.b64decode(blob_b64)
    fields = []
    at = 0
    while at + 4 <= len(blob) and len(fields) < 3:
        (size,) = struct.unpack('>I', blob[at:at + 4])
        fields.append(blob[at + 4:at + 4 + size])
        at += 4 + size
    kind = fields[0].decode() if fields else ''
    if kind == 'ssh-rsa' and len(fields) == 3:
        return int.from_bytes(fields[2], 'big').bit_length()
    if kind.startswith('ecdsa-sha2-nistp'):
        return int(kind.removeprefix('ecdsa-sha2-nistp'))
    return 256      # ed25519


def fingerprint_line(public_line: str) -> str:
    """What ``ssh-keygen -l`` prints for one public key file's line."""
    kind, blob, *comment = public_line.split(None, 2)
    label = _KEY_LABELS.get(kind, kind.upper())
    return (f'{key_bits(blob)} {fingerprint(blob)} '
            f'{comment[0].strip() if comment else "no comment"} ({label})')


def keys_block(public_lines: list[str], config: CloudConfig,
               syslog_prefix: str) -> list[str]:
    """The lines cc_keys_to_console prints: fingerprints through the
    syslog (``<14>Mon DD HH:MM:SS cloud-init: ``), then the public keys
    as they are in their files; none when the cloud-config says so."""
    if not config.emit_keys_to_console:
        return []
    lines: list[str] = []
    shown = [k for k in public_lines if k.split()[0] not in
             config.fp_blacklist]
    if shown:
        rule = '#' * 61
        lines += [syslog_prefix + rule, syslog_prefix +
                  '-----BEGIN SSH HOST KEY FINGERPRINTS-----']
        for key in shown:
            try:
                lines.append(syslog_prefix + fingerprint_line(key))
            except (ValueError, IndexError):
                lines.append(syslog_prefix + 'is not a public key file.')
        lines += [syslog_prefix + '-----END SSH HOST KEY FINGERPRINTS-----',
                  syslog_prefix + rule]
    keys = [k for k in public_lines if k.split()[0] not in
            config.key_blacklist]
    if keys:
        lines += ['-----BEGIN SSH HOST KEY KEYS-----', *keys,
                  '-----END SSH HOST KEY KEYS-----']
    return lines

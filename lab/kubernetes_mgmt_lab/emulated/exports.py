"""NFS exports as nfs-utils understands them: the exports(5) files, the
export options with their defaults, and the table of active exports
(``/var/lib/nfs/etab`` on a real server; the host's records here).

Pure parsing and rendering, plus the table kept with ``hoststate``; the
``exportfs`` stand-in and the ``nfs-server`` unit act through it.
"""
from __future__ import annotations

import glob
import os
import re
import stat
from dataclasses import dataclass, field

from kubernetes_mgmt_lab.emulated import hoststate
from kubernetes_mgmt_lab.emulated.host import host_path

EXPORTS = '/etc/exports'
EXPORTS_D = '/etc/exports.d'
DB = 'nfs_exports'
NOBODY = 65534
# What Debian's nfs-kernel-server installs as /etc/exports: no exports.
DEFAULT_EXPORTS = (
    '# /etc/exports: the access control list for filesystems which may be '
    'exported\n'
    '#\t\tto NFS clients.  See exports(5).\n'
    '#\n'
    '# Example for NFSv2 and NFSv3:\n'
    '# /srv/homes       hostname1(rw,sync,no_subtree_check) '
    'hostname2(ro,sync,no_subtree_check)\n'
    '#\n'
    '# Example for NFSv4:\n'
    '# /srv/nfs4        gss/krb5i(rw,sync,fsid=0,crossmnt,no_subtree_check)\n'
    '# /srv/nfs4/homes  gss/krb5i(rw,sync,no_subtree_check)\n'
    '#\n')
# Boolean options: keyword -> (Options field, value).
_SWITCHES = {
    'ro': ('ro', True), 'rw': ('ro', False),
    'sync': ('async_', False), 'async': ('async_', True),
    'wdelay': ('wdelay', True), 'no_wdelay': ('wdelay', False),
    'hide': ('nohide', False), 'nohide': ('nohide', True),
    'crossmnt': ('crossmnt', True),
    'subtree_check': ('subtree_check', True),
    'no_subtree_check': ('subtree_check', False),
    'secure': ('insecure', False), 'insecure': ('insecure', True),
    'root_squash': ('root_squash', True),
    'no_root_squash': ('root_squash', False),
    'all_squash': ('all_squash', True),
    'no_all_squash': ('all_squash', False),
    'secure_locks': ('insecure_locks', False),
    'auth_nlm': ('insecure_locks', False),
    'insecure_locks': ('insecure_locks', True),
    'no_auth_nlm': ('insecure_locks', True),
    'acl': ('no_acl', False), 'no_acl': ('no_acl', True),
    'pnfs': ('pnfs', True), 'no_pnfs': ('pnfs', False),
    'nordirplus': ('nordirplus', True),
    'security_label': ('security_label', True),
}
_FLAVOURS = ('sys', 'unix', 'krb5', 'krb5i', 'krb5p', 'null', 'none')


class ExportError(ValueError):
    """An exports line or option nfs-utils would reject."""


@dataclass
class Options:
    """One export's options; the defaults are nfs-utils'."""

    ro: bool = True
    async_: bool = False
    wdelay: bool = True
    nohide: bool = False
    crossmnt: bool = False
    subtree_check: bool = False
    insecure: bool = False
    root_squash: bool = True
    all_squash: bool = False
    insecure_locks: bool = False
    no_acl: bool = False
    pnfs: bool = False
    nordirplus: bool = False
    security_label: bool = False
    anonuid: int = NOBODY
    anongid: int = NOBODY
    fsid: str | None = None
    mountpoint: str | None = None
    sec: list[str] = field(default_factory=lambda: ['sys'])
    subtree_given: bool = False     # for exportfs's warning

    def apply(self, text: str) -> None:
        """Apply a comma-separated option list, later options winning."""
        for word in filter(None, text.split(',')):
            key, eq, value = word.partition('=')
            if key in _SWITCHES and not eq:
                flag, on = _SWITCHES[key]
                setattr(self, flag, on)
                self.subtree_given |= flag == 'subtree_check'
            elif key in ('anonuid', 'anongid') and value.isdigit():
                setattr(self, key, int(value))
            elif key == 'fsid' and value:
                self.fsid = value
            elif key in ('mountpoint', 'mp'):
                self.mountpoint = value
            elif key == 'sec' and value and all(
                    f in _FLAVOURS for f in value.split(':')):
                self.sec = value.split(':')
            else:
                raise ExportError(f'unknown keyword "{word}"')

    def render(self) -> str:
        """The option list as ``exportfs -v`` and ``-s`` show it."""
        words = ['async' if self.async_ else 'sync',
                 'wdelay' if self.wdelay else 'no_wdelay',
                 'nohide' if self.nohide else 'hide']
        for on, word in ((self.crossmnt, 'crossmnt'),
                         (not self.subtree_check, 'no_subtree_check'),
                         (self.insecure_locks, 'insecure_locks'),
                         (self.nordirplus, 'nordirplus'),
                         (self.security_label, 'security_label'),
                         (self.no_acl, 'no_acl'), (self.pnfs, 'pnfs')):
            if on:
                words.append(word)
        if self.fsid is not None:
            words.append(f'fsid={self.fsid}')
        if self.mountpoint is not None:
            words.append('mountpoint' + (f'={self.mountpoint}'
                                         if self.mountpoint else ''))
        for key in ('anonuid', 'anongid'):
            if getattr(self, key) != NOBODY:
                words.append(f'{key}={getattr(self, key)}')
        for flavour in self.sec:
            words += [f'sec={flavour}', 'ro' if self.ro else 'rw',
                      'insecure' if self.insecure else 'secure',
                      'root_squash' if self.root_squash
                      else 'no_root_squash',
                      'all_squash' if self.all_squash else 'no_all_squash']
        return ','.join(words)


@dataclass(frozen=True)
class Export:
    path: str
    client: str
    options: str        # rendered, see Options.render

    @property
    def key(self) -> tuple[str, str]:
        return self.path, self.client

    def to_dict(self) -> dict:
        return {'path': self.path, 'client': self.client,
                'options': self.options}


@dataclass
class Parsed:
    exports: list[Export] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def client_kind(client: str) -> int:
    """nfs-utils lists exports by client type: world, host, subnet,
    wildcard, netgroup, GSS."""
    if client == '*':
        return 0
    if client.startswith('gss/'):
        return 5
    if client.startswith('@'):
        return 4
    if any(c in client for c in '*?['):
        return 3
    return 2 if '/' in client else 1


def _uncomment(line: str) -> str:
    """``line`` without its ``#`` comment (a quoted path may hold ``#``)."""
    quoted = False
    for i, char in enumerate(line):
        if char == '"':
            quoted = not quoted
        elif char == '#' and not quoted:
            return line[:i]
    return line


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, line): comments dropped, lines ending in
    ``\\`` joined with the next."""
    lines, pending, start = [], '', 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if not pending:
            start = number
        line = _uncomment(raw).rstrip()
        if line.endswith('\\'):
            pending += line[:-1] + ' '
            continue
        pending += line
        if pending.strip():
            lines.append((start, pending))
        pending = ''
    if pending.strip():
        lines.append((start, pending))
    return lines


_WORD = re.compile(r'"[^"]*"\S*|\S+')
_CLIENT = re.compile(r'^(?P<client>[^(\s]*)(?:\((?P<opts>[^)]*)\))?$')


def parse(text: str, source: str) -> Parsed:
    """The exports of one exports(5) file, with exportfs's warnings and
    errors (prefixed ``source:line``)."""
    result = Parsed()
    for number, line in _logical_lines(text):
        where = f'{source}:{number}'
        words = _WORD.findall(line)
        path, rest = words[0].replace('"', ''), words[1:]
        if not path.startswith('/'):
            result.errors.append(f'{where}: bad export point "{path}"')
            continue
        defaults = ''
        while rest and rest[0].startswith('-'):
            defaults += ',' + rest.pop(0)[1:]
        if not rest:
            rest = ['*']
            result.warnings.append(
                f'No host name given with {path} ({defaults.strip(",")}),'
                ' suggest *(' + defaults.strip(',') + ') to avoid warning')
        for word in rest:
            _parse_client(result, where, path, defaults, word)
    return result


def _parse_client(result: Parsed, where: str, path: str, defaults: str,
                  word: str) -> None:
    match = _CLIENT.match(word)
    if match is None:
        result.errors.append(f'{where}: syntax error: bad option list')
        return
    client = match.group('client') or '*'
    opts = Options()
    try:
        opts.apply(defaults)
        opts.apply(match.group('opts') or '')
    except ExportError as e:
        result.errors.append(f'{where}: {e}')
        return
    if not opts.subtree_given:
        result.warnings.append(
            f'{where}: Neither \'subtree_check\' or \'no_subtree_check\' '
            f'specified for export "{client}:{path}".\n'
            "  Assuming default behaviour ('no_subtree_check').\n"
            '  NOTE: this default has changed since nfs-utils version 1.0.x')
    result.exports.append(Export(os.path.normpath(path), client,
                                 opts.render()))


def exports_files() -> list[str]:
    """/etc/exports, then /etc/exports.d/*.exports in name order (host
    paths)."""
    files = [EXPORTS]
    pattern = os.path.join(host_path(EXPORTS_D), '*.exports')
    for path in sorted(glob.glob(pattern)):
        name = os.path.basename(path)
        if not name.startswith('.'):
            files.append(os.path.join(EXPORTS_D, name))
    return files


def read_files() -> Parsed:
    """Every export the files list, first of duplicates winning."""
    merged = Parsed()
    seen: dict[tuple[str, str], str] = {}
    for name in exports_files():
        try:
            with open(host_path(name), encoding='utf-8') as f:
                text = f.read()
        except FileNotFoundError:
            continue
        except OSError as e:
            merged.errors.append(f"can't open {name} for reading: {e}")
            continue
        parsed = parse(text, name)
        merged.warnings += parsed.warnings
        merged.errors += parsed.errors
        for export in parsed.exports:
            if export.key in seen:
                merged.warnings.append(
                    f'duplicated export entries:\n'
                    f'exportfs: \t{export.client}:{export.path}\n'
                    f'exportfs: \t{seen[export.key]}')
                continue
            seen[export.key] = f'{export.client}:{export.path}'
            merged.exports.append(export)
    return merged


def check_path(path: str) -> str | None:
    """Why ``path`` cannot be exported, as exportfs says it, or None."""
    try:
        mode = os.stat(host_path(path)).st_mode
    except OSError as e:
        return f'Failed to stat {path}: {e.strerror}'
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        return (f'{path} is neither a directory nor a file. Remote access '
                'will fail')
    return None


# -- the active table ------------------------------------------------------

def active() -> list[Export]:
    """The active exports, in the order exportfs lists them."""
    rows = hoststate.read(DB).get('table', [])
    exports = [Export(r['path'], r['client'], r['options']) for r in rows]
    return sorted(exports, key=lambda e: client_kind(e.client))


def save_table(rows: list[Export]) -> None:
    with hoststate.mutate(DB) as db:
        db['table'] = [e.to_dict() for e in rows]


def export_all(keep_others: bool) -> Parsed:
    """``exportfs -a`` (``keep_others``) or ``-r``: the table gets every
    export the files list whose path can be exported; ``-r`` drops what
    they no longer list. Returns the exports made and the complaints."""
    parsed = read_files()
    listed = {e.key for e in parsed.exports}
    kept = [e for e in active() if e.key not in listed] \
        if keep_others else []
    exported = []
    for export in parsed.exports:
        problem = check_path(export.path)
        if problem:
            parsed.errors.append(problem)
        else:
            exported.append(export)
    save_table(kept + exported)
    parsed.exports = exported
    return parsed

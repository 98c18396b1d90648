"""``exportfs`` stand-in (nfs-utils): maintains the host's table of active
NFS exports from /etc/exports and /etc/exports.d/*.exports. Nothing is
served over the network; the table is what ``-s`` and ``-v`` show.

Only there once nfs-kernel-server is installed, like the real binary.
"""
from __future__ import annotations

import getopt
import os

from kubernetes_mgmt_lab.emulated import exports, runner
from kubernetes_mgmt_lab.emulated.exports import Export, Options
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context

PROG = 'exportfs'
USAGE = 'usage: exportfs [-adfhioruvs] [host:/path]'
SHORT_OPTS = 'adfhio:ruvs'
_ESCAPED = {' ': '\\040', '\t': '\\011', '\n': '\\012', '\\': '\\134'}


class Flags:
    """The command line, as nfs-utils' getopt loop reads it."""

    def __init__(self, args: list[str]):
        try:
            opts, self.targets = getopt.getopt(args, SHORT_OPTS)
        except getopt.GetoptError as e:
            what = 'option requires an argument' if 'requires' in e.msg \
                else 'invalid option'
            raise CommandError(f"{PROG}: {what} -- '{e.opt}'\n{USAGE}",
                               1) from None
        given = [o for o, _ in opts]
        self.all = '-a' in given or '-r' in given
        self.reexport = '-r' in given
        self.unexport = '-u' in given
        self.ignore = '-i' in given
        self.verbose = '-v' in given
        self.export_format = '-s' in given
        self.flush = '-f' in given
        self.help = '-h' in given
        self.options = next((v for o, v in opts if o == '-o'), '')


def _say(ctx: Context, message: str) -> None:
    ctx.err(f'{PROG}: {message}')


def _escape(path: str) -> str:
    return ''.join(_ESCAPED.get(c, c) for c in path)


def dump(ctx: Context, verbose: bool, export_format: bool) -> None:
    """The table as nfs-utils prints it (``exportfs``, ``-v``, ``-s``)."""
    for export in exports.active():
        client = export.client
        if client == '*' and not export_format:
            client = '<world>'
        if export_format:
            line = f'{_escape(export.path)}  {client}'
        elif len(export.path) > 14:
            line = f'{export.path:<14}\n\t\t{client}'
        else:
            line = f'{export.path:<14}\t{client}'
        if verbose or export_format:
            line += f'({export.options})'
        ctx.out(line)


def _report(ctx: Context, parsed: exports.Parsed) -> int:
    for warning in parsed.warnings:
        _say(ctx, warning)
    for error in parsed.errors:
        _say(ctx, error)
    return 1 if parsed.errors else 0


def _need_root() -> None:
    if os.geteuid() != 0:
        raise CommandError(f'{PROG}: could not open /var/lib/nfs/.etab.lock '
                           'for locking: errno 13 (Permission denied)', 1)


def _split_target(target: str) -> tuple[str, str]:
    client, colon, path = target.partition(':')
    if not colon or not path.startswith('/'):
        raise CommandError(f'{PROG}: Invalid exporting option: {target}', 1)
    return client or '*', os.path.normpath(path)


def _export_all(ctx: Context, flags: Flags) -> int:
    """``-a`` / ``-r``: export what the files list; ``-r`` also drops
    what they no longer list."""
    parsed = exports.export_all(keep_others=not flags.reexport)
    if flags.verbose:
        for export in parsed.exports:
            ctx.out(f'exporting {export.client}:{export.path}')
    return _report(ctx, parsed)


def _export_targets(ctx: Context, flags: Flags) -> int:
    """``exportfs [-o OPTS] client:/path ...``: export ad hoc."""
    opts = Options()
    try:
        opts.apply(flags.options)
    except exports.ExportError as e:
        raise CommandError(f'{PROG}: {e}', 1) from None
    table = exports.active()
    rc = 0
    for target in flags.targets:
        client, path = _split_target(target)
        problem = exports.check_path(path)
        if problem:
            _say(ctx, problem)
            rc = 1
            continue
        if flags.verbose:
            ctx.out(f'exporting {client}:{path}')
        table = [e for e in table if e.key != (path, client)]
        table.append(Export(path, client, opts.render()))
    exports.save_table(table)
    return rc


def _unexport(ctx: Context, flags: Flags) -> int:
    table = exports.active()
    if flags.all:
        if flags.verbose:
            for export in table:
                ctx.out(f'unexporting {export.client}:{export.path}')
        exports.save_table([])
        return 0
    rc = 0
    for target in flags.targets:
        client, path = _split_target(target)
        kept = [e for e in table if e.key != (path, client)]
        if len(kept) == len(table):
            _say(ctx, f"Could not find '{client}:{path}' to unexport.")
            rc = 1
            continue
        if flags.verbose:
            ctx.out(f'unexporting {client}:{path}')
        table = kept
    exports.save_table(table)
    return rc


def main(ctx: Context, args: list[str]) -> int:
    flags = Flags(args)
    if flags.help:
        raise CommandError(USAGE, 0)
    if flags.targets and flags.all:
        raise CommandError(f'{PROG}: extra arguments are not permitted with '
                           '-a or -r', 1)
    if flags.ignore and (flags.all or flags.unexport):
        raise CommandError(f'{PROG}: -i not meaningful with -a, -r or -u',
                           1)
    if flags.reexport and flags.unexport:
        raise CommandError(f'{PROG}: -r and -u are incompatible', 1)
    if not flags.targets and not flags.all:
        if not flags.flush:
            dump(ctx, flags.verbose, flags.export_format)
        return 0    # -f alone: the kernel's cache, nothing recorded
    _need_root()
    if flags.unexport:
        return _unexport(ctx, flags)
    if flags.all:
        return _export_all(ctx, flags)
    return _export_targets(ctx, flags)


def _mutating(args: list[str]) -> bool:
    try:
        flags = Flags(args)
    except CommandError:
        return False
    return bool(flags.targets or flags.all)


def cli() -> None:
    runner.run(PROG, main, mutating=_mutating,
               needs=('nfs-kernel-server',))


if __name__ == '__main__':
    cli()

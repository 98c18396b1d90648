"""``systemctl`` stand-in: containerd, kubelet and the like are recorded;
haproxy and keepalived are really started, stopped and reloaded."""
from __future__ import annotations

import os

from kubernetes_mgmt_lab.emulated import daemons, runner, units
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context

QUERY_VERBS = ('is-active', 'is-enabled', 'is-failed', 'status', 'show')
VERBS = ('start', 'stop', 'restart', 'reload', 'try-restart',
         'reload-or-restart', 'enable', 'disable', 'mask', 'unmask',
         'daemon-reload', 'reset-failed', *QUERY_VERBS)
SWITCHES = ('--now', '-q', '--quiet', '--no-pager', '--no-block',
            '--system', '-l', '--full', '--no-ask-password', '--force',
            '-f', '--no-reload')


def _split(args: list[str]) -> tuple[set[str], list[str]]:
    opts, words = set(), []
    for arg in args:
        if arg.startswith('-'):
            if arg not in SWITCHES and not arg.startswith('--type'):
                raise CommandError(f'systemctl: unrecognized option '
                                   f"'{arg}'", 1)
            opts.add(arg)
        else:
            words.append(arg)
    return opts, words


def _need_root(verb: str, unit: str) -> None:
    if os.geteuid() != 0:
        raise CommandError(f'Failed to {verb} {units.display(unit)}: '
                           'Interactive authentication required.', 1)


def _mutate(ctx: Context, verb: str, unit: str, now: bool) -> None:
    _need_root(verb, unit)
    if verb in ('try-restart',) and units.active_state(unit) != 'active':
        return
    action = {'start': units.start, 'stop': units.stop,
              'restart': units.restart, 'try-restart': units.restart,
              'reload-or-restart': units.restart, 'reload': units.reload,
              'enable': units.enable, 'disable': units.disable,
              'mask': units.mask, 'unmask': units.unmask}[verb]
    action(ctx, unit)
    if now and verb == 'enable':
        units.start(ctx, unit)
    elif now and verb in ('disable', 'mask'):
        units.stop(ctx, unit)


def _status_text(unit: str) -> str:
    state = units.active_state(unit)
    enabled = 'enabled' if units.is_enabled(unit) else 'disabled'
    lines = [f'● {units.display(unit)}',
             f'     Loaded: loaded (/lib/systemd/system/'
             f'{units.display(unit)}; {enabled})',
             f'     Active: {state}']
    daemon = daemons.DAEMONS.get(unit)
    if daemon is not None and daemons.pids(daemon):
        lines.append(f'   Main PID: {daemons.pids(daemon)[0]} '
                     f'({daemon.binary})')
    failed = units.record(unit).get('failed')
    if failed and state == 'failed':
        lines.append(failed)
    return '\n'.join(lines)


def _query(ctx: Context, verb: str, names: list[str], quiet: bool) -> int:
    rc = 0
    for unit in names:
        if verb == 'status':
            if not units.known(unit):
                ctx.err(f'Unit {units.display(unit)} could not be found.')
                rc = max(rc, 4)
                continue
            ctx.out(_status_text(unit))
            rc = max(rc, 0 if units.active_state(unit) == 'active' else 3)
        elif verb == 'is-enabled':
            if not units.known(unit):
                ctx.err('Failed to get unit file state for '
                        f'{units.display(unit)}: No such file or '
                        'directory')
                rc = max(rc, 1)
                continue
            on = units.is_enabled(unit)
            if units.record(unit).get('masked'):
                on, text = False, 'masked'
            else:
                text = 'enabled' if on else 'disabled'
            quiet or ctx.out(text)
            rc = max(rc, 0 if on else 1)
        else:
            rc = max(rc, _state_query(ctx, verb, unit, quiet))
    return rc


def _state_query(ctx: Context, verb: str, unit: str, quiet: bool) -> int:
    state = units.active_state(unit)
    if verb == 'show':
        ctx.out(f'ActiveState={state}')
        return 0
    if not quiet:
        ctx.out(state)
    if verb == 'is-failed':
        return 0 if state == 'failed' else 1
    return 0 if state == 'active' else 3


def main(ctx: Context, args: list[str]) -> int:
    opts, words = _split(args)
    if not words:
        raise CommandError('Too few arguments.', 1)
    verb, names = words[0], [units.normalize(w) for w in words[1:]]
    if verb not in VERBS:
        raise CommandError(f'Unknown command verb {verb}.', 1)
    quiet = bool(opts & {'-q', '--quiet'})
    if verb in ('daemon-reload', 'reset-failed'):
        return 0
    if not names:
        raise CommandError('Too few arguments.', 1)
    if verb in QUERY_VERBS:
        return _query(ctx, verb, names, quiet)
    try:
        for unit in names:
            _mutate(ctx, verb, unit, '--now' in opts)
    except units.UnitError as e:
        raise CommandError(e.message, e.code) from None
    return 0


def _mutating(args: list[str]) -> bool:
    words = [a for a in args if not a.startswith('-')]
    return bool(words) and words[0] not in QUERY_VERBS


def cli() -> None:
    runner.run('systemctl', main, mutating=_mutating)


if __name__ == '__main__':
    cli()

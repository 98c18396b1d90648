"""``apt-mark hold|unhold|showhold`` on the host's recorded packages."""
from __future__ import annotations

from kubernetes_mgmt_lab.emulated import hoststate, packages, runner
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context


def _set_hold(ctx: Context, names: list[str], hold: bool) -> int:
    have = packages.installed()
    for name in names:
        if name not in have:
            raise CommandError(f'E: Unable to locate package {name}', 100)
    with hoststate.mutate(packages.DB) as db:
        for name in names:
            was = bool(db[name].get('hold'))
            db[name]['hold'] = hold
            if was == hold:
                state = 'already set on hold' if hold else \
                    'already not on hold'
                ctx.out(f'{name} was {state}.')
            else:
                ctx.out(f'{name} set on hold.' if hold else
                        f'Canceled hold on {name}.')
    return 0


def main(ctx: Context, args: list[str]) -> int:
    words = [a for a in args if not a.startswith('-')]
    if not words:
        raise CommandError('E: No command given', 100)
    command, names = words[0], words[1:]
    if command in ('hold', 'unhold'):
        if not names:
            raise CommandError('E: No packages found', 100)
        return _set_hold(ctx, names, command == 'hold')
    if command == 'showhold':
        for name, entry in sorted(packages.installed().items()):
            if entry.get('hold') and (not names or name in names):
                ctx.out(name)
        return 0
    raise CommandError(f'E: Invalid operation {command}', 100)


def _mutating(args: list[str]) -> bool:
    return any(a in ('hold', 'unhold') for a in args)


def cli() -> None:
    runner.run('apt-mark', main, mutating=_mutating)


if __name__ == '__main__':
    cli()

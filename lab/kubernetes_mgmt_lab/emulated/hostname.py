"""``hostname`` stand-in: the lab host's own name and address."""
from __future__ import annotations

from kubernetes_mgmt_lab.emulated import recorder, runner
from kubernetes_mgmt_lab.emulated.runner import Context


def current(ctx: Context) -> str:
    return recorder.recall('hostname').get('name') or ctx.host.name


def main(ctx: Context, args: list[str]) -> int:
    if not args or args[0] in ('-s', '--short', '-f', '--fqdn'):
        ctx.out(current(ctx))
    elif args[0] in ('-I', '--all-ip-addresses', '-i', '--ip-address'):
        ctx.out(ctx.host.ip + (' ' if args[0].startswith('-I') or
                               'all' in args[0] else ''))
    else:
        recorder.remember('hostname', 'name', args[-1])
    return 0


def _mutating(args: list[str]) -> bool:
    return bool(args) and not args[0].startswith('-')


def cli() -> None:
    runner.run('hostname', main, mutating=_mutating)


if __name__ == '__main__':
    cli()

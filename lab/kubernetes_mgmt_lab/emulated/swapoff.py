"""``swapoff`` stand-in: records that swap is off on this host."""
from __future__ import annotations

from kubernetes_mgmt_lab.emulated import recorder, runner
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context


def main(ctx: Context, args: list[str]) -> int:
    if not args:
        raise CommandError('swapoff: bad usage\nTry \'swapoff --help\' '
                           'for more information.', 1)
    recorder.remember('swap', 'enabled', False)
    return 0


def cli() -> None:
    runner.run('swapoff', main)


if __name__ == '__main__':
    cli()

"""``swapon`` stand-in: ``--show`` prints nothing once swap is off."""
from __future__ import annotations

from kubernetes_mgmt_lab.emulated import recorder, runner
from kubernetes_mgmt_lab.emulated.runner import Context


def main(ctx: Context, args: list[str]) -> int:
    if not args or args[0] in ('--show', '-s', '--summary'):
        return 0        # lab VMs have no swap device
    recorder.remember('swap', 'enabled', True)
    return 0


def _mutating(args: list[str]) -> bool:
    return bool(args) and args[0] not in ('--show', '-s', '--summary')


def cli() -> None:
    runner.run('swapon', main, mutating=_mutating)


if __name__ == '__main__':
    cli()

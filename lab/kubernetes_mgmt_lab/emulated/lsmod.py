"""``lsmod`` stand-in: the modules ``modprobe`` recorded."""
from __future__ import annotations

from kubernetes_mgmt_lab.emulated import recorder, runner
from kubernetes_mgmt_lab.emulated.runner import Context


def main(ctx: Context, args: list[str]) -> int:
    ctx.out('Module                  Size  Used by')
    for name, loaded in sorted(recorder.recall('modules').items()):
        if loaded:
            ctx.out(f'{name:<24}{16384:>5}  0')
    return 0


def cli() -> None:
    runner.run('lsmod', main, mutating=lambda a: False)


if __name__ == '__main__':
    cli()

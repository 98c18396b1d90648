"""``reboot`` / ``shutdown`` stand-in: recorded only (a real one would
take the whole machine down with every lab host on it)."""
from __future__ import annotations

from kubernetes_mgmt_lab.emulated import runner
from kubernetes_mgmt_lab.emulated.runner import Context


def main(ctx: Context, args: list[str]) -> int:
    ctx.err('lab: reboot recorded, not performed')
    return 0


def cli() -> None:
    runner.run('reboot', main)


if __name__ == '__main__':
    cli()

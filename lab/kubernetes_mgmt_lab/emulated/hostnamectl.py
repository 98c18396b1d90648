"""``hostnamectl`` stand-in: set-hostname is recorded per host instead of
renaming the machine."""
from __future__ import annotations

from kubernetes_mgmt_lab.emulated import hostname, recorder, runner
from kubernetes_mgmt_lab.emulated.host import host_path
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context


def main(ctx: Context, args: list[str]) -> int:
    words = [a for a in args if not a.startswith('-')]
    if words[:1] in (['set-hostname'], ['hostname']) and len(words) == 2:
        recorder.remember('hostname', 'name', words[1])
        with open(host_path('/etc/hostname'), 'w', encoding='utf-8') as f:
            f.write(words[1] + '\n')
        return 0
    if not words or words[:1] == ['status']:
        ctx.out(f' Static hostname: {hostname.current(ctx)}')
        return 0
    if words == ['hostname']:
        ctx.out(hostname.current(ctx))
        return 0
    raise CommandError(f'Unknown command verb {words[0]}.', 1)


def _mutating(args: list[str]) -> bool:
    return 'set-hostname' in args


def cli() -> None:
    runner.run('hostnamectl', main, mutating=_mutating)


if __name__ == '__main__':
    cli()

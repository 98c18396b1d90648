"""``modprobe`` stand-in: records modules, never loads into the shared
kernel."""
from __future__ import annotations

from kubernetes_mgmt_lab.emulated import recorder, runner
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context

SWITCHES = {'-a', '--all', '-q', '--quiet', '-v', '--verbose', '-b',
            '--use-blacklist', '-n', '--dry-run'}


def main(ctx: Context, args: list[str]) -> int:
    remove = any(a in ('-r', '--remove') for a in args)
    names = [a for a in args if not a.startswith('-')]
    for arg in args:
        if arg.startswith('-') and arg not in SWITCHES | {'-r',
                                                          '--remove'}:
            raise CommandError(f"modprobe: unrecognized option '{arg}'", 1)
    if not names:
        raise CommandError('modprobe: ERROR: missing parameters. See '
                           '-h.', 1)
    if '-a' not in args and '--all' not in args:
        names = names[:1]       # the rest are module parameters
    for name in names:
        recorder.remember('modules', name.replace('-', '_'), not remove)
    return 0


def cli() -> None:
    runner.run('modprobe', main)


if __name__ == '__main__':
    cli()

"""``kubelet`` stand-in: only ``--version`` (the service itself is a
systemd unit, see ``systemctl``)."""
from __future__ import annotations

from kubernetes_mgmt_lab.emulated import packages, runner
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context


def main(ctx: Context, args: list[str]) -> int:
    if args and args[0] in ('--version', '--version=true'):
        version = packages.kube_version('kubelet',
                                        ctx.config.kubernetes_version)
        ctx.out(f'Kubernetes {version}')
        return 0
    raise CommandError('the lab runs the kubelet as a recorded systemd '
                       'unit; use "systemctl start kubelet"', 1)


def cli() -> None:
    runner.run('kubelet', main, mutating=lambda a: False,
               needs=('kubelet',))


if __name__ == '__main__':
    cli()

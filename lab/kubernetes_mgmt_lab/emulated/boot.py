"""What systemd does when a lab VM boots again after it was powered
off: every unit counts as stopped (its processes died with the VM), then
the enabled ones start, the kubelet last, as their dependencies order
them. The kubelet's start brings back its static pods (etcd and the API
server of a master), HAProxy and keepalived are the real daemons.

Run by the host's init (``hostinit``) at every boot of a host that has
unit records, i.e. not at its first boot."""
from __future__ import annotations

from kubernetes_mgmt_lab.emulated import hoststate, runner, units
from kubernetes_mgmt_lab.emulated.runner import Context

# Services first, then the node's agents; any other unit after them.
ORDER = ('containerd', 'nfs-server', 'haproxy', 'keepalived', 'kubelet')


def _boot_rank(unit: str) -> int:
    return ORDER.index(unit) if unit in ORDER else len(ORDER)


def enabled_units() -> list[str]:
    """The units to start, in boot order; every record marked stopped."""
    with hoststate.mutate(units.DB) as db:
        for record in db.values():
            record['active'] = False
            record['failed'] = None
        wanted = [unit for unit, record in db.items()
                  if record.get('enabled') and not record.get('masked')]
    return sorted(wanted, key=_boot_rank)


def main(ctx: Context, args: list[str]) -> int:
    failed = 0
    for unit in enabled_units():
        try:
            units.start(ctx, unit)
            ctx.out(f'boot: started {units.display(unit)}')
        except units.UnitError as e:
            # systemd boots on when a unit fails; so does the lab.
            failed += 1
            ctx.err(f'boot: {units.display(unit)} failed: {e.message}')
    return 1 if failed else 0


def cli() -> None:
    runner.run('boot', main)


if __name__ == '__main__':
    cli()

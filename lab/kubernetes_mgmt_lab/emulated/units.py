"""systemd units of a lab host: recorded state, except haproxy and
keepalived which are the real daemons (see ``daemons``). Starting and
stopping nfs-server syncs and clears the export table, as its unit's
``exportfs -r`` / ``exportfs -au`` do."""
from __future__ import annotations

import os
import sys

from kubernetes_mgmt_lab.emulated import daemons, hoststate, packages
from kubernetes_mgmt_lab.emulated.host import host_path

TYPE_CHECKING = False    # as in runner: no import of typing at start-up
if TYPE_CHECKING:
    from kubernetes_mgmt_lab.emulated.runner import Context

DB = 'units'
# Units any Ubuntu cloud image has before we install anything.
BASE_UNITS = frozenset((
    'ssh', 'sshd', 'ufw', 'apparmor', 'cron', 'rsyslog', 'snapd',
    'systemd-resolved', 'systemd-modules-load', 'systemd-sysctl',
    'systemd-timesyncd', 'systemd-networkd', 'multipathd',
    'unattended-upgrades', 'apt-daily.timer', 'apt-daily-upgrade.timer',
    'rpcbind', 'swap.target'))
PACKAGE_UNITS = {
    'containerd': ('containerd',), 'containerd.io': ('containerd',),
    'kubelet': ('kubelet',), 'haproxy': ('haproxy',),
    'keepalived': ('keepalived',),
    'nfs-kernel-server': ('nfs-server',),
    'nfs-common': ('nfs-client.target',), 'chrony': ('chrony',),
}
KUBELET_CONFIG = '/var/lib/kubelet/config.yaml'
# Other names of a unit (systemd's Alias=): one unit, one record.
ALIASES = {'nfs-kernel-server': 'nfs-server'}


class UnitError(Exception):
    """A systemctl failure: message and systemctl's exit status."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.message = message
        self.code = code


def normalize(unit: str) -> str:
    name = unit[:-len('.service')] if unit.endswith('.service') else unit
    return ALIASES.get(name, name)


def display(unit: str) -> str:
    return unit if '.' in unit else f'{unit}.service'


def known(unit: str) -> bool:
    if unit in BASE_UNITS:
        return True
    have = packages.installed()
    return any(unit in PACKAGE_UNITS.get(p, ()) for p in have)


def record(unit: str) -> dict:
    return hoststate.read(DB).get(unit, {})


def _update(unit: str, **values) -> None:
    with hoststate.mutate(DB) as db:
        db.setdefault(unit, {}).update(values)


def active_state(unit: str) -> str:
    """What ``systemctl is-active`` prints."""
    rec = record(unit)
    daemon = daemons.DAEMONS.get(unit)
    if daemon is not None:
        if daemons.is_running(daemon):
            return 'active'
        return 'failed' if rec.get('failed') else 'inactive'
    if rec.get('failed'):
        return 'failed'
    if not rec.get('active'):
        return 'inactive'
    if unit == 'kubelet' and not os.path.exists(host_path(KUBELET_CONFIG)):
        # The packaged kubelet crash-loops until kubeadm configures it.
        return 'activating'
    return 'active'


def is_enabled(unit: str) -> bool:
    return bool(record(unit).get('enabled'))


def _require(unit: str, verb: str) -> None:
    if not known(unit):
        raise UnitError(f'Failed to {verb} {display(unit)}: Unit '
                        f'{display(unit)} not found.', 5)
    if record(unit).get('masked'):
        raise UnitError(f'Failed to {verb} {display(unit)}: Unit '
                        f'{display(unit)} is masked.', 1)


def _job_failed(unit: str, output: str) -> UnitError:
    _update(unit, failed=output or 'failed', active=False)
    return UnitError(
        f'Job for {display(unit)} failed because the control process '
        'exited with error code.\nSee "systemctl status '
        f'{display(unit)}" and "journalctl -xeu {display(unit)}" for '
        'details.', 1)


def set_active(ctx: Context, unit: str, active: bool,
               restarted: bool = False) -> None:
    """Record the unit as (in)active (``restarted``: its process was
    started again even if it was running); the kubelet's state is
    shared."""
    was = bool(record(unit).get('active'))
    _update(unit, active=active, failed=None)
    if unit == 'nfs-server' and was != active:
        _nfs_exports(active)     # starting an active unit runs nothing
    if unit == 'kubelet':
        _kubelet(ctx, active, started=active and (restarted or not was))


def _kubelet(ctx: Context, active: bool, started: bool) -> None:
    """Only a configured kubelet posts node status to the cluster; a
    kubelet process started now runs the binary installed now, so its
    node reports that version from now on (not after a mere package
    upgrade)."""
    from kubernetes_mgmt_lab.emulated import cluster, recorder
    posting = active and os.path.exists(host_path(KUBELET_CONFIG))
    version = None
    if started:
        version = packages.kube_version('kubelet',
                                        ctx.config.kubernetes_version)
        recorder.note(ctx.cluster_dir, ctx.host.name, 'kubelet-start',
                      version=version)
    elif not active:
        recorder.note(ctx.cluster_dir, ctx.host.name, 'kubelet-stop')
    cluster.set_kubelet(ctx.cluster_dir, ctx.host.name, posting, version)


def start(ctx: Context, unit: str, restarted: bool = False) -> None:
    _require(unit, 'start')
    daemon = daemons.DAEMONS.get(unit)
    if daemon is not None:
        try:
            daemons.start(daemon)
        except daemons.DaemonError as e:
            raise _job_failed(unit, e.output) from None
    set_active(ctx, unit, True, restarted)
    if unit == 'kubelet' and os.path.isdir(host_path('/etc/kubernetes/'
                                                     'manifests')):
        _sync_static_pods(ctx)


def _sync_static_pods(ctx: Context) -> None:
    """A (re)started kubelet runs its static pods at once; one that
    fails to start is the kubelet's log's business, not systemctl's."""
    from kubernetes_mgmt_lab.emulated import static_pods
    from kubernetes_mgmt_lab.emulated.runner import CommandError
    try:
        static_pods.sync(ctx)
    except CommandError as e:
        print(f'kubelet: static pod failed: {e.message}', file=sys.stderr)


def stop(ctx: Context, unit: str) -> None:
    if not known(unit):
        raise UnitError(f'Failed to stop {display(unit)}: Unit '
                        f'{display(unit)} not loaded.', 5)
    daemon = daemons.DAEMONS.get(unit)
    if daemon is not None:
        daemons.stop(daemon)
    set_active(ctx, unit, False)


def restart(ctx: Context, unit: str) -> None:
    _require(unit, 'restart')
    daemon = daemons.DAEMONS.get(unit)
    if daemon is not None:
        try:
            daemons.check_config(daemon)
        except daemons.DaemonError as e:
            # systemd stops the old process before ExecStartPre fails.
            daemons.stop(daemon)
            raise _job_failed(unit, e.output) from None
        daemons.stop(daemon)
    start(ctx, unit, restarted=True)


def reload(ctx: Context, unit: str) -> None:
    _require(unit, 'reload')
    if active_state(unit) != 'active':
        raise UnitError(f'{display(unit)} is not active, cannot reload.',
                        1)
    if unit == 'nfs-server':
        _nfs_exports(True)
    daemon = daemons.DAEMONS.get(unit)
    if daemon is None:
        return
    try:
        daemons.reload(daemon)
    except daemons.DaemonError as e:
        # A failed reload keeps the old process serving.
        raise UnitError(
            f'Job for {display(unit)} failed.\nSee "systemctl status '
            f'{display(unit)}" for details.\n{e.output}', 1) from None


def _nfs_exports(active: bool) -> None:
    """nfs-server.service: ExecStartPre/ExecReload ``-exportfs -r``
    (failures ignored), ExecStopPost ``exportfs -au``."""
    from kubernetes_mgmt_lab.emulated import exports
    if active:
        exports.export_all(keep_others=False)
    else:
        exports.save_table([])


def enable(ctx: Context, unit: str) -> None:
    if not known(unit):
        raise UnitError('Failed to enable unit: Unit file '
                        f'{display(unit)} does not exist.', 1)
    _update(unit, enabled=True)


def disable(ctx: Context, unit: str) -> None:
    if not known(unit):
        raise UnitError('Failed to disable unit: Unit file '
                        f'{display(unit)} does not exist.', 1)
    _update(unit, enabled=False)


def mask(ctx: Context, unit: str) -> None:
    _update(unit, masked=True, enabled=False)


def unmask(ctx: Context, unit: str) -> None:
    _update(unit, masked=False)


def on_package_installed(ctx: Context, package: str) -> None:
    """Debian packages enable and start their services on install."""
    for unit in PACKAGE_UNITS.get(package, ()):
        _update(unit, enabled=True)
        daemon = daemons.DAEMONS.get(unit)
        if daemon is not None and not os.path.exists(daemon.cfg()):
            continue        # the unit's condition on its config fails
        try:
            start(ctx, unit)
        except UnitError:
            pass            # dpkg only warns when a service fails


def on_package_removed(ctx: Context, package: str) -> None:
    for unit in PACKAGE_UNITS.get(package, ()):
        if active_state(unit) in ('active', 'activating'):
            stop(ctx, unit)
        _update(unit, enabled=False)

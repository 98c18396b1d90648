"""``apt-get`` stand-in: records packages on the host instead of
touching the machine's dpkg database.  Each ``install`` that installs
something new spends the lab's configured ``install_delay``."""
from __future__ import annotations

import os
import sys
import time

from kubernetes_mgmt_lab.emulated import (
    apt_repo,
    exports,
    hoststate,
    packages,
    recorder,
    runner,
    units,
)
from kubernetes_mgmt_lab.emulated.config import LabConfig
from kubernetes_mgmt_lab.emulated.host import host_path
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context

SWITCHES = {'-y', '--yes', '--assume-yes', '-q', '-qq', '--quiet',
            '--no-install-recommends', '--install-recommends',
            '--allow-downgrades', '--allow-change-held-packages',
            '--allow-unauthenticated', '--allow-remove-essential',
            '-f', '--fix-broken', '--reinstall', '--purge', '--no-upgrade',
            '--only-upgrade', '-m', '--fix-missing'}
VALUE_OPTS = {'-o', '--option', '-t', '--target-release', '-c'}
COMMANDS = ('update', 'install', 'remove', 'purge', 'autoremove',
            'clean', 'autoclean', 'upgrade', 'dist-upgrade', 'full-upgrade')
# What the packages pull in (apt resolves dependencies).
DEPENDS = {'kubeadm': ('cri-tools', 'kubernetes-cni'),
           'kubelet': ('kubernetes-cni',)}
DEFAULT_HAPROXY_CFG = """\
# Written by the lab's haproxy package stand-in: no proxies yet.
global
    log /dev/log local0
    maxconn 2000

defaults
    mode tcp
    timeout connect 5s
    timeout client 1m
    timeout server 1m
"""


def _parse(args: list[str]) -> tuple[set[str], list[str]]:
    opts, words, it = set(), [], iter(args)
    for arg in it:
        if arg in VALUE_OPTS:
            next(it, None)
        elif arg.startswith(('-o=', '--option=')):
            continue
        elif arg.startswith('-'):
            if arg not in SWITCHES:
                raise CommandError(f'E: Command line option {arg} is not '
                                   'understood in combination with the '
                                   'other options', 100)
            opts.add(arg)
        else:
            words.append(arg)
    return opts, words


def _confirm(ctx: Context, opts: set[str]) -> None:
    if opts & {'-y', '--yes', '--assume-yes'}:
        return
    sys.stdout.write('Do you want to continue? [Y/n] ')
    sys.stdout.flush()
    answer = sys.stdin.readline()
    if not answer or answer.strip().lower() not in ('', 'y', 'yes'):
        raise CommandError('Abort.', 1)


def _resolve(ctx: Context, name: str, wanted: str | None) -> str:
    """The version apt installs for ``name[=wanted]`` from this host's
    repository; apt's error when it has none."""
    releases = ctx.config.releases
    version = packages.resolve_version(
        name, wanted, ctx.config.kubernetes_version, releases,
        apt_repo.repository_minor())
    try:
        apt_repo.check_offered(name, wanted, version, releases)
    except apt_repo.NotFound as e:
        raise CommandError(str(e), 100) from None
    return version


def _plan(ctx: Context, opts: set[str], words: list[str]) -> dict:
    have = packages.installed()
    plan: dict[str, str] = {}
    for word in words:
        name, _, wanted = word.partition('=')
        version = _resolve(ctx, name, wanted or None)
        current = have.get(name)
        if current and current['version'] == version and \
                '--reinstall' not in opts:
            ctx.out(f'{name} is already the newest version ({version}).')
            continue
        if current and current.get('hold') and \
                '--allow-change-held-packages' not in opts:
            raise CommandError('E: Held packages were changed and -y was '
                               'used without --allow-change-held-packages.',
                               100)
        if current and version < current['version'] and \
                '--allow-downgrades' not in opts:
            raise CommandError('E: Packages were downgraded and -y was '
                               'used without --allow-downgrades.', 100)
        plan[name] = version
        for dep in DEPENDS.get(name, ()):
            if dep not in have and dep not in plan:
                plan[dep] = packages.resolve_version(
                    dep, None, ctx.config.kubernetes_version)
    return plan


# Configuration files packages install when absent (kept on upgrade).
CONFFILES = {'haproxy': ('/etc/haproxy/haproxy.cfg', DEFAULT_HAPROXY_CFG),
             'nfs-kernel-server': (exports.EXPORTS,
                                   exports.DEFAULT_EXPORTS)}


def _postinst(ctx: Context, name: str) -> None:
    if name in CONFFILES:
        path, text = CONFFILES[name]
        cfg = host_path(path)
        if not os.path.exists(cfg):
            os.makedirs(os.path.dirname(cfg), exist_ok=True)
            with open(cfg, 'w', encoding='utf-8') as f:
                f.write(text)
    units.on_package_installed(ctx, name)


def _spend_install_time(ctx: Context) -> None:
    """The emulated install takes the host's configured time. The
    configuration is read again while waiting, so that a test can let a
    slow install finish when its scenario needs it to."""
    started = time.monotonic()
    delay = ctx.config.install_seconds(ctx.host.name)
    while (left := delay - (time.monotonic() - started)) > 0:
        time.sleep(min(left, 0.2))
        delay = LabConfig.load(ctx.cluster_dir).install_seconds(
            ctx.host.name)


def _install(ctx: Context, opts: set[str], words: list[str]) -> int:
    plan = _plan(ctx, opts, words)
    if not plan:
        ctx.out('0 upgraded, 0 newly installed, 0 to remove.')
        return 0
    ctx.out('The following packages will be installed:\n  '
            + ' '.join(sorted(plan)))
    _confirm(ctx, opts)
    _spend_install_time(ctx)
    with hoststate.mutate(packages.DB) as db:
        before = {name: db.get(name, {}).get('version') for name in plan}
        for name, version in plan.items():
            db.setdefault(name, {})['version'] = version
    for name, version in plan.items():
        recorder.note(ctx.cluster_dir, ctx.host.name, 'package',
                      package=name, version=version, previous=before[name])
        ctx.out(f'Setting up {name} ({version}) ...')
        _postinst(ctx, name)
    return 0


def _remove(ctx: Context, opts: set[str], words: list[str]) -> int:
    have = packages.installed()
    doomed = []
    for name in words:
        if name not in have:
            ctx.out(f"Package '{name}' is not installed, so not removed")
        elif have[name].get('hold') and \
                '--allow-change-held-packages' not in opts:
            raise CommandError('E: Held packages were changed and -y was '
                               'used without --allow-change-held-packages.',
                               100)
        else:
            doomed.append(name)
    if doomed:
        _confirm(ctx, opts)
    for name in doomed:
        units.on_package_removed(ctx, name)
        with hoststate.mutate(packages.DB) as db:
            gone = db.pop(name, None) or {}
        recorder.note(ctx.cluster_dir, ctx.host.name, 'package',
                      package=name, version=None,
                      previous=gone.get('version'))
        ctx.out(f'Removing {name} ...')
    return 0


def main(ctx: Context, args: list[str]) -> int:
    opts, words = _parse(args)
    if not words:
        raise CommandError('E: Invalid operation', 100)
    command, names = words[0], words[1:]
    if command not in COMMANDS:
        raise CommandError(f'E: Invalid operation {command}', 100)
    if os.geteuid() != 0:
        raise CommandError('E: Could not open lock file /var/lib/dpkg/'
                           'lock-frontend - open (13: Permission denied)',
                           100)
    if command == 'install':
        return _install(ctx, opts, names)
    if command in ('remove', 'purge'):
        return _remove(ctx, opts, names)
    if command == 'update':
        with hoststate.mutate('apt') as db:
            db['updated'] = time.time()
    ctx.out('Reading package lists... Done')
    return 0


def cli() -> None:
    runner.run('apt-get', main)


if __name__ == '__main__':
    cli()

"""``sysctl`` stand-in: ``-w``, ``-p FILE``, ``--system`` and reads are
recorded per host; the shared kernel is never touched."""
from __future__ import annotations

import glob
import os

from kubernetes_mgmt_lab.emulated import recorder, runner
from kubernetes_mgmt_lab.emulated.host import host_path
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context

DB = 'sysctl'
DEFAULTS = {'net.ipv4.ip_forward': '0',
            'net.bridge.bridge-nf-call-iptables': '1',
            'net.bridge.bridge-nf-call-ip6tables': '1',
            'vm.swappiness': '60'}
SYSTEM_DIRS = ('/etc/sysctl.d', '/run/sysctl.d', '/usr/local/lib/sysctl.d')


def _key(name: str) -> str:
    return name.replace('/', '.')


def _load_file(ctx: Context, path: str, quiet: bool) -> None:
    try:
        with open(host_path(path), encoding='utf-8') as f:
            lines = f.read().splitlines()
    except OSError:
        raise CommandError(f'sysctl: cannot open "{path}": No such file or '
                           'directory', 255) from None
    if not quiet:
        ctx.out(f'* Applying {path} ...')
    for line in lines:
        line = line.strip()
        if not line or line.startswith(('#', ';')) or '=' not in line:
            continue
        key, _, value = line.lstrip('-').partition('=')
        _set(ctx, key.strip(), value.strip(), quiet)


def _set(ctx: Context, key: str, value: str, quiet: bool) -> None:
    recorder.remember(DB, _key(key), value)
    if not quiet:
        ctx.out(f'{_key(key)} = {value}')


def _get(ctx: Context, key: str, values_only: bool) -> None:
    known = {**DEFAULTS, **recorder.recall(DB)}
    if _key(key) not in known:
        raise CommandError(f'sysctl: cannot stat /proc/sys/'
                           f'{key.replace(".", "/")}: No such file or '
                           'directory', 255)
    value = known[_key(key)]
    ctx.out(value if values_only else f'{_key(key)} = {value}')


def main(ctx: Context, args: list[str]) -> int:
    quiet = '-q' in args or '--quiet' in args
    values_only = '-n' in args or '--values' in args
    words = [a for a in args if a not in ('-q', '--quiet', '-n',
                                          '--values', '-e')]
    if '--system' in words:
        for folder in SYSTEM_DIRS:
            for path in sorted(glob.glob(os.path.join(host_path(folder),
                                                      '*.conf'))):
                rel = os.path.join(folder, os.path.basename(path))
                _load_file(ctx, rel, quiet)
        if os.path.exists(host_path('/etc/sysctl.conf')):
            _load_file(ctx, '/etc/sysctl.conf', quiet)
        return 0
    if words[:1] in (['-p'], ['--load']) or \
            (words and words[0].startswith('-p')):
        path = words[1] if len(words) > 1 and words[0] in ('-p', '--load') \
            else (words[0][2:] or '/etc/sysctl.conf')
        _load_file(ctx, path, quiet)
        return 0
    write = words[:1] == ['-w']
    for item in words[1:] if write else words:
        if item.startswith('-'):
            raise CommandError(f"sysctl: illegal option -- '{item}'", 255)
        if '=' in item:
            key, _, value = item.partition('=')
            _set(ctx, key, value, quiet)
        else:
            _get(ctx, item, values_only)
    return 0


def _mutating(args: list[str]) -> bool:
    return any(a in ('-w', '--system', '-p', '--load') or '=' in a
               for a in args)


def cli() -> None:
    runner.run('sysctl', main, mutating=_mutating)


if __name__ == '__main__':
    cli()

"""``dpkg`` / ``dpkg-query`` stand-in over the host's recorded packages:
queries, and ``-i`` of local .deb files (recorded, never unpacked onto
the machine's shared /usr)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess

from kubernetes_mgmt_lab.emulated import hoststate, packages, runner, units
from kubernetes_mgmt_lab.emulated.host import host_path
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context


def _deb_identity(path: str) -> tuple[str, str]:
    """(package, version) from the .deb's control data or its name."""
    if shutil.which('dpkg-deb'):
        proc = subprocess.run(['dpkg-deb', '-f', host_path(path),
                               'Package', 'Version'], capture_output=True,
                              text=True, check=False)
        fields = dict(re.findall(r'^(\w+): (.*)$', proc.stdout, re.M))
        if proc.returncode == 0 and 'Package' in fields:
            return fields['Package'], fields.get('Version', '0')
    name = os.path.basename(path)[:-len('.deb')]
    package, _, rest = name.partition('_')
    return package, rest.split('_')[0] or '0'


def _install(ctx: Context, files: list[str]) -> int:
    for path in files:
        if not os.path.exists(host_path(path)):
            raise CommandError(f"dpkg: error: cannot access archive '{path}'"
                               ': No such file or directory', 2)
        name, version = _deb_identity(path)
        with hoststate.mutate(packages.DB) as db:
            db.setdefault(name, {})['version'] = version
        ctx.out(f'Setting up {name} ({version}) ...')
        units.on_package_installed(ctx, name)
    return 0


def _status(ctx: Context, names: list[str]) -> int:
    have, rc = packages.installed(), 0
    for name in names:
        if name not in have:
            ctx.err(f"dpkg-query: package '{name}' is not installed and no "
                    'information is available')
            rc = 1
            continue
        ctx.out(f'Package: {name}\nStatus: install ok installed\n'
                f'Version: {have[name]["version"]}')
    return rc


def _list(ctx: Context, names: list[str], fmt: str | None) -> int:
    have = packages.installed()
    wanted = names or sorted(have)
    missing = [n for n in wanted if n not in have]
    for name in wanted:
        if name in have:
            version = have[name]['version']
            if fmt is None:
                ctx.out(f'ii  {name:<20} {version:<16} amd64')
            else:
                print(fmt.replace('${Version}', version)
                      .replace('${Package}', name)
                      .replace('${Status}', 'install ok installed')
                      .replace('\\n', '\n'), end='')
    if missing:
        ctx.err(f'dpkg-query: no packages found matching {missing[0]}')
        return 1
    return 0


def main(ctx: Context, args: list[str]) -> int:
    fmt = None
    rest = []
    for arg in args:
        if arg.startswith(('-f=', '--showformat=')):
            fmt = arg.split('=', 1)[1]
        else:
            rest.append(arg)
    if '-f' in rest:
        i = rest.index('-f')
        fmt = rest[i + 1] if i + 1 < len(rest) else ''
        del rest[i:i + 2]
    if not rest:
        raise CommandError('dpkg: error: need an action option', 2)
    action, names = rest[0], rest[1:]
    if action in ('-i', '--install'):
        return _install(ctx, names)
    if action in ('-s', '--status'):
        return _status(ctx, names)
    if action in ('-l', '--list', '-W', '--show'):
        return _list(ctx, names, fmt if action in ('-W', '--show')
                     else None)
    if action in ('--configure', '--get-selections'):
        return 0
    raise CommandError(f'dpkg: error: unknown option {action}', 2)


def _mutating(args: list[str]) -> bool:
    return bool(args) and args[0] in ('-i', '--install')


def cli() -> None:
    runner.run('dpkg', main, mutating=_mutating)


if __name__ == '__main__':
    cli()

"""``ctr`` stand-in: Debian's real ``/usr/bin/ctr`` against a real
containerd of this VM (``node_images``), for what install scripts do
with images: ``images pull|import|ls|rm`` and ``version``.

A lab VM's ``containerd`` unit is emulated, and the machine's ctr in
PATH would look for a socket no VM has. Here the command's flags are
checked (the lab runs only the sub-commands above), the VM's containerd
is started for the command, and the real ctr runs with the caller's
arguments and standard streams: its output, its errors (``x509:
certificate signed by unknown authority``, ``401 Unauthorized``) and
its exit status are containerd's own. Whatever ``--address`` says, the
socket is this VM's containerd's. Credentials are never on argv: the
lab's ctr takes no ``--user``; registries' come from ``hosts.toml``.
"""
from __future__ import annotations

import os
import sys

from kubernetes_mgmt_lab.emulated import flags, node_images, runner, units
from kubernetes_mgmt_lab.emulated.flags import Flag
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context

DEFAULT_ADDRESS = '/run/containerd/containerd.sock'
DEFAULT_NAMESPACE = 'default'
GLOBAL_FLAGS = [Flag('address', short='a'), Flag('namespace', short='n'),
                Flag('timeout'), Flag('connect-timeout'),
                Flag('debug', value=False)]
IMAGE_COMMANDS = {
    'pull': [Flag('hosts-dir'), Flag('platform', multi=True),
             Flag('snapshotter')],
    'import': [Flag('digests', value=False),
               Flag('all-platforms', value=False),
               Flag('no-unpack', value=False), Flag('snapshotter')],
    'ls': [Flag('quiet', value=False, short='q')],
    'rm': [Flag('sync', value=False)],
}
# ctr's other names of the commands.
IMAGE_ALIASES = {'list': 'ls', 'remove': 'rm', 'del': 'rm', 'delete': 'rm'}
# Positional arguments each takes: (at least, at most or None).
ARITY = {'pull': (1, 1), 'import': (1, 1), 'ls': (0, 0), 'rm': (1, None),
         'version': (0, 0)}
# From the caller's environment to ctr (it reaches registries itself).
PASSED_ENV = ('HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy',
              'https_proxy', 'no_proxy')


class Call:
    """A checked ctr command line: global options, the command
    (``version`` or an images sub-command), its flags and arguments."""

    def __init__(self, opts: flags.Parsed, command: str,
                 sub: flags.Parsed):
        self.opts = opts
        self.command = command
        self.sub = sub

    @property
    def namespace(self) -> str:
        return str(self.opts.get('namespace') or os.environ.get(
            'CONTAINERD_NAMESPACE') or DEFAULT_NAMESPACE)

    @property
    def address(self) -> str:
        return str(self.opts.get('address') or os.environ.get(
            'CONTAINERD_ADDRESS') or DEFAULT_ADDRESS)


def _flag_error(e: flags.FlagError) -> CommandError:
    # urfave/cli's wording: one dash, whatever the caller typed.
    text = str(e)
    for prefix in ('unknown flag: --', "unknown shorthand flag: '"):
        if text.startswith(prefix):
            name = text[len(prefix):].split("'")[0]
            text = f'flag provided but not defined: -{name}'
    return CommandError(f'ctr: {text}', 1)


def parse(args: list[str]) -> Call:
    """Check ``args`` as ctr reads them (CommandError otherwise)."""
    at = flags.first_positional(GLOBAL_FLAGS, args)
    head, words = (args, []) if at is None else (args[:at], args[at:])
    try:
        opts = flags.parse(GLOBAL_FLAGS, head)
    except flags.FlagError as e:
        raise _flag_error(e) from None
    if words[:1] == ['version']:
        command, rest, known = 'version', words[1:], []
    elif words[:1] in (['images'], ['image'], ['i']) and len(words) > 1:
        command = IMAGE_ALIASES.get(words[1], words[1])
        rest, known = words[2:], IMAGE_COMMANDS.get(command)
    else:
        known = None
    if known is None:
        raise CommandError('ctr: the lab runs only "ctr images pull|import|'
                           f'ls|rm" and "ctr version", not: '
                           f'{" ".join(words[:2]) or "(no command)"}', 1)
    try:
        sub = flags.parse(known, rest)
    except flags.FlagError as e:
        raise _flag_error(e) from None
    _check_arity(command, sub.args)
    return Call(opts, command, sub)


def _check_arity(command: str, args: list[str]) -> None:
    low, high = ARITY[command]
    if len(args) < low:
        raise CommandError(f'ctr: {command}: missing argument', 1)
    if high is not None and len(args) > high:
        raise CommandError(f'ctr: {command}: unexpected arguments '
                           f'{" ".join(args[high:])}', 1)


def ctr_argv(call: Call, socket: str) -> list[str]:
    """The real ctr's command line, against ``socket``: each option in
    ctr's own form, before the arguments (ctr stops reading flags at the
    first argument)."""
    argv = ['--address', socket, '--namespace', call.namespace]
    for name in ('timeout', 'connect-timeout'):
        if call.opts.has(name):
            argv += [f'--{name}', str(call.opts.get(name))]
    if call.opts.get('debug'):
        argv.append('--debug')
    if call.command == 'version':
        return [*argv, 'version']
    argv += ['images', call.command]
    for flag in IMAGE_COMMANDS[call.command]:
        value = call.sub.get(flag.name)
        if flag.multi:
            for item in value or ():
                argv += [f'--{flag.name}', item]
        elif not flag.value:
            argv += [f'--{flag.name}'] if value else []
        elif value is not None:
            argv += [f'--{flag.name}', str(value)]
    return [*argv, '--', *call.sub.args] if call.sub.args else argv


def _env(snapshotter: str) -> dict[str, str]:
    """ctr's environment: the lab's PATH, the caller's proxies, and the
    snapshotter that works on the VM's disk (ctr's default, overlayfs,
    may not) unless the command names one."""
    from kubernetes_mgmt_lab.childproc import CLEAN_ENV
    env = dict(CLEAN_ENV, CONTAINERD_SNAPSHOTTER=snapshotter)
    env.update({k: os.environ[k] for k in PASSED_ENV if k in os.environ})
    return env


def _run_ctr(ctx: Context, call: Call) -> int:
    import subprocess

    from kubernetes_mgmt_lab.childproc import die_with_parent
    from kubernetes_mgmt_lab.real_containerd import CTR
    with node_images.session(ctx.path(node_images.ROOT),
                             ctx.path(node_images.RUN_DIR)) as ctd:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        done = subprocess.run(
            [CTR, *ctr_argv(call, ctd.socket)], check=False,
            env=_env(ctd.snapshotter), preexec_fn=die_with_parent())
    code = done.returncode
    return code if code >= 0 else 128 - code


def main(ctx: Context, args: list[str]) -> int:
    call = parse(args)
    if units.active_state('containerd') != 'active':
        # What ctr says when nothing listens on the socket.
        raise CommandError(
            f'ctr: failed to dial "{call.address}": context deadline '
            'exceeded: connection error: desc = "transport: error while '
            f'dialing: dial unix://{call.address}: timeout"', 1)
    return _run_ctr(ctx, call)


def _mutating(args: list[str]) -> bool:
    try:
        return parse(args).command in ('pull', 'import', 'rm')
    except CommandError:
        return False


def cli() -> None:
    runner.run('ctr', main, mutating=_mutating,
               needs=('containerd', 'containerd.io'))


if __name__ == '__main__':
    cli()

"""``kubeadm`` stand-in: init, join, reset, token, upload-certs,
certificate-key, upgrade (plan, apply, node), certs (check-expiration,
renew), version and config images, with kubeadm's flags."""
from __future__ import annotations

import importlib
import json

from kubernetes_mgmt_lab.emulated import flags, runner
from kubernetes_mgmt_lab.emulated import kubeadm_cli as kcli
from kubernetes_mgmt_lab.emulated.flags import Parsed
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context

COMPONENT_IMAGES = ('kube-apiserver', 'kube-controller-manager',
                    'kube-scheduler', 'kube-proxy')
# (coredns, pause, etcd) tags kubeadm pins per minor, as its constants
# have them where known; the lab's newer minors continue the pattern.
# Different per minor on purpose: what a script takes from
# "kubeadm config images list" then shows in its results.
ADDON_TAGS = {
    31: ('v1.11.3', '3.10', '3.5.15-0'),
    32: ('v1.11.3', '3.10', '3.5.16-0'),
    33: ('v1.12.0', '3.10', '3.5.21-0'),
    34: ('v1.12.1', '3.10.1', '3.6.4-0'),
    35: ('v1.13.1', '3.10.1', '3.6.6-0'),
    36: ('v1.13.1', '3.10.1', '3.6.8-0'),
    37: ('v1.13.2', '3.10.2', '3.6.10-0'),
}


def _version(ctx: Context, opts: Parsed) -> int:
    version = kcli.kubeadm_version(ctx)
    major, minor = version.lstrip('v').split('.')[:2]
    info = {'major': major, 'minor': minor, 'gitVersion': version,
            'gitTreeState': 'clean', 'goVersion': 'go1.22.5',
            'compiler': 'gc', 'platform': 'linux/amd64'}
    out = opts.get('output')
    if out == 'short':
        ctx.out(version)
    elif out == 'json':
        ctx.out(json.dumps({'clientVersion': info}, indent=2))
    elif out == 'yaml':
        from kubernetes_mgmt_lab.emulated import yamlio
        ctx.out(yamlio.dump({'clientVersion': info}))
    elif out:
        raise CommandError(f'invalid output format: {out}\n'
                           f'{kcli.STACK_HINT}')
    else:
        fields = ', '.join(f'{k[0].upper()}{k[1:]}:"{v}"'
                           for k, v in info.items())
        ctx.out(f'kubeadm version: &version.Info{{{fields}}}')
    return 0


def _images(ctx: Context, opts: Parsed) -> list[str]:
    version = opts.get('kubernetes-version')
    if opts.has('config'):
        from kubernetes_mgmt_lab.emulated import kubeadm_config as kconf
        s = kconf.InitSettings()
        kconf.apply_init_docs(s, kconf.load_docs(opts.get('config')))
        version = s.kubernetes_version
    version = kcli.resolve_k8s_version(ctx, version)
    return image_list(version,
                      opts.get('image-repository') or 'registry.k8s.io')


def image_list(version: str, repo: str = 'registry.k8s.io') -> list[str]:
    """What ``kubeadm config images list`` prints for ``version``
    (vX.Y.Z) under ``repo``."""
    minor = kcli.version_tuple(version)[1]
    coredns, pause, etcd = ADDON_TAGS[min(max(minor, min(ADDON_TAGS)),
                                          max(ADDON_TAGS))]
    images = [f'{repo}/{c}:{version}' for c in COMPONENT_IMAGES]
    return [*images, f'{repo}/coredns/coredns:{coredns}',
            f'{repo}/pause:{pause}', f'{repo}/etcd:{etcd}']


def _config_images(ctx: Context, opts: Parsed, verb: str) -> int:
    images = _images(ctx, opts)
    if verb == 'list':
        ctx.out('\n'.join(images))
        return 0
    from kubernetes_mgmt_lab.emulated import units
    if units.active_state('containerd') != 'active':
        raise CommandError('failed to create new CRI image service: '
                           'validate service connection: CRI v1 image API '
                           'is not implemented for endpoint "unix:///var/'
                           'run/containerd/containerd.sock"\n'
                           f'{kcli.STACK_HINT}')
    for image in images:
        ctx.out(f'[config/images] Pulled {image}')
    return 0


def _print(ctx: Context, text: str) -> int:
    ctx.out(text)
    return 0


def _tokens(name: str):
    def handler(ctx: Context, opts: Parsed) -> int:
        from kubernetes_mgmt_lab.emulated import tokens
        return _print(ctx, getattr(tokens, name)())
    return handler


# (words of the sub-command, its flags, its handler: a function, or
# "module:function" under this package, imported only when it runs: init
# and join bring YAML, certificates and the cluster's controllers)
COMMANDS = [
    (('init', 'phase', 'upload-certs'), kcli.UPLOAD_FLAGS,
     'kubeadm_token:upload_certs'),
    (('init',), kcli.INIT_FLAGS, 'kubeadm_init:run_init'),
    (('join',), kcli.JOIN_FLAGS, 'kubeadm_join:run_join'),
    (('reset',), kcli.RESET_FLAGS, 'kubeadm_reset:run_reset'),
    (('token', 'create'), kcli.TOKEN_FLAGS, 'kubeadm_token:token_create'),
    (('token', 'list'), kcli.TOKEN_FLAGS, 'kubeadm_token:token_list'),
    (('token', 'delete'), kcli.TOKEN_FLAGS, 'kubeadm_token:token_delete'),
    (('token', 'generate'), [], _tokens('new_token')),
    (('certs', 'certificate-key'), [], _tokens('new_certificate_key')),
    (('upgrade', 'plan'), kcli.UPGRADE_PLAN_FLAGS,
     'kubeadm_upgrade:run_plan'),
    (('upgrade', 'apply'), kcli.UPGRADE_APPLY_FLAGS,
     'kubeadm_upgrade:run_apply'),
    (('upgrade', 'node'), kcli.UPGRADE_NODE_FLAGS,
     'kubeadm_upgrade:run_node'),
    (('certs', 'check-expiration'), kcli.CERTS_FLAGS,
     'kubeadm_certs:check_expiration'),
    (('certs', 'renew'), kcli.CERTS_FLAGS, 'kubeadm_certs:renew'),
    (('version',), kcli.VERSION_FLAGS, _version),
    (('config', 'images', 'pull'), kcli.IMAGE_FLAGS,
     lambda c, o: _config_images(c, o, 'pull')),
    (('config', 'images', 'list'), kcli.IMAGE_FLAGS,
     lambda c, o: _config_images(c, o, 'list')),
]
MUTATING = {('init',), ('join',), ('reset',), ('token', 'create'),
            ('token', 'delete'), ('init', 'phase', 'upload-certs'),
            ('upgrade', 'apply'), ('upgrade', 'node'), ('certs', 'renew')}


def _words(args: list[str]) -> list[str]:
    every = kcli.GLOBAL + [f for _, fl, _ in COMMANDS for f in fl]
    words, rest = [], list(args)
    while True:
        idx = flags.first_positional(every, rest)
        if idx is None:
            return words
        words.append(rest[idx])
        rest = rest[idx + 1:]


def _match(args: list[str]):
    words = _words(args)
    for path, fl, handler in COMMANDS:
        if tuple(words[:len(path)]) == path:
            return path, fl, handler
    return None


def main(ctx: Context, args: list[str]) -> int:
    found = _match(args)
    if found is None:
        words = _words(args)
        what = words[-1] if words else ''
        if not words:
            ctx.out('Usage:\n  kubeadm [command]')
            return 0
        raise CommandError(f'unknown command "{what}" for "kubeadm"\n'
                           f'{kcli.STACK_HINT}')
    path, fl, handler = found
    try:
        opts = flags.parse(kcli.GLOBAL + fl, args)
    except flags.FlagError as e:
        raise CommandError(f'{e}\n{kcli.STACK_HINT}') from None
    opts.args = opts.args[len(path):]
    try:
        return _resolve(handler)(ctx, opts)
    except kcli.ConfigError as e:
        raise CommandError(f'{e}\n{kcli.STACK_HINT}') from None


def _resolve(handler):
    if callable(handler):
        return handler
    module, _, function = handler.partition(':')
    return getattr(importlib.import_module(f'{__package__}.{module}'),
                   function)


def _mutating(args: list[str]) -> bool:
    found = _match(args)
    return bool(found) and found[0] in MUTATING


def cli() -> None:
    runner.run('kubeadm', main, mutating=_mutating, needs=('kubeadm',))


if __name__ == '__main__':
    cli()

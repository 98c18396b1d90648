"""``kubeadm`` stand-in: init, join, reset, token, upload-certs,
certificate-key, version and config images, with kubeadm's flags."""
from __future__ import annotations

import json

import yaml

from kubernetes_mgmt_lab.emulated import flags, runner, units
from kubernetes_mgmt_lab.emulated import kubeadm_common as common
from kubernetes_mgmt_lab.emulated import kubeadm_config as kconf
from kubernetes_mgmt_lab.emulated import kubeadm_init as init
from kubernetes_mgmt_lab.emulated import kubeadm_join as join
from kubernetes_mgmt_lab.emulated import kubeadm_reset as reset
from kubernetes_mgmt_lab.emulated import kubeadm_token as token
from kubernetes_mgmt_lab.emulated.flags import Flag, Parsed
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context
from kubernetes_mgmt_lab.emulated.tokens import new_certificate_key, new_token

GLOBAL = [Flag('v', short='v'), Flag('rootfs'), Flag('log-file'),
          Flag('skip-headers', value=False), Flag('add-dir-header',
                                                  value=False),
          Flag('skip-log-headers', value=False)]
IMAGE_FLAGS = [Flag('config'), Flag('kubernetes-version'),
               Flag('image-repository'), Flag('cri-socket'),
               Flag('feature-gates'), Flag('output', short='o')]
VERSION_FLAGS = [Flag('output', short='o')]
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
    version = common.kubeadm_version(ctx)
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
        ctx.out(yaml.safe_dump({'clientVersion': info}))
    elif out:
        raise CommandError(f'invalid output format: {out}\n'
                           f'{common.STACK_HINT}')
    else:
        fields = ', '.join(f'{k[0].upper()}{k[1:]}:"{v}"'
                           for k, v in info.items())
        ctx.out(f'kubeadm version: &version.Info{{{fields}}}')
    return 0


def _images(ctx: Context, opts: Parsed) -> list[str]:
    version = opts.get('kubernetes-version')
    if opts.has('config'):
        s = kconf.InitSettings()
        kconf.apply_init_docs(s, kconf.load_docs(opts.get('config')))
        version = s.kubernetes_version
    version = common.resolve_k8s_version(ctx, version)
    repo = opts.get('image-repository') or 'registry.k8s.io'
    minor = common.version_tuple(version)[1]
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
    if units.active_state('containerd') != 'active':
        raise CommandError('failed to create new CRI image service: '
                           'validate service connection: CRI v1 image API '
                           'is not implemented for endpoint "unix:///var/'
                           'run/containerd/containerd.sock"\n'
                           f'{common.STACK_HINT}')
    for image in images:
        ctx.out(f'[config/images] Pulled {image}')
    return 0


def _print(ctx: Context, text: str) -> int:
    ctx.out(text)
    return 0


# (words of the sub-command, its flags, its handler)
COMMANDS = [
    (('init', 'phase', 'upload-certs'), token.UPLOAD_FLAGS,
     token.upload_certs),
    (('init',), init.FLAGS, init.run_init),
    (('join',), join.FLAGS, join.run_join),
    (('reset',), reset.FLAGS, reset.run_reset),
    (('token', 'create'), token.TOKEN_FLAGS, token.token_create),
    (('token', 'list'), token.TOKEN_FLAGS, token.token_list),
    (('token', 'delete'), token.TOKEN_FLAGS, token.token_delete),
    (('token', 'generate'), [], lambda c, o: _print(c, new_token())),
    (('certs', 'certificate-key'), [],
     lambda c, o: _print(c, new_certificate_key())),
    (('version',), VERSION_FLAGS, _version),
    (('config', 'images', 'pull'), IMAGE_FLAGS,
     lambda c, o: _config_images(c, o, 'pull')),
    (('config', 'images', 'list'), IMAGE_FLAGS,
     lambda c, o: _config_images(c, o, 'list')),
]
MUTATING = {('init',), ('join',), ('reset',), ('token', 'create'),
            ('token', 'delete'), ('init', 'phase', 'upload-certs')}


def _words(args: list[str]) -> list[str]:
    every = GLOBAL + [f for _, fl, _ in COMMANDS for f in fl]
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
                           f'{common.STACK_HINT}')
    path, fl, handler = found
    try:
        opts = flags.parse(GLOBAL + fl, args)
    except flags.FlagError as e:
        raise CommandError(f'{e}\n{common.STACK_HINT}') from None
    opts.args = opts.args[len(path):]
    try:
        return handler(ctx, opts)
    except kconf.ConfigError as e:
        raise CommandError(f'{e}\n{common.STACK_HINT}') from None


def _mutating(args: list[str]) -> bool:
    found = _match(args)
    return bool(found) and found[0] in MUTATING


if __name__ == '__main__':
    runner.run('kubeadm', main, mutating=_mutating, needs=('kubeadm',))

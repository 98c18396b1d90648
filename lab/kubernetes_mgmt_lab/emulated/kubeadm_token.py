"""``kubeadm token``, ``init phase upload-certs`` and
``certs certificate-key``: secrets that let nodes join."""
from __future__ import annotations

import os
import time

from kubernetes_mgmt_lab.emulated import kubeadm_cli as kcli
from kubernetes_mgmt_lab.emulated import kubeadm_common as common
from kubernetes_mgmt_lab.emulated import kubeadm_config as kconf
from kubernetes_mgmt_lab.emulated import objects, store, tokens
from kubernetes_mgmt_lab.emulated.flags import Parsed
from kubernetes_mgmt_lab.emulated.host import host_path
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context

# Flags kubeadm refuses next to --config (they set what the file does).
CONFIG_EXCLUSIVE = {'ttl', 'description', 'usages', 'groups'}
def _join_command(state: dict, token: str, cert_key: str | None) -> str:
    info = state['cluster']
    text = (f'kubeadm join {info["endpoint"]} --token {token} '
            f'--discovery-token-ca-cert-hash {info["ca_hash"]} ')
    if cert_key:
        text += f'--control-plane --certificate-key {cert_key}'
    return text


def _duration(text: str, where: str) -> float:
    try:
        return tokens.parse_duration(text)
    except ValueError as e:
        raise CommandError(f'invalid argument "{text}" for {where}: '
                           f'{e}') from None


def _wanted_tokens(opts: Parsed) -> list[dict]:
    """(token or None, ttl, description, usages, groups) to create: from
    the flags and the argument, or with --config from the file's
    bootstrapTokens (kubeadm then ignores the argument)."""
    if not opts.has('config'):
        return [{'token': opts.args[0] if opts.args else None,
                 'ttl': _duration(opts.get('ttl') or '24h0m0s', '"--ttl" '
                                  'flag'),
                 'description': opts.get('description') or ''}]
    mixed = sorted(set(opts.values) & CONFIG_EXCLUSIVE)
    if mixed:
        raise CommandError(f"can not mix '--config' with arguments {mixed}"
                           f'\n{kcli.STACK_HINT}')
    docs = kconf.load_docs(opts.get('config'))
    return [{'token': t.get('token') or None,
             'ttl': _duration(str(t.get('ttl') or '24h0m0s'),
                              'bootstrapTokens.ttl'),
             'description': t.get('description') or '',
             'usages': tuple(t.get('usages') or ('signing',
                                                 'authentication')),
             'groups': tuple(t.get('groups') or (
                 'system:bootstrappers:kubeadm:default-node-token',))}
            for t in kconf.bootstrap_tokens(docs)]


def token_create(ctx: Context, opts: Parsed) -> int:
    common.require_admin(ctx, opts.get('kubeconfig'))
    wanted = _wanted_tokens(opts)
    with store.mutate(ctx.cluster_dir) as state:
        try:
            created = [tokens.add_token(state['cluster'], w.pop('token'),
                                        w.pop('ttl'), **w) for w in wanted]
        except ValueError as e:
            raise CommandError(f'{e}\n{kcli.STACK_HINT}') from None
    token = created[0]
    if opts.get('print-join-command'):
        ctx.out(_join_command(state, token, opts.get('certificate-key')))
    else:
        ctx.out(token)
    return 0


def token_list(ctx: Context, opts: Parsed) -> int:
    common.require_admin(ctx, opts.get('kubeconfig'))
    state = store.read(ctx.cluster_dir)
    live = tokens.live_tokens(state['cluster'])
    if not live:
        return 0
    ctx.out(f'{"TOKEN":<24}{"TTL":<6}{"EXPIRES":<22}{"USAGES":<42}'
            f'{"DESCRIPTION":<16}EXTRA GROUPS')
    for tok in live:
        left = '<forever>' if tok['expires'] is None else \
            f'{max(0, int((tok["expires"] - time.time()) / 3600))}h'
        expires = '<never>' if tok['expires'] is None else \
            objects.iso(tok['expires'])
        ctx.out(f'{tok["token"]:<24}{left:<6}{expires:<22}'
                f'{",".join(tok["usages"]):<42}'
                f'{tok["description"] or "<none>":<16}'
                f'{",".join(tok["groups"])}')
    return 0


def token_delete(ctx: Context, opts: Parsed) -> int:
    common.require_admin(ctx, opts.get('kubeconfig'))
    if not opts.args:
        raise CommandError('missing subcommand; "token delete" is missing '
                           f'token of form "[a-z0-9]{{6}}"\n'
                           f'{kcli.STACK_HINT}')
    with store.mutate(ctx.cluster_dir) as state:
        for arg in opts.args:
            token_id = arg.split('.')[0]
            before = state['cluster'].get('tokens', [])
            after = [t for t in before
                     if t['token'].split('.')[0] != token_id]
            if len(after) == len(before):
                raise CommandError(
                    f'secrets "bootstrap-token-{token_id}" not found\n'
                    f'{kcli.STACK_HINT}')
            state['cluster']['tokens'] = after
            ctx.out(f'bootstrap token "{token_id}" deleted')
    return 0


def upload_certs(ctx: Context, opts: Parsed) -> int:
    if not opts.get('upload-certs'):
        ctx.out('[upload-certs] Skipping phase. Please see '
                '--upload-certs')
        return 0
    common.require_admin(ctx, opts.get('kubeconfig'))
    if not os.path.exists(host_path(f'{common.PKI_DIR}/ca.key')):
        raise kcli.fail('upload-certs', 'error uploading certs: failed '
                          'to load certificate: open /etc/kubernetes/pki/'
                          'ca.crt: no such file or directory')
    given = opts.get('certificate-key')
    if opts.has('config') and not given:
        # The InitConfiguration's certificateKey, as kubeadm init reads it.
        settings = kconf.InitSettings()
        kconf.apply_init_docs(settings, kconf.load_docs(opts.get('config')))
        given = settings.certificate_key
    with store.mutate(ctx.cluster_dir) as state:
        try:
            key = tokens.set_certificate_key(state['cluster'], given)
        except ValueError as e:
            raise kcli.fail('upload-certs', str(e)) from None
    ctx.out('[upload-certs] Storing the certificates in Secret '
            '"kubeadm-certs" in the "kube-system" Namespace')
    if not opts.get('skip-certificate-key-print'):
        ctx.out(f'[upload-certs] Using certificate key:\n{key}')
    return 0

"""``etcdctl`` (v3) stand-in over the shared etcd member list:
``member list|remove|add`` and ``endpoint health``."""
from __future__ import annotations

import json
import os
import random
from urllib.parse import urlsplit

from kubernetes_mgmt_lab.emulated import flags, runner, store
from kubernetes_mgmt_lab.emulated.flags import Flag
from kubernetes_mgmt_lab.emulated.host import host_path
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context

FLAGS = [Flag('endpoints'), Flag('cacert'), Flag('cert'), Flag('key'),
         Flag('write-out', short='w'), Flag('dial-timeout'),
         Flag('command-timeout'), Flag('insecure-skip-tls-verify',
                                       value=False),
         Flag('insecure-transport', value=False), Flag('user'),
         Flag('password'), Flag('hex', value=False), Flag('debug',
                                                          value=False),
         Flag('peer-urls'), Flag('learner', value=False),
         Flag('cluster', value=False)]
DEADLINE = ('{"level":"warn","msg":"retrying of unary invoker failed",'
            '"error":"rpc error: code = DeadlineExceeded desc = context '
            'deadline exceeded"}\nError: context deadline exceeded')


def _hex(member_id: int) -> str:
    return f'{member_id:x}'


def _endpoint_member(ctx: Context, state: dict, endpoint: str,
                     in_pod: bool) -> dict | None:
    host = urlsplit(endpoint if '://' in endpoint else
                    f'https://{endpoint}').hostname
    if host in ('127.0.0.1', 'localhost') or in_pod:
        host = ctx.host.ip
    for member in state['etcd']:
        for url in member['clientURLs']:
            if urlsplit(url).hostname == host:
                return member
    return None


def _connect(ctx: Context, opts, in_pod: bool) -> tuple[dict, dict]:
    if not in_pod:
        for name in ('cacert', 'cert', 'key'):
            path = opts.get(name)
            if path and not os.path.exists(host_path(path)):
                raise CommandError(f'Error: open {path}: no such file or '
                                   'directory', 1)
    state = store.read(ctx.cluster_dir)
    endpoints = (opts.get('endpoints') or '127.0.0.1:2379').split(',')
    for endpoint in endpoints:
        member = _endpoint_member(ctx, state, endpoint.strip(), in_pod)
        if member is not None:
            return state, member
    raise CommandError(DEADLINE, 1)


def _header(state: dict, member: dict) -> dict:
    return {'cluster_id': state['cluster'].get('etcd_cluster_id', 0),
            'member_id': member['id'], 'raft_term': 2 + len(state['etcd'])}


def _member_list(ctx: Context, opts, state: dict, member: dict) -> int:
    members = state['etcd']
    fmt = opts.get('write-out') or 'simple'
    if fmt == 'json':
        out = {'header': _header(state, member), 'members': [
            {'ID': _hex(m['id']) if opts.get('hex') else m['id'],
             'name': m['name'], 'peerURLs': m['peerURLs'],
             'clientURLs': m['clientURLs']} for m in members]}
        ctx.out(json.dumps(out))
        return 0
    rows = [[_hex(m['id']), 'started' if m['name'] else 'unstarted',
             m['name'], ','.join(m['peerURLs']), ','.join(m['clientURLs']),
             'false'] for m in members]
    if fmt == 'table':
        ctx.out(_table(['ID', 'STATUS', 'NAME', 'PEER ADDRS',
                        'CLIENT ADDRS', 'IS LEARNER'], rows))
    elif fmt == 'simple':
        for row in rows:
            ctx.out(', '.join(row))
    else:
        raise CommandError(f'Error: unknown output format "{fmt}"', 1)
    return 0


def _table(head: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [head, *rows])
              for i in range(len(head))]
    line = '+' + '+'.join('-' * (w + 2) for w in widths) + '+'

    def fmt(row):
        return '|' + '|'.join(f' {c:^{w}} ' for c, w in
                              zip(row, widths, strict=False)) + '|'
    return '\n'.join([line, fmt(head), line, *map(fmt, rows), line])


def _member_remove(ctx: Context, args: list[str]) -> int:
    if len(args) != 1:
        raise CommandError('Error: member ID is not provided', 1)
    try:
        member_id = int(args[0], 16)
    except ValueError:
        raise CommandError(f'Error: bad member ID arg (strconv.ParseUint: '
                           f'parsing "{args[0]}": invalid syntax), '
                           'expecting ID in Hex', 1) from None
    with store.mutate(ctx.cluster_dir) as state:
        found = [m for m in state['etcd'] if m['id'] == member_id]
        if not found:
            raise CommandError('Error: etcdserver: member not found', 1)
        if len(state['etcd']) == 1:
            raise CommandError('Error: etcdserver: re-configuration failed '
                               'due to not enough started members', 1)
        state['etcd'].remove(found[0])
        cluster_id = state['cluster'].get('etcd_cluster_id', 0)
    ctx.out(f'Member {_hex(member_id)} removed from cluster '
            f'{_hex(cluster_id)}')
    return 0


def _member_add(ctx: Context, opts, args: list[str]) -> int:
    urls = (opts.get('peer-urls') or '').split(',')
    if len(args) != 1 or not urls[0]:
        raise CommandError('Error: member name or peer urls not provided',
                           1)
    with store.mutate(ctx.cluster_dir) as state:
        if any(u in m['peerURLs'] for m in state['etcd'] for u in urls):
            raise CommandError('Error: etcdserver: Peer URLs already '
                               'exists', 1)
        new = {'id': random.getrandbits(64), 'name': '',
               'peerURLs': urls, 'clientURLs': []}
        state['etcd'].append(new)
        cluster_id = state['cluster'].get('etcd_cluster_id', 0)
    ctx.out(f'Member {_hex(new["id"])} added to cluster {_hex(cluster_id)}')
    return 0


def main(ctx: Context, args: list[str], in_pod: bool = False) -> int:
    try:
        opts = flags.parse(FLAGS, args)
    except flags.FlagError as e:
        raise CommandError(f'Error: {e}', 1) from None
    words = opts.args
    if words[:1] == ['version']:
        ctx.out('etcdctl version: 3.5.15\nAPI version: 3.5')
        return 0
    state, member = _connect(ctx, opts, in_pod)
    if words[:2] == ['member', 'list']:
        return _member_list(ctx, opts, state, member)
    if words[:2] == ['member', 'remove']:
        return _member_remove(ctx, words[2:])
    if words[:2] == ['member', 'add']:
        return _member_add(ctx, opts, words[2:])
    if words[:2] == ['endpoint', 'health']:
        for url in member['clientURLs']:
            ctx.out(f'{url} is healthy: successfully committed proposal: '
                    'took = 1.5ms')
        return 0
    raise CommandError(f'Error: unknown command "{" ".join(words)}" for '
                       '"etcdctl"', 1)


def _mutating(args: list[str]) -> bool:
    words = [a for a in args if not a.startswith('-')]
    return 'member' in words and ('remove' in words or 'add' in words)


def cli() -> None:
    runner.run('etcdctl', main, mutating=_mutating,
               needs=('etcd-client', 'etcdctl'))


if __name__ == '__main__':
    cli()

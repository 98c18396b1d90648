"""``crictl`` stand-in: version, info, ps, pods, images, pull, rmi.

``ps -o json`` lists the control-plane containers of a master's static
pods (``static_pods``: the kubelet's sync happens then), filtered by
``--name`` (a regular expression) and ``--state``, as crictl does."""
from __future__ import annotations

import json
import re

from kubernetes_mgmt_lab.emulated import (
    cluster,
    flags,
    runner,
    static_pods,
    store,
    units,
)
from kubernetes_mgmt_lab.emulated.flags import Flag
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context

FLAGS = [Flag('runtime-endpoint', short='r'), Flag('image-endpoint',
                                                   short='i'),
         Flag('timeout', short='t'), Flag('debug', value=False, short='D'),
         Flag('config', short='c'), Flag('output', short='o'),
         Flag('all', value=False, short='a'), Flag('quiet', value=False,
                                                   short='q'),
         Flag('name'), Flag('namespace'), Flag('state')]


def _my_pods(ctx: Context) -> list[dict]:
    """This host's pods; etcd and kube-apiserver only while their
    process runs (the lab really runs those two)."""
    state = store.read(ctx.cluster_dir)
    hosts = state.get('node_hosts', {})
    return [p for p in cluster.objects_of(state, 'Pod')
            if hosts.get(p['spec'].get('nodeName')) == ctx.host.name
            and static_pods.running(_component(p)) is not False]


def _component(pod: dict) -> str:
    return (pod['metadata'].get('labels') or {}).get('component', '')


def _container(pod: dict) -> str:
    return _component(pod) or pod['metadata']['name']


def _ps(ctx: Context, opts) -> None:
    pattern = re.compile(opts.get('name') or '')
    for pod in _my_pods(ctx):
        if not pattern.search(_container(pod)):
            continue
        short = pod['metadata']['uid'][:13]
        ctx.out(short if opts.get('quiet') else
                f'{short}  {pod["metadata"]["name"]}  Running')


def _containers(ctx: Context, opts) -> list[dict]:
    name, state = opts.get('name'), opts.get('state')
    if state and state.lower() not in ('running', 'container_running'):
        return []       # every container the lab knows runs
    try:
        pattern = re.compile(name) if name else None
    except re.error as e:
        raise CommandError(f'crictl: invalid --name {name!r}: {e}',
                           1) from None
    return [c for c in static_pods.containers(ctx)
            if pattern is None or pattern.search(c['metadata']['name'])]


def main(ctx: Context, args: list[str]) -> int:
    try:
        opts = flags.parse(FLAGS, args)
    except flags.FlagError as e:
        raise CommandError(f'crictl: {e}', 1) from None
    words = opts.args
    if words[:1] == ['version']:
        ctx.out('Version:  0.1.0\nRuntimeName:  containerd\n'
                'RuntimeVersion:  1.7.12\nRuntimeApiVersion:  v1')
        return 0
    if units.active_state('containerd') != 'active':
        raise CommandError('validate service connection: validate CRI v1 '
                           'runtime API for endpoint "unix:///run/'
                           'containerd/containerd.sock": rpc error: code = '
                           'Unavailable desc = connection error', 1)
    if words[:1] == ['info']:
        ctx.out(json.dumps({'status': {'conditions': [
            {'type': 'RuntimeReady', 'status': True}]}}, indent=2))
    elif words[:1] == ['ps'] and opts.get('output') == 'json':
        ctx.out(json.dumps({'containers': _containers(ctx, opts)},
                           indent=2))
    elif words[:1] in (['ps'], ['pods']):
        _ps(ctx, opts)
    elif words[:1] == ['images']:
        ctx.out('IMAGE                      TAG     IMAGE ID')
    elif words[:1] in (['pull'], ['rmi']):
        image = words[1] if len(words) > 1 else ''
        ctx.out(f'Image is up to date for {image}')
    else:
        raise CommandError(f'crictl: unknown command {words[:1]}', 1)
    return 0


def cli() -> None:
    runner.run('crictl', main, mutating=lambda a: False,
               needs=('cri-tools',))


if __name__ == '__main__':
    cli()

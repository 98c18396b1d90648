"""``kubectl get``."""
from __future__ import annotations

import ssl
import urllib.error
import urllib.request

from kubernetes_mgmt_lab.emulated import cluster, jsonpath, selectors
from kubernetes_mgmt_lab.emulated import kubectl_output as output
from kubernetes_mgmt_lab.emulated.flags import Flag
from kubernetes_mgmt_lab.emulated.kubectl_common import (
    KubectlError,
    Session,
    get_one,
    scoped_ns,
    targets,
)
from kubernetes_mgmt_lab.emulated.runner import CommandError

FLAGS = [Flag('output', short='o'), Flag('selector', short='l'),
         Flag('field-selector'), Flag('all-namespaces', value=False,
                                      short='A'),
         Flag('no-headers', value=False), Flag('show-labels', value=False),
         Flag('ignore-not-found', value=False), Flag('raw'),
         Flag('sort-by'), Flag('watch', value=False, short='w'),
         Flag('show-kind', value=False), Flag('chunk-size')]


def _listed(session: Session, state: dict, kind, all_ns: bool
            ) -> list[dict]:
    opts = session.opts
    items = []
    for obj in cluster.objects_of(state, kind.kind):
        if kind.namespaced and not all_ns and \
                obj['metadata'].get('namespace') != session.namespace():
            continue
        try:
            keep = selectors.match_labels(opts.get('selector'), obj) and \
                selectors.match_fields(opts.get('field-selector'), obj)
        except selectors.SelectorError as e:
            raise KubectlError(str(e)) from None
        if keep:
            items.append(obj)
    return items


def raw(session: Session, path: str) -> int:
    """GET a path of the API server for real (through HAProxy, VIP...)."""
    config = session.config
    ctx = ssl.create_default_context(
        cadata=config.ca_pem.decode() if config.ca_pem else None)
    url = config.server.rstrip('/') + path
    try:
        with urllib.request.urlopen(  # noqa: S310 - https from kubeconfig
                url, context=ctx, timeout=10) as resp:
            session.ctx.out(resp.read().decode())
    except urllib.error.HTTPError as e:
        raise CommandError(f'Error from server ({e.reason}): '
                           f'{e.read().decode()}', 1) from None
    except (urllib.error.URLError, OSError) as e:
        raise CommandError(f'Unable to connect to the server: {e}',
                           1) from None
    return 0


def _sorted(items: list[dict], path: str | None) -> list[dict]:
    if not path:
        return items

    def key(obj):
        found = jsonpath.values(path, obj)
        return str(found[0]) if found else ''
    return sorted(items, key=key)


def run(session: Session) -> int:
    opts = session.opts
    if opts.get('raw'):
        return raw(session, opts.get('raw'))
    if opts.get('watch'):
        raise KubectlError('watch is not supported by the lab emulation')
    state = session.read()
    wanted = targets(opts.args, state)
    all_ns = bool(opts.get('all-namespaces'))
    fmt = opts.get('output') or ''
    named = any(name for _, name in wanted)
    blocks: list[tuple] = []
    missing: list[CommandError] = []
    for kind, name in wanted:
        if name is None:
            blocks.append((kind, _listed(session, state, kind, all_ns)))
            continue
        try:
            obj = get_one(state, kind, name,
                          scoped_ns(kind, session.namespace()))
            blocks.append((kind, [obj]))
        except CommandError as e:
            if not opts.get('ignore-not-found'):
                missing.append(e)
    items = [o for _, objs in blocks for o in objs]
    items = _sorted(items, opts.get('sort-by'))
    _print(session, blocks, items, fmt, named, len(wanted) == 1, all_ns)
    for err in missing:
        session.ctx.err(err.message)
    return 1 if missing else 0


def _print(session: Session, blocks, items, fmt, named, one_target,
           all_ns) -> None:
    opts = session.opts
    if fmt in ('', 'wide'):
        if not items and not named:
            where = '' if all_ns or not blocks[0][0].namespaced else \
                f' in {session.namespace()} namespace'
            session.ctx.err(f'No resources found{where}.')
            return
        texts = [output.table(session.read(), kind, objs, fmt == 'wide',
                              all_ns, bool(opts.get('show-labels')),
                              not opts.get('no-headers'))
                 for kind, objs in blocks if objs]
        session.ctx.out('\n\n'.join(texts))
        return
    text = output.render(fmt, items, named and one_target)
    if fmt.startswith('custom-columns=') and opts.get('no-headers'):
        text = '\n'.join(text.splitlines()[1:])
    if fmt.startswith('jsonpath'):
        print(text, end='', flush=True)
    elif text:
        session.ctx.out(text)

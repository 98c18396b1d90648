"""``kubectl`` stand-in: needs a kubeconfig whose server really answers
(--kubeconfig, $KUBECONFIG or ~/.kube/config), then works on the shared
cluster state with kubectl's verbs, flags, messages and exit codes."""
from __future__ import annotations

from kubernetes_mgmt_lab.emulated import flags, runner
from kubernetes_mgmt_lab.emulated import kubectl_apply as apply
from kubernetes_mgmt_lab.emulated import kubectl_create as create
from kubernetes_mgmt_lab.emulated import kubectl_drain as drain
from kubernetes_mgmt_lab.emulated import kubectl_edit as edit
from kubernetes_mgmt_lab.emulated import kubectl_get as get
from kubernetes_mgmt_lab.emulated import kubectl_misc as misc
from kubernetes_mgmt_lab.emulated import kubectl_nodes as nodes
from kubernetes_mgmt_lab.emulated.flags import Flag
from kubernetes_mgmt_lab.emulated.kubectl_common import (
    GLOBAL,
    KubectlError,
    connect,
)
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context

# verb -> (flags, handler(session))
VERBS = {
    'get': (get.FLAGS, get.run),
    'apply': (apply.FLAGS, lambda s: apply.run_guarded(s, create=False)),
    'create': (create.FLAGS, create.run),
    'delete': (edit.DELETE_FLAGS, edit.delete),
    'label': (edit.LABEL_FLAGS, edit.label),
    'annotate': (edit.LABEL_FLAGS, lambda s: edit.label(s, 'annotations')),
    'patch': (edit.PATCH_FLAGS, edit.patch),
    'cordon': (nodes.CORDON_FLAGS, lambda s: nodes.cordon(s, True)),
    'uncordon': (nodes.CORDON_FLAGS, lambda s: nodes.cordon(s, False)),
    'taint': (nodes.TAINT_FLAGS, nodes.taint),
    'drain': (drain.FLAGS, drain.run),
    'wait': (misc.WAIT_FLAGS, misc.wait),
    'rollout': (misc.ROLLOUT_FLAGS, misc.rollout),
    'scale': (misc.SCALE_FLAGS, misc.scale),
    'cluster-info': ([], misc.cluster_info),
    'exec': (misc.EXEC_FLAGS, misc.exec_),
}
OFFLINE = {'version': misc.VERSION_FLAGS, 'config': misc.CONFIG_FLAGS}
MUTATING = {'apply', 'create', 'delete', 'label', 'annotate', 'patch',
            'cordon', 'uncordon', 'taint', 'drain', 'scale', 'exec'}


def _split_verb(args: list[str]) -> tuple[str | None, list[str]]:
    idx = flags.first_positional(GLOBAL, args)
    if idx is None:
        return None, args
    return args[idx], args[:idx] + args[idx + 1:]


def _parse(verb: str, spec: list[Flag], rest: list[str]):
    try:
        return flags.parse(GLOBAL + spec, rest)
    except flags.FlagError as e:
        raise CommandError(f"error: {e}\nSee 'kubectl {verb} --help' for "
                           'usage.', 1) from None


def _offline(ctx: Context, verb: str, rest: list[str]) -> int:
    opts = _parse(verb, OFFLINE[verb], rest)
    if verb == 'version':
        session = None if opts.get('client') else connect(ctx, opts)
        return misc.version(ctx, session, opts)
    if opts.args[:1] != ['view']:
        raise KubectlError('only "config view" is emulated')
    from kubernetes_mgmt_lab.emulated.kubectl_common import _find_config
    return misc.config_view(ctx, _find_config(opts), opts)


def main(ctx: Context, args: list[str]) -> int:
    verb, rest = _split_verb(args)
    if verb is None:
        ctx.out('kubectl controls the Kubernetes cluster manager.')
        return 0
    if verb in OFFLINE:
        return _offline(ctx, verb, rest)
    if verb not in VERBS:
        raise CommandError(f'error: unknown command "{verb}" for "kubectl"'
                           "\n\nDid you mean this?\nRun 'kubectl --help' "
                           'for usage.', 1)
    spec, handler = VERBS[verb]
    opts = _parse(verb, spec, rest)
    session = connect(ctx, opts)
    return handler(session)


def _mutating(args: list[str]) -> bool:
    verb, _ = _split_verb(args)
    return verb in MUTATING


if __name__ == '__main__':
    runner.run('kubectl', main, mutating=_mutating, needs=('kubectl',))

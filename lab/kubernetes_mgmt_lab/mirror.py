"""The lab's "site mirror": what a site without internet serves its VMs.

The lab has no internet, so the install script gets its apt signing key
(of each Kubernetes minor's repository, ``apt/v1.37/``) and the CNI
manifest from here, as it would from a mirror on a real
site. The key is a real OpenPGP key made by gpg at the first start (the
script checks its fingerprint; the emulated ``apt-get`` verifies no
signature); the CNI manifests are small stand-ins whose DaemonSet names
the lab's kubelet stand-in recognises as a pod network.

Run as ``python -m kubernetes_mgmt_lab.mirror --dir D --listen IP:PORT``;
``mirrorproc`` starts and stops it.
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import itertools
import os
import subprocess
import sys
import tempfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

from kubernetes_mgmt_lab.net import listen_address, serve_until_stopped
from kubernetes_mgmt_lab.releases import KUBERNETES_RELEASES

KEY_PATH = 'apt/Release.key'
# Not read by VMs: what the lab's driver options pin the key to.
FINGERPRINT_PATH = 'apt/Release.key.fingerprint'
# The site's Kubernetes apt repository, one per minor as on pkgs.k8s.io
# ({minor} is the product's placeholder for the cluster's minor); each
# serves the same key (KEY_PATH too).
APT_REPO_TEMPLATE = 'apt/v{minor}/'
CALICO_PATH = 'cni/calico.yaml'
FLANNEL_PATH = 'cni/flannel.yaml'

CALICO_MANIFEST = """\
# Lab stand-in for Calico's calico.yaml (v3.28.0), served by the lab's
# site mirror. Not a pod network: the lab's kubelets count a DaemonSet
# named calico-node as an installed CNI.
apiVersion: v1
kind: ServiceAccount
metadata:
  name: calico-node
  namespace: kube-system
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: calico-node
  namespace: kube-system
  labels: {k8s-app: calico-node}
spec:
  selector:
    matchLabels: {k8s-app: calico-node}
  template:
    metadata:
      labels: {k8s-app: calico-node}
    spec:
      hostNetwork: true
      serviceAccountName: calico-node
      tolerations: [{operator: Exists}]
      containers:
      - name: calico-node
        image: docker.io/calico/node:v3.28.0
        env:
        - name: CALICO_NETWORKING_BACKEND
          value: bird
        # As upstream: the pod CIDR line an installer may uncomment.
        # - name: CALICO_IPV4POOL_CIDR
        #   value: "192.168.0.0/16"
"""

FLANNEL_MANIFEST = """\
# Lab stand-in for Flannel's kube-flannel.yml (v0.25.5), served by the
# lab's site mirror. Not a pod network: the lab's kubelets count a
# DaemonSet named kube-flannel-ds as an installed CNI.
apiVersion: v1
kind: Namespace
metadata:
  name: kube-flannel
  labels: {pod-security.kubernetes.io/enforce: privileged}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: flannel
  namespace: kube-flannel
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: kube-flannel-cfg
  namespace: kube-flannel
data:
  net-conf.json: |
    {"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan"}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: kube-flannel-ds
  namespace: kube-flannel
  labels: {app: flannel}
spec:
  selector:
    matchLabels: {app: flannel}
  template:
    metadata:
      labels: {app: flannel}
    spec:
      hostNetwork: true
      serviceAccountName: flannel
      tolerations: [{operator: Exists}]
      containers:
      - name: kube-flannel
        image: docker.io/flannel/flannel:v0.25.5
"""


def sha256_of(text: str) -> str:
    """What a site writes into cni_manifest_sha256 for a served file."""
    return hashlib.sha256(text.encode('utf-8')).hexdigest()


def _gpg(home: str, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(['gpg', '--batch', '--homedir', home, *args],
                          input=stdin, check=True, capture_output=True
                          ).stdout


def new_release_key() -> str:
    """A real OpenPGP public key (ed25519, no passphrase, thrown away
    after export): the install script pins the apt key by fingerprint, so
    the lab's must be a key gpg can read."""
    with tempfile.TemporaryDirectory(prefix='klab-gpg-') as home:
        os.chmod(home, 0o700)
        try:
            _gpg(home, '--pinentry-mode', 'loopback', '--passphrase', '',
                 '--quick-gen-key', 'kubernetes-mgmt lab apt '
                 '<apt@lab.invalid>', 'ed25519', 'sign', 'never')
            return _gpg(home, '--armor', '--export').decode()
        finally:
            subprocess.run(['gpgconf', '--homedir', home, '--kill',
                            'gpg-agent'], check=False, capture_output=True)


def fingerprint_of(key: str) -> str:
    """The primary key's fingerprint, as a site pins it."""
    with tempfile.TemporaryDirectory(prefix='klab-gpg-') as home:
        os.chmod(home, 0o700)
        listing = _gpg(home, '--with-colons', '--show-keys',
                       stdin=key.encode()).decode()
    lines = listing.splitlines()
    for first, second in itertools.pairwise(lines):
        if first.startswith('pub:') and second.startswith('fpr:'):
            return second.split(':')[9]
    raise ValueError('no primary key in the listing')


def key_fingerprint(directory: str) -> str:
    """The fingerprint of the key the mirror in ``directory`` serves."""
    with open(os.path.join(directory, FINGERPRINT_PATH),
              encoding='utf-8') as f:
        return f.read().strip()


def populate(directory: str) -> None:
    """Write the mirror's files below ``directory``; a key it already
    has is kept (a restarted mirror serves the same one)."""
    try:
        with open(os.path.join(directory, KEY_PATH), encoding='utf-8') as f:
            key = f.read()
    except FileNotFoundError:
        key = new_release_key()
    files = {KEY_PATH: key, FINGERPRINT_PATH: fingerprint_of(key) + '\n',
             CALICO_PATH: CALICO_MANIFEST, FLANNEL_PATH: FLANNEL_MANIFEST}
    for minor in KUBERNETES_RELEASES:
        files[APT_REPO_TEMPLATE.format(minor=minor) + 'Release.key'] = key
    for relative, text in files.items():
        path = os.path.join(directory, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w', encoding='utf-8') as f:
            f.write(text)
        os.chmod(path, 0o644)


def serve(directory: str, listen: tuple[str, int]) -> ThreadingHTTPServer:
    """An HTTP server for ``directory`` (not yet serving)."""
    handler = functools.partial(SimpleHTTPRequestHandler,
                                directory=directory)
    return ThreadingHTTPServer(listen, handler)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog='python -m kubernetes_mgmt_lab.mirror',
        description="The lab's site mirror (apt key, CNI manifests).")
    parser.add_argument('--dir', required=True, help='directory to serve')
    parser.add_argument('--listen', required=True, type=listen_address,
                        help='IP:PORT to listen on')
    args = parser.parse_args(argv)
    server = serve(args.dir, args.listen)
    # The access log (stderr, the lab's mirror.log) shows what VMs fetched.
    sys.stderr.write(f'mirror of {args.dir} on {args.listen[0]}:'
                     f'{server.server_address[1]}\n')
    sys.stderr.flush()
    return serve_until_stopped(server)


if __name__ == '__main__':
    sys.exit(main())

"""Private registries and the pinned apt key, end to end on a lab VM:
an Instantiate request's ``private_registries`` become the prepare
role's configuration (the product's own code), the install script runs
it over SSH and writes ``certs.d``, and the VM's real containerd 1.6
pulls the sandbox image with that tree from Debian's docker-registry
(HTTPS from a lab CA, mutual TLS, htpasswd). The VM's kubelet, kubeadm
and the apt packages stay emulated; the registry, containerd, ctr, TLS
and the credentials are real.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from kubernetes_mgmt.cluster.registry_config import (
    apt_key_fingerprints,
    registry_keys,
)
from kubernetes_mgmt.cluster.script import InstallScript
from kubernetes_mgmt.errors import CommandFailed
from kubernetes_mgmt.params.validate import parse_instantiate_request
from kubernetes_mgmt.remote.ssh import Endpoint, Login, Sessions
from kubernetes_mgmt_lab import (
    mirror,
    mirrorproc,
    net,
    oci_images,
    packages,
    pki,
    registry,
)
from kubernetes_mgmt_lab.emulated.kubeadm import ADDON_TAGS
from kubernetes_mgmt_lab.emulated.node_images import images_of
from kubernetes_mgmt_lab.testing import throwaway_lab, unavailable_reason

pytestmark = pytest.mark.lab

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / 'scripts' / 'install_k8s_cluster.sh'
REQUEST = ROOT / 'tests' / 'data' / 'requests' / \
    'simple_kubernetes_param_file.json'
K8S = '1.37'
PAUSE_TAG = ADDON_TAGS[int(K8S.split('.')[1])][1]
# The name image references carry; nothing resolves it, so every pull
# goes through the mirrors the request lists.
SITE = 'registry.airgap.lab:5000'
SANDBOX = f'{SITE}/k8s/pause:{PAUSE_TAG}'
CERTS_D = '/etc/containerd/certs.d'
PROGRAMS = {'/usr/bin/containerd': 'containerd', 'runc': 'runc',
            '/usr/bin/docker-registry': 'docker-registry',
            'skopeo': 'skopeo'}


@pytest.fixture(scope='module')
def env(tmp_path_factory):
    reason = unavailable_reason() or (
        packages.missing(PROGRAMS) and
        f'needs {" ".join(packages.missing(PROGRAMS))}')
    if reason:
        pytest.skip(reason)
    with throwaway_lab(1, 1) as lab:
        ca = pki.Authority.new('airgap-site-ca')
        root = str(tmp_path_factory.mktemp('registry'))
        reg = registry.start(root, lab.state.gateway,
                             net.free_port(lab.state.gateway, 0), ca=ca,
                             mutual_tls=True)
        layout = oci_images.build(str(tmp_path_factory.mktemp('img')),
                                  'k8s/pause', PAUSE_TAG)
        digest = oci_images.push(layout, reg, f'k8s/pause:{PAUSE_TAG}')
        pool = Sessions(lab.known_hosts())
        env = _Env(lab, ca, reg, digest, pool, root)
        try:
            yield env
        finally:
            pool.close()
            registry.stop(env.reg)      # the rotation test starts another


class _Env:
    def __init__(self, lab, ca, reg, digest, pool, root):
        self.lab, self.ca, self.reg, self.digest = lab, ca, reg, digest
        self.pool, self.root = pool, root
        self.script = InstallScript(SCRIPT)
        self.uploaded: set[str] = set()
        # Nothing listens there: the first mirror is down.
        self.dead = f'https://{lab.state.gateway}:' \
            f'{net.free_port(lab.state.gateway, 0)}'

    def host(self, role: str):
        return next(h for h in self.lab.state.hosts if h.role == role)

    def session(self, host):
        login = Login(self.lab.state.username, self.lab.state.password)
        session = self.pool.get(Endpoint(host.ip, login, label=host.name))
        if host.name not in self.uploaded:
            self.script.upload(session)
            self.uploaded.add(host.name)
        return session

    def entry(self, **changes) -> dict:
        reg = self.reg
        entry = {'registry': SITE, 'mirrors': [self.dead, reg.url],
                 'ca_cert': reg.ca_pem.decode(),
                 'client_cert': reg.client_cert_pem.decode(),
                 'client_key': reg.client_key_pem.decode(),
                 'username': reg.username, 'password': reg.password}
        entry.update(changes)
        return entry

    def prepare_config(self, host, *entries: dict,
                       fingerprints: list[str] | None = None) -> dict:
        """The prepare role's configuration for ``host``, its registry
        and apt-key keys made by the product from a request."""
        body = json.loads(REQUEST.read_text(encoding='utf-8'))
        param = body['additionalParams']['k8s_cluster_installation_param']
        param.pop('proxy', None)
        param['private_registries'] = list(entries)
        if fingerprints:
            param['apt_key_fingerprints'] = fingerprints
        params = parse_instantiate_request(body)
        site = self.lab.state.mirror_url
        return {'NODE_NAME': host.name, 'NODE_IP': host.ip, 'DEADLINE': 120,
                'K8S_VERSION': K8S,
                'K8S_APT_REPO': f'{site}{mirror.APT_REPO_TEMPLATE}'
                .format(minor=K8S),
                'K8S_APT_KEY_URL': f'{site}{mirror.KEY_PATH}',
                # The request pins the key, else the lab's own one.
                'K8S_APT_KEY_FINGERPRINTS': apt_key_fingerprints(params)
                if fingerprints else mirror.key_fingerprint(
                    mirrorproc.content_dir(self.lab.root)),
                'IMAGE_REPOSITORY': f'{SITE}/k8s',
                **registry_keys(params)}

    def prepare(self, host, *entries: dict, **kwargs) -> None:
        self.script.run(self.session(host), 'prepare',
                        self.prepare_config(host, *entries, **kwargs))

    def path(self, host, path: str) -> str:
        return self.lab.host_path(host.name, path)

    def images(self, host) -> dict[str, str]:
        return images_of(host.name, self.lab)


def _mode(path: str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _secrets(env) -> list[str]:
    key_lines = [line for line in env.reg.client_key_pem.decode()
                 .splitlines() if not line.startswith('-----')]
    return [env.reg.password, env.reg.basic_auth.split()[1], *key_lines]


def test_an_unpinned_apt_key_installs_nothing(env):
    master = env.host('master')
    wrong = 'AB' * 20
    with pytest.raises(CommandFailed) as info:
        env.prepare(master, fingerprints=[wrong])
    found = mirror.key_fingerprint(mirrorproc.content_dir(env.lab.root))
    message = str(info.value)
    assert f'the apt key has fingerprint {found}; expected {wrong}' in message
    # Refused before apt knew the repository: nothing was installed.
    assert not os.path.exists(env.path(
        master, '/etc/apt/sources.list.d/kubernetes.list'))
    assert 'kubelet' not in _installed(env, master).split()


def test_prepare_pulls_the_sandbox_image_through_the_second_mirror(env):
    worker = env.host('worker')
    before = len(registry.requests(env.reg))
    env.prepare(worker, env.entry())
    directory = env.path(worker, f'{CERTS_D}/{SITE}')
    assert sorted(os.listdir(directory)) == [
        'ca.crt', 'client.crt', 'client.key', 'hosts.toml']
    assert (_mode(f'{directory}/hosts.toml'), _mode(f'{directory}/client.key'),
            _mode(f'{directory}/ca.crt')) == (0o600, 0o600, 0o644)
    hosts = Path(directory, 'hosts.toml').read_text(encoding='utf-8')
    # The mirrors in the request's order: the dead one is tried first.
    assert hosts.index(env.dead) < hosts.index(env.reg.url)
    assert env.images(worker)[SANDBOX] == env.digest
    seen = [str(r) for r in registry.requests(env.reg)[before:]]
    # containerd names the registry the image is of (ns=) to the mirror.
    assert f'HEAD /v2/k8s/pause/manifests/{PAUSE_TAG}?ns=' \
        f'{SITE.replace(":", "%3A")} 200' in seen, seen


def test_a_wrong_ca_fails_prepare_naming_registry_and_node(env):
    master = env.host('master')
    other = pki.Authority.new('not-the-site-ca')
    with pytest.raises(CommandFailed) as info:
        env.prepare(master, env.entry(ca_cert=other.cert_pem.decode()))
    message = str(info.value)
    assert message.startswith(f'[{master.name}] prepare:')
    assert f'cannot pull {SANDBOX} from registry {SITE}' in message
    assert 'x509' in message or 'certificate' in message
    assert SANDBOX not in env.images(master)


def test_rotated_credentials_are_used_from_the_next_prepare(env):
    worker = env.host('worker')
    old = env.reg
    registry.stop(old)
    ip, port = old.address.rsplit(':', 1)
    env.reg = registry.start(env.root, ip, int(port), ca=env.ca,
                             mutual_tls=True,
                             password='Rotated-' + old.password[:8])
    _forget(env, worker)
    before = len(registry.requests(env.reg))
    # The old password: the registry answers 401 (containerd then tries
    # the next host and reports that one's error), and prepare fails.
    with pytest.raises(CommandFailed) as info:
        env.prepare(worker, env.entry(password=old.password,
                                      client_cert=old.client_cert_pem
                                      .decode(),
                                      client_key=old.client_key_pem.decode()))
    assert f'from registry {SITE}' in str(info.value)
    assert [r.status for r in registry.requests(env.reg)[before:]] == [401]
    env.prepare(worker, env.entry())
    assert env.images(worker)[SANDBOX] == env.digest
    hosts = Path(env.path(worker, f'{CERTS_D}/{SITE}/hosts.toml')).read_text(
        encoding='utf-8')
    assert env.reg.basic_auth in hosts and old.basic_auth not in hosts


def _forget(env, host) -> None:
    """The node's containerd forgets the image: the next prepare pulls."""
    env.session(host).run(['ctr', '--namespace', 'k8s.io', 'images', 'rm',
                           SANDBOX], step='forget image', sudo=True)
    assert SANDBOX not in env.images(host)


def test_secrets_are_only_in_the_0600_files(env):
    worker = env.host('worker')
    allowed = {env.path(worker, f'{CERTS_D}/{SITE}/{name}')
               for name in ('hosts.toml', 'client.key')}
    found = []
    for top in ('/etc', '/var/lib', '/var/log', '/root', '/home', '/run',
                '/tmp'):
        base = env.path(worker, top)
        for dirpath, _, files in os.walk(base):
            for name in files:
                path = os.path.join(dirpath, name)
                if path in allowed or not os.path.isfile(path):
                    continue
                try:
                    data = Path(path).read_bytes()
                except OSError:
                    continue
                found += [path for s in _secrets(env) if s.encode() in data]
    assert found == []
    for path in allowed:
        assert _mode(path) == 0o600


def test_a_registry_no_longer_configured_is_removed(env):
    worker = env.host('worker')
    env.prepare(worker)
    assert not os.path.exists(env.path(worker, f'{CERTS_D}/{SITE}'))


def _installed(env, host) -> str:
    return env.lab.run_in_host(host.name, ['dpkg-query', '-W', '-f',
                                           '${Package}\\n']).stdout

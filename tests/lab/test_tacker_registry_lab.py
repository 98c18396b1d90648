"""A private registry through Tacker 16's v2 API, and new credentials for
it given by a later scale and heal: the operator's view of README's
"Air-gapped sites".

Real: Tacker (API, conductor, the package's LCM script), Heat, the
registry (Debian's docker-registry over HTTPS from a lab CA, htpasswd),
and each VM's containerd and ctr, which pull the sandbox image through
the ``certs.d`` tree the install script wrote. Emulated: kubeadm, the
kubelet and the API server, the compute and network APIs below Heat.

The tests run in file order and share one instance.
"""
from __future__ import annotations

import datetime
import json
import os
import stat
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from kubernetes_mgmt.shim.v2.instance import PARAMS_KEY
from kubernetes_mgmt_lab import oci_images, packages, pki, registry
from kubernetes_mgmt_lab.emulated.kubeadm import ADDON_TAGS
from kubernetes_mgmt_lab.manager import Lab
from kubernetes_mgmt_lab.openstack import cloud, inspect, tacker
from kubernetes_mgmt_lab.openstack.layout import Root
from kubernetes_mgmt_lab.openstack.operator import OperationFailed, Operator

pytestmark = pytest.mark.lab

REQUESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'samples', 'requests_v2')
USER_DATA = os.path.join(REQUESTS, 'user_data_params.json')
# containerd's sandbox image is registry.k8s.io/pause: the request sends
# that registry to the lab's, so every pull of it goes there.
REGISTRY = 'registry.k8s.io'
CERTS_D = f'/etc/containerd/certs.d/{REGISTRY}'
PAUSE_TAGS = sorted({tags[1] for tags in ADDON_TAGS.values()})
WORKER = 'workerNode'
PROGRAMS = {'/usr/bin/containerd': 'containerd', 'runc': 'runc',
            '/usr/bin/docker-registry': 'docker-registry',
            'skopeo': 'skopeo'}


@dataclass
class Env:
    root: Root
    op: Operator
    lab: Lab
    ca: pki.Authority
    reg: registry.LabRegistry
    registry_root: str
    vim_id: str
    vnfd_id: str
    vnf_id: str = ''
    # Every credential the registry ever had: none may leak anywhere.
    passwords: list[str] = field(default_factory=list)

    def entry(self, **changes) -> dict:
        entry = {'registry': REGISTRY, 'mirrors': [self.reg.url],
                 'ca_cert': self.reg.ca_pem.decode(),
                 'username': self.reg.username,
                 'password': self.reg.password}
        return {**entry, **changes}

    def params_file(self, name: str, *entries: dict) -> str:
        """A scale or heal request's additionalParams: the package's
        user data and the registries from now on."""
        with open(USER_DATA, encoding='utf-8') as f:
            body = json.load(f)
        body['additionalParams']['private_registries'] = list(entries)
        path = self.root.of('requests', f'{name}.json')
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                          0o600), 'w', encoding='utf-8') as f:
            json.dump(body, f)
        return path

    def restart_registry(self, password: str) -> None:
        """The site changes the registry's password: the old one is
        answered 401 from now on."""
        registry.stop(self.reg)
        ip, port = self.reg.address.rsplit(':', 1)
        self.reg = registry.start(self.registry_root, ip, int(port),
                                  ca=self.ca, password=password)
        self.passwords.append(password)

    def vnfcs(self) -> list[inspect.Vnfc]:
        return inspect.vnfcs(self.root, self.op.show(self.vnf_id))


@pytest.fixture(scope='module')
def env(tacker_site, tmp_path_factory) -> Iterator[Env]:
    missing = packages.missing(PROGRAMS)
    if missing:
        pytest.skip(f'needs {" ".join(missing)}')
    root = Root(tacker_site.root)
    op = Operator(root, echo=print, api_version=2)
    lab = Lab.load(cloud.lab_root(root, 0))
    ca = pki.Authority.new('tacker-registry-site-ca')
    registry_root = str(tmp_path_factory.mktemp('registry'))
    with registry.running(registry_root, lab.state.gateway, ca=ca) as reg:
        images = str(tmp_path_factory.mktemp('images'))
        for tag in PAUSE_TAGS:
            layout = oci_images.build(os.path.join(images, tag), 'pause',
                                      tag)
            oci_images.push(layout, reg, f'pause:{tag}')
        csar = root.of('k8s_cluster_registry_v2.zip')
        subprocess.run([tacker.VENV.bin('kubernetes-mgmt'), 'package',
                        'build', '--v2', '-o', csar], check=True,
                       capture_output=True)
        _, vnfd_id = op.onboard(csar)
        env = Env(root, op, lab, ca, reg, registry_root, op.register_vim(),
                  vnfd_id, passwords=[reg.password])
        try:
            yield env
        finally:
            registry.stop(env.reg)      # a restarted one, perhaps
            if env.vnf_id:
                _terminate(env)


def _terminate(env: Env) -> None:
    shown = env.op.show(env.vnf_id)
    if shown['Instantiation State'] == 'INSTANTIATED':
        env.op.terminate(env.vnf_id)
    env.op.run('vnflcm', 'delete', env.vnf_id, parse=False)


def _hosts_toml(env: Env, vnfc: inspect.Vnfc) -> str:
    return inspect.read_in_vm(env.root, vnfc, f'{CERTS_D}/hosts.toml') or ''


def _requests_since(env: Env, start: int) -> list[registry.LoggedRequest]:
    return registry.requests(env.reg)[start:]


def test_instantiate_pulls_through_the_private_registry(env):
    env.vnf_id = env.op.create(env.vnfd_id, name='v2-registry')

    def add_registry(body: dict) -> None:
        body['additionalParams']['k8s_cluster_installation_param'][
            'private_registries'] = [env.entry()]
    request = env.op.request_file(
        os.path.join(REQUESTS, 'instantiate_simple_request.json'),
        env.vim_id, 'v2-registry', changes=add_registry)
    env.op.instantiate(env.vnf_id, request)
    vnfcs = env.vnfcs()
    assert len(vnfcs) >= 2
    for vnfc in vnfcs:
        assert env.reg.basic_auth in _hosts_toml(env, vnfc), vnfc
    # Each node's prepare pulled the sandbox image through the mirror
    # with the CA and the password (containerd names the registry).
    pulls = [r for r in registry.requests(env.reg)
             if '/v2/pause/manifests/' in r.path and r.status == 200]
    assert len(pulls) >= len(vnfcs), pulls


def test_bad_new_registries_fail_the_scale_before_any_vm(env):
    before = {v.server_id for v in env.vnfcs()}
    sealed = env.op.show(env.vnf_id)['metadata'][PARAMS_KEY]
    expired, _ = pki.issue(env.ca.cert_pem, env.ca.key_pem, 'expired',
                           now=datetime.datetime.now(datetime.timezone.utc)
                           - datetime.timedelta(days=800))
    params = env.params_file('bad-registries', env.entry(
        ca_cert=expired.decode(), password='Not-Sent-Anywhere-1'))
    with pytest.raises(OperationFailed) as info:
        env.op.scale(env.vnf_id, 'SCALE_OUT', 'worker_instance',
                     params=params)
    op = info.value.op
    assert op['Operation State'] == 'FAILED_TEMP'
    detail = json.dumps(op['Error'])
    assert 'additionalParams.private_registries[0].ca_cert' in detail
    assert 'expired on' in detail
    assert 'Not-Sent-Anywhere-1' not in detail
    env.op.fail(op['ID'])
    # Nothing changed: no server, the stored parameters as they were.
    assert {v.server_id for v in env.vnfcs()} == before
    assert env.op.show(env.vnf_id)['metadata'][PARAMS_KEY] == sealed


def test_a_scale_out_after_a_password_change_uses_the_new_one(env):
    old_auth = env.reg.basic_auth
    before = env.vnfcs()
    env.restart_registry('Rotated-' + env.reg.password[:10])
    start = len(registry.requests(env.reg))
    env.op.scale(env.vnf_id, 'SCALE_OUT', 'worker_instance',
                 params=env.params_file('rotated', env.entry()))
    after = env.vnfcs()
    new = [v for v in after if v.server_id not in
           {b.server_id for b in before}]
    assert len(new) == 1 and new[0].vdu == WORKER
    # The new worker pulled with the new password; the nodes that were
    # there took it too (the hosts role), and kept nothing of the old.
    for vnfc in after:
        text = _hosts_toml(env, vnfc)
        assert env.reg.basic_auth in text and old_auth not in text, vnfc
    _pull_again(env, next(v for v in before if v.vdu == WORKER))
    seen = _requests_since(env, start)
    assert [r for r in seen if r.status == 401] == []
    assert sum(1 for r in seen if '/v2/pause/manifests/' in r.path
               and r.status == 200) >= 2, seen


def _pull_again(env: Env, vnfc: inspect.Vnfc) -> None:
    """The node's containerd forgets the sandbox image and pulls it with
    the certs.d tree it has, as the kubelet would."""
    images = inspect.run_in_vm(env.root, vnfc, [
        'ctr', '--namespace', 'k8s.io', 'images', 'ls', '-q'])
    ref = next(line for line in images.stdout.split()
               if line.startswith(f'{REGISTRY}/pause:'))
    inspect.run_in_vm(env.root, vnfc, ['ctr', '--namespace', 'k8s.io',
                                       'images', 'rm', ref])
    pulled = inspect.run_in_vm(env.root, vnfc, [
        'ctr', '--namespace', 'k8s.io', 'images', 'pull', '--hosts-dir',
        '/etc/containerd/certs.d', ref])
    assert pulled.returncode == 0, pulled.stderr


def test_a_heal_replaces_them_again_on_every_node(env):
    old_auth = env.reg.basic_auth
    before = env.vnfcs()
    target = next(v for v in before if v.vdu == WORKER)
    info = env.op.show(env.vnf_id)['Instantiated Vnf Info']
    by_server = {v['vnfcResourceInfoId']: v['id'] for v in info['vnfcInfo']}
    env.restart_registry('Healed-' + env.reg.password[:10])
    start = len(registry.requests(env.reg))
    env.op.heal(env.vnf_id, (by_server[target.server_id],),
                params=env.params_file('rotated-heal', env.entry()))
    after = env.vnfcs()
    healed = [v for v in after if v.server_id not in
              {b.server_id for b in before}]
    assert [v.vdu for v in healed] == [WORKER]
    # The healed worker pulled with the newest password; the others,
    # outside the heal and at the same addresses, took it too.
    for vnfc in after:
        text = _hosts_toml(env, vnfc)
        assert env.reg.basic_auth in text and old_auth not in text, vnfc
    _pull_again(env, next(v for v in after if v.vdu != WORKER))
    seen = _requests_since(env, start)
    assert [r for r in seen if r.status == 401] == []
    assert sum(1 for r in seen if '/v2/pause/manifests/' in r.path
               and r.status == 200) >= 2, seen


def test_no_registry_secret_in_logs_argv_or_other_files(env):
    secrets = [s for p in env.passwords
               for s in (p, registry.basic_auth(env.reg.username, p)
                         .split()[1])]
    found = []
    for name in os.listdir(env.root.log_dir()):
        path = os.path.join(env.root.log_dir(), name)
        if os.path.isfile(path):
            found += _containing(path, secrets)
    argv = json.dumps(inspect.cluster(env.root).argv_log())
    found += ['argv log' for s in secrets if s in argv]
    for vnfc in env.vnfcs():
        allowed = env.lab.host_path(vnfc.lab_host, f'{CERTS_D}/hosts.toml')
        assert stat.S_IMODE(os.stat(allowed).st_mode) == 0o600
        for top in ('/etc', '/var/lib', '/var/log', '/root', '/home',
                    '/run', '/tmp'):
            for dirpath, _, files in os.walk(
                    env.lab.host_path(vnfc.lab_host, top)):
                found += [p for p in (os.path.join(dirpath, f)
                                      for f in files)
                          if p != allowed and os.path.isfile(p)
                          for _ in _containing(p, secrets)]
    assert found == []


def _containing(path: str, secrets: list[str]) -> list[str]:
    try:
        with open(path, 'rb') as f:
            data = f.read()
    except OSError:
        return []
    return [path for s in secrets if s.encode() in data]

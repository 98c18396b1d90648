"""The lab's real registry and real containerd (air-gapped sites): a
``certs.d`` tree in the format the install script writes, checked
against Debian's docker-registry (HTTPS, mutual TLS, htpasswd) and
containerd 1.6's own ``ctr images pull --hosts-dir``. The trees here are
written by the test: this checks the lab pieces, not the product.

One registry and one containerd serve the module; every test removes
the images it made, so each pull fetches every blob again.
"""
from __future__ import annotations

import os
import secrets
import shutil
import tempfile

import pytest

from kubernetes_mgmt_lab import net, oci_images, packages, pki, registry
from kubernetes_mgmt_lab.real_containerd import RealContainerd
from kubernetes_mgmt_lab.sysrun import run
from kubernetes_mgmt_lab.testing import unavailable_reason

pytestmark = pytest.mark.lab

PROGRAMS = {'/usr/bin/containerd': 'containerd', '/usr/bin/ctr':
            'containerd', 'runc': 'runc',
            '/usr/bin/docker-registry': 'docker-registry',
            'skopeo': 'skopeo'}
# The name a site's image references carry; nothing resolves it, so a
# pull reaches the registry only through a mirror entry.
SITE_NAME = 'registry.airgap.lab:5000'
REPO = 'lab/true:1.0'      # conftest's layout, pushed
IP = '127.0.0.1'


@pytest.fixture(scope='module')
def machine() -> None:
    reason = unavailable_reason()
    missing = packages.missing(PROGRAMS)
    if not reason and missing:
        reason = f'needs the Debian packages {" ".join(missing)}'
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope='module')
def reg(machine, ca, tmp_path_factory):
    with registry.running(str(tmp_path_factory.mktemp('registry')), IP,
                          ca=ca, mutual_tls=True) as r:
        yield r


@pytest.fixture(scope='module')
def containerd(machine):
    # Short: the socket's path must fit a unix socket address.
    directory = tempfile.mkdtemp(prefix='kctr-', dir='/var/tmp')
    ctd = None
    try:
        ctd = RealContainerd.start(directory)
        yield ctd
    finally:
        if ctd is not None:
            ctd.stop()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def ctd(containerd):
    """The module's containerd, emptied of images after the test."""
    yield containerd
    made = list(containerd.images())
    if made:
        containerd.remove(*made)


def write_hosts(hosts_dir: str, name: str, server: str, ca_pem: bytes,
                reg: registry.LabRegistry, authorization: str | None,
                mirrors: tuple[str, ...] = ()) -> str:
    """``<hosts_dir>/<name>/hosts.toml`` as the install script writes it
    (relative ca/client paths); returns ``hosts_dir``."""
    directory = os.path.join(hosts_dir, name)
    pki.write(os.path.join(directory, 'ca.crt'), ca_pem)
    pki.write(os.path.join(directory, 'client.crt'), reg.client_cert_pem)
    pki.write(os.path.join(directory, 'client.key'), reg.client_key_pem,
              private=True)
    tls = 'ca = "ca.crt"\nclient = [["client.crt", "client.key"]]\n'
    header = f'Authorization = ["{authorization}"]\n' if authorization \
        else ''
    lines = [f'server = "{server}"\n', tls]
    if header:
        lines.append(f'\n[header]\n{header}')
    for mirror in mirrors:
        lines.append(f'\n[host."{mirror}"]\n'
                     'capabilities = ["pull", "resolve"]\n' + tls)
        if header:
            lines.append(f'[host."{mirror}".header]\n{header}')
    pki.write(os.path.join(directory, 'hosts.toml'),
              ''.join(lines).encode(), private=True)
    return hosts_dir


def direct_tree(tmp_path, reg, ca_pem: bytes, authorization: str | None
                ) -> str:
    """A tree for the registry itself, also named as its one host entry:
    containerd 1.6 ignores a hosts.toml without any (below)."""
    return write_hosts(str(tmp_path / 'certs.d'), reg.address, reg.url,
                       ca_pem, reg, authorization, mirrors=(reg.url,))


def test_two_authorities_are_unrelated(ca):
    other = pki.Authority.new('kubernetes-mgmt-lab-site-ca')
    assert pki.ca_hash(other.cert_pem) != pki.ca_hash(ca.cert_pem)


def test_image_build_is_deterministic(tmp_path, layout):
    again = oci_images.build(str(tmp_path / 'again'), 'lab/true', '1.0')
    assert again.manifest_digest == layout.manifest_digest
    other = oci_images.build(str(tmp_path / 'other'), 'lab/other', '1.0')
    assert other.manifest_digest != layout.manifest_digest


def test_registry_refuses_anonymous_and_wrong_password(reg, pushed, ctd,
                                                       tmp_path):
    wrong = registry.basic_auth(reg.username, reg.password + 'x')
    assert registry.status(reg) == 401
    assert registry.status(reg, authorization=wrong) == 401
    assert registry.status(reg, authorization=reg.basic_auth) == 200
    hosts = direct_tree(tmp_path, reg, reg.ca_pem, None)
    done = ctd.pull(f'{reg.address}/{REPO}', hosts)
    assert done.returncode != 0
    assert '401' in done.stderr, done.stderr
    assert ctd.images() == {}


def test_pull_through_a_mirror_entry(reg, pushed, layout, ctd, tmp_path):
    assert pushed == layout.manifest_digest
    hosts = write_hosts(str(tmp_path / 'certs.d'), SITE_NAME,
                        f'https://{SITE_NAME}', reg.ca_pem, reg,
                        reg.basic_auth, mirrors=(reg.url,))
    ref = f'{SITE_NAME}/{REPO}'
    done = ctd.pull(ref, hosts)
    assert done.returncode == 0, done.stderr
    assert ctd.images() == {ref: pushed}


def test_wrong_ca_fails_on_tls_and_reaches_no_handler(reg, pushed, ctd,
                                                      tmp_path):
    other = pki.Authority.new('kubernetes-mgmt-lab-site-ca')
    hosts = direct_tree(tmp_path, reg, other.cert_pem, reg.basic_auth)
    before = len(registry.requests(reg))
    done = ctd.pull(f'{reg.address}/{REPO}', hosts)
    assert done.returncode != 0
    assert 'x509' in done.stderr, done.stderr
    assert len(registry.requests(reg)) == before
    assert ctd.images() == {}


def test_wrong_credentials_are_unauthorized(reg, pushed, ctd, tmp_path):
    wrong = registry.basic_auth(reg.username, secrets.token_urlsafe(12))
    hosts = direct_tree(tmp_path, reg, reg.ca_pem, wrong)
    done = ctd.pull(f'{reg.address}/{REPO}', hosts)
    assert done.returncode != 0
    assert '401' in done.stderr or 'unauthorized' in done.stderr.lower(), \
        done.stderr
    assert ctd.images() == {}


def test_second_mirror_serves_when_the_first_is_down(reg, pushed, ctd,
                                                     tmp_path):
    nothing = f'https://{IP}:{net.free_port(IP, 0)}'
    hosts = write_hosts(str(tmp_path / 'certs.d'), SITE_NAME,
                        f'https://{SITE_NAME}', reg.ca_pem, reg,
                        reg.basic_auth, mirrors=(nothing, reg.url))
    ref = f'{SITE_NAME}/{REPO}'
    done = ctd.pull(ref, hosts)
    assert done.returncode == 0, done.stderr
    assert 'trying next host' in done.stderr     # the first was tried
    assert 'connection refused' in done.stderr
    assert ctd.images() == {ref: pushed}


def test_import_archive_needs_no_registry(reg, layout, ctd, tmp_path):
    # Its name is a host where nothing listens, and the module's
    # registry logs no request: the image comes from the file alone.
    ref = f'{IP}:{net.free_port(IP, 0)}/lab/true:1.0'
    path = str(tmp_path / 'true.tar')
    digest = oci_images.archive(layout, path, ref)
    before = len(registry.requests(reg))
    output = ctd.import_archive(path)
    assert ref in output
    assert digest == layout.manifest_digest
    assert ctd.images() == {ref: digest}
    assert len(registry.requests(reg)) == before


def test_access_log_lists_the_pull(reg, pushed, layout, ctd, tmp_path):
    hosts = write_hosts(str(tmp_path / 'certs.d'), SITE_NAME,
                        f'https://{SITE_NAME}', reg.ca_pem, reg,
                        reg.basic_auth, mirrors=(reg.url,))
    before = len(registry.requests(reg))
    assert ctd.pull(f'{SITE_NAME}/{REPO}', hosts).returncode == 0
    seen = {(r.method, r.path.partition('?')[0], r.status)
            for r in registry.requests(reg)[before:]}
    base = '/v2/lab/true'
    assert {('HEAD', f'{base}/manifests/1.0', 200),
            ('GET', f'{base}/manifests/{pushed}', 200),
            ('GET', f'{base}/blobs/{layout.config_digest}', 200),
            ('GET', f'{base}/blobs/{layout.layer_digest}', 200)} <= seen


def test_containerd_in_a_network_namespace(reg, pushed, tmp_path):
    """ctr runs in the namespace too: there the machine's loopback
    registry is out of reach, and the registry sees nothing."""
    netns = 'ktr' + secrets.token_hex(3)
    run(['ip', 'netns', 'add', netns])
    directory = tempfile.mkdtemp(prefix='kctr-', dir='/var/tmp')
    try:
        run(['ip', '-n', netns, 'link', 'set', 'lo', 'up'])
        inside = RealContainerd.start(directory, netns=netns)
        try:
            hosts = direct_tree(tmp_path, reg, reg.ca_pem, reg.basic_auth)
            before = len(registry.requests(reg))
            done = inside.pull(f'{reg.address}/{REPO}', hosts)
            assert done.returncode != 0
            assert 'connection refused' in done.stderr, done.stderr
            assert len(registry.requests(reg)) == before
        finally:
            inside.stop()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        run(['ip', 'netns', 'del', netns], check=False)


def test_containerd_16_ignores_a_file_without_host_tables(reg, pushed, ctd,
                                                          tmp_path):
    """containerd 1.6 rejects a hosts.toml with no ``[host."..."]`` table
    ("invalid `host` tree") and falls back to the directory's Docker-style
    files: the top-level header and client pair are then not used."""
    hosts = write_hosts(str(tmp_path / 'certs.d'), reg.address, reg.url,
                        reg.ca_pem, reg, reg.basic_auth)
    done = ctd.pull(f'{reg.address}/{REPO}', hosts)
    if ctd.version().startswith('1.6.'):
        assert done.returncode != 0
        assert 'failed to decode hosts.toml' in done.stderr, done.stderr
        assert ctd.images() == {}
    else:
        assert done.returncode == 0, done.stderr

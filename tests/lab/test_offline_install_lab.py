"""A cluster installed from the VNF package's image bundle, with no
registry: the driver's instantiate on a lab whose kubeadm needs its
images in each VM's real containerd (``images_from_containerd``: what
it lacks it would have to pull, and the lab reaches no registry.k8s.io).
Scale-out, heal and upgrade keep it so: new nodes import the bundle, an
upgrade the new package's.

The request also names a private registry for registry.k8s.io (Debian's
docker-registry on the lab host): with the bundle, the nodes never ask
it for anything. kubeadm, the kubelet and the API server are emulated;
containerd, ctr, the archives and the registry are real.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.operations.upgrade import upgrade
from kubernetes_mgmt.params import image_bundle
from kubernetes_mgmt.params.upgrade_request import UpgradeOptions
from kubernetes_mgmt.shim import requests
from kubernetes_mgmt.shim.instance_store import TackerInstanceStore
from kubernetes_mgmt_lab import driving, packages, pki, registry
from kubernetes_mgmt_lab.emulated import ClusterView
from kubernetes_mgmt_lab.emulated.config import update_config
from kubernetes_mgmt_lab.emulated.node_images import images_of
from kubernetes_mgmt_lab.image_bundles import write_bundle
from kubernetes_mgmt_lab.testing import throwaway_lab, unavailable_reason

pytestmark = pytest.mark.lab

VERSION, NEW_VERSION = 'v1.36.4', 'v1.37.1'
PROGRAMS = {'/usr/bin/containerd': 'containerd', 'runc': 'runc',
            '/usr/bin/docker-registry': 'docker-registry'}


@pytest.fixture(scope='module')
def env(site, tmp_path_factory):
    reason = unavailable_reason() or (
        packages.missing(PROGRAMS) and
        f'needs {" ".join(packages.missing(PROGRAMS))}')
    if reason:
        pytest.skip(reason)
    with throwaway_lab(1, 1, site=site) as lab:
        update_config(lab.state.cluster_dir, images_from_containerd=True)
        ca = pki.Authority.new('offline-site-ca')
        with registry.running(str(tmp_path_factory.mktemp('registry')),
                              lab.state.gateway, ca=ca) as reg, \
                driving.driver_options(lab, kubernetes_version='1.36'):
            yield lab, reg, _request(lab, reg)


def _request(lab, reg):
    body = driving.request_body(lab)
    body['additionalParams']['k8s_cluster_installation_param'][
        'private_registries'] = [{
            'registry': 'registry.k8s.io', 'mirrors': [reg.url],
            'ca_cert': reg.ca_pem.decode(), 'username': reg.username,
            'password': reg.password}]
    return driving.new_instance(lab, body)


def test_without_the_bundle_prepare_stops_at_the_missing_image(env):
    lab, reg, (request, instance) = env
    with pytest.raises(MgmtDriverError) as info:
        driving.instantiate_end(request, instance, lab)
    message = str(info.value)
    # The registry has no image: prepare's pull through it fails first.
    assert 'cannot pull registry.k8s.io/pause:' in message
    assert 'from registry registry.k8s.io' in message
    assert any('/v2/pause/manifests/' in r.path
               for r in registry.requests(reg))


def _add_bundle(lab, tmp_path: Path, package: str | None = None,
                version: str = VERSION) -> dict[str, str]:
    """The bundle of ``version`` in a VNF package (default: the lab's),
    as package build packs it."""
    refs = write_bundle(str(tmp_path / 'archives'), version)
    bundle = image_bundle.from_archives(tmp_path / 'archives')
    target = Path(package or lab.package_dir, image_bundle.BUNDLE_DIR)
    target.mkdir(parents=True, exist_ok=True)
    for image in bundle.images:
        shutil.copy(tmp_path / 'archives' / image.file, target)
    (target / image_bundle.MANIFEST_NAME).write_text(bundle.to_json())
    return refs


def test_with_the_bundle_the_rerun_installs_and_never_asks_a_registry(
        env, tmp_path):
    lab, reg, (request, instance) = env
    refs = _add_bundle(lab, tmp_path)
    asked = len(registry.requests(reg))
    driving.instantiate_end(request, instance, lab)
    view = ClusterView(lab.state.cluster_dir)
    hosts = [h for h in lab.state.hosts if h.role in ('master', 'worker')]
    for host in hosts:
        # Every image of the bundle at its digest, on every node.
        held = images_of(host.name, lab)
        assert {r: held.get(r) for r in refs} == refs, host.name
        kubeadm = lab.run_in_host(host.name, ['kubeadm', 'version', '-o',
                                              'short']).stdout.strip()
        assert kubeadm == VERSION       # the bundle's own patch release
    assert all(view.node_ready(n) for n in view.node_names())
    assert registry.requests(reg)[asked:] == []
    # The driver remembers the cluster was built from a bundle.
    record = driving.stored_state(lab, instance).record
    assert record.image_bundle == VERSION.lstrip('v')
    # A re-run uploads nothing again and imports nothing again.
    archive = Path(lab.host_path(hosts[0].name,
                                 '/var/lib/kubernetes-mgmt/images'))
    before = {p.name: p.stat().st_mtime_ns for p in archive.iterdir()
              if p.suffix == '.tar'}
    driving.instantiate_end(request, instance, lab)
    assert {p.name: p.stat().st_mtime_ns for p in archive.iterdir()
            if p.suffix == '.tar'} == before
    assert os.path.isfile(archive / 'bundle.list')


def test_a_scaled_out_worker_gets_the_bundle_too(env):
    lab, reg, (_, instance) = env
    asked = len(registry.requests(reg))
    (new,) = driving.scale_out(lab, instance, 1)
    held = images_of(new.name, lab)
    bundle = image_bundle.load(Path(lab.package_dir))
    assert {i.ref: held.get(i.ref) for i in bundle.images} == \
        {i.ref: i.digest for i in bundle.images}
    assert ClusterView(lab.state.cluster_dir).node_ready(
        next(n for n in ClusterView(lab.state.cluster_dir).node_names()
             if new.member_name in n or new.name in n))
    assert registry.requests(reg)[asked:] == []


def _holds_bundle(lab, host, bundle: image_bundle.ImageBundle) -> bool:
    held = images_of(host.name, lab)
    return all(held.get(i.ref) == i.digest for i in bundle.images)


def test_a_healed_worker_imports_the_bundle_again(env):
    lab, reg, (_, instance) = env
    asked = len(registry.requests(reg))
    worker = next(h for h in lab.state.hosts if h.role == 'worker')
    driving.heal(lab, instance, [driving.vnfc_of(instance, worker)])
    healed = lab.host_at(worker.ip)     # a new VM on the same port
    assert healed.server_id != worker.server_id
    assert _holds_bundle(lab, healed,
                         image_bundle.load(Path(lab.package_dir)))
    assert registry.requests(reg)[asked:] == []


def _kubeadm_versions(lab) -> set[str]:
    return {lab.run_in_host(h.name, ['kubeadm', 'version', '-o', 'short'])
            .stdout.strip() for h in lab.state.hosts
            if h.role in ('master', 'worker')}


def _upgrade(lab, instance, package: Path):
    return upgrade(requests.day2_request(instance,
                                         vnf=driving.vnf_dict(instance)),
                   TackerInstanceStore(instance, None, package), '1.37',
                   UpgradeOptions())


def test_an_upgrade_needs_the_new_version_s_bundle(env, tmp_path):
    lab, reg, (_, instance) = env
    asked = len(registry.requests(reg))
    package = tmp_path / 'package-1.37'
    shutil.copytree(lab.package_dir, package,
                    ignore=shutil.ignore_patterns('images'))
    with pytest.raises(MgmtDriverError) as info:
        _upgrade(lab, instance, package)
    message = str(info.value)
    assert 'installed from an image bundle (Kubernetes 1.36.4)' in message
    assert 'has no image bundle' in message
    assert 'Nothing was changed' in message
    assert _kubeadm_versions(lab) == {VERSION}
    # With the new version's bundle every node moves to exactly it,
    # imported, still without asking any registry; the registry
    # configuration stays on every node.
    _add_bundle(lab, tmp_path / 'new', str(package), NEW_VERSION)
    _upgrade(lab, instance, package)
    assert _kubeadm_versions(lab) == {NEW_VERSION}
    bundle = image_bundle.load(package)
    for host in lab.state.hosts:
        if host.role in ('master', 'worker'):
            assert _holds_bundle(lab, host, bundle), host.name
            assert os.path.isfile(lab.host_path(
                host.name,
                '/etc/containerd/certs.d/registry.k8s.io/hosts.toml'))
    assert registry.requests(reg)[asked:] == []

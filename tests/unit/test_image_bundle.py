"""The image bundle of a VNF package (sites with no registry):
``package build --image-bundle``, ``package verify``, and the list a
node's install script reads. Archives are real OCI archives (the lab's
``oci_images``), read as tar files only."""
from __future__ import annotations

import dataclasses
import io
import json
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest

from kubernetes_mgmt.params import image_bundle
from kubernetes_mgmt.params.image_bundle import BundleError
from kubernetes_mgmt_lab.image_bundles import archive_name, write_bundle
from kubernetes_mgmt_lab.package_cli import run_package as run

VERSION = 'v1.37.1'


@pytest.fixture(scope='module')
def archives(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    directory = tmp_path_factory.mktemp('bundle')
    return directory, write_bundle(str(directory), VERSION)


def _copy(archives, tmp_path: Path, leave_out: tuple[str, ...] = ()
          ) -> Path:
    source, refs = archives
    target = tmp_path / 'images'
    target.mkdir()
    for ref in refs:
        if ref.rsplit('/', 1)[1].split(':')[0] not in leave_out:
            shutil.copy(source / archive_name(ref), target)
    return target


def _build(capsys, tmp_path, sol001_dir, bundle: Path, minor='1.37'):
    output = tmp_path / 'k8s.zip'
    result = run(capsys, 'build', '--v2', '-o', str(output), '--sol001-dir',
                 str(sol001_dir), '--kubernetes-version', minor,
                 '--image-bundle', str(bundle))
    return output, result


def test_build_packs_the_archives_and_their_list(capsys, tmp_path,
                                                 sol001_dir, archives):
    output, (status, out, err) = _build(capsys, tmp_path, sol001_dir,
                                        _copy(archives, tmp_path))
    assert (status, err) == (0, '')
    assert 'image bundle:  7 images for Kubernetes 1.37.1' in out
    with zipfile.ZipFile(output) as z:
        bundle = image_bundle.parse(z.read(image_bundle.MANIFEST).decode())
        names = set(z.namelist())
    assert bundle.kubernetes_version == '1.37.1' and bundle.missing() == []
    assert {i.ref: i.digest for i in bundle.images} == archives[1]
    assert {f'Files/images/{i.file}' for i in bundle.images} <= names
    status, out, err = run(capsys, 'verify', str(output))
    assert (status, err) == (0, '')
    assert 'images:     7 images for Kubernetes 1.37.1' in out
    # What a node reads: one "SHA256 FILE REF DIGEST" line per archive.
    line = bundle.node_list().splitlines()[0].split(' ')
    assert len(line) == 4 and line[3].startswith('sha256:')


def test_build_refuses_a_bundle_of_another_minor_or_with_an_image_missing(
        capsys, tmp_path, sol001_dir, archives):
    bundle = _copy(archives, tmp_path, leave_out=('etcd',))
    _, (status, _, err) = _build(capsys, tmp_path, sol001_dir, bundle)
    assert status == 1
    assert 'lacks images kubeadm 1.37.1 needs: etcd' in err
    shutil.copy(archives[0] / archive_name(next(
        r for r in archives[1] if '/etcd:' in r)), bundle)
    _, (status, _, err) = _build(capsys, tmp_path, sol001_dir, bundle,
                                 minor='1.36')
    assert status == 1
    assert 'is for Kubernetes 1.37.1, the package installs 1.36' in err


def _rewrite(zip_path: Path, name: str, data: bytes) -> None:
    """The CSAR with member ``name`` replaced (TOSCA.meta left alone)."""
    copy = zip_path.with_suffix('.tmp')
    with zipfile.ZipFile(zip_path) as src, \
            zipfile.ZipFile(copy, 'w') as dst:
        for info in src.infolist():
            dst.writestr(info, data if info.filename == name
                         else src.read(info.filename))
    copy.replace(zip_path)


def test_verify_names_an_archive_that_is_not_the_listed_image(
        capsys, tmp_path, sol001_dir, archives):
    output, _ = _build(capsys, tmp_path, sol001_dir,
                       _copy(archives, tmp_path))
    with zipfile.ZipFile(output) as z:
        bundle = image_bundle.parse(z.read(image_bundle.MANIFEST).decode())
    pause = next(i for i in bundle.images if i.name == 'pause')
    other = next(i for i in bundle.images if i.name == 'etcd')
    listed = json.loads(bundle.to_json())
    for entry in listed['images']:
        if entry['file'] == pause.file:     # the etcd archive as pause
            entry['file'], entry['sha256'] = other.file, other.sha256
    listed['images'] = [e for e in listed['images']
                        if e['ref'] != other.ref]
    _rewrite(output, image_bundle.MANIFEST, json.dumps(listed).encode())
    status, _, err = run(capsys, 'verify', str(output))
    assert status == 1
    assert f'does not hold {pause.ref}' in err
    assert 'lacks images kubeadm 1.37.1 needs: etcd' in err


def test_archives_that_are_no_oci_archive_are_refused(tmp_path):
    with tarfile.open(tmp_path / 'x.tar', 'w') as tar:
        tar.add(__file__, arcname='index.json')
    with pytest.raises(BundleError, match=r'x\.tar is not an OCI archive'):
        image_bundle.archive_refs(tmp_path / 'x.tar')
    with pytest.raises(BundleError, match='holds no OCI archive'):
        image_bundle.from_archives(tmp_path / 'missing')


@pytest.mark.parametrize('change, words', [
    ({'kubernetes_version': '1.37'}, 'kubernetes_version must be X.Y.Z'),
    ({'images': [{'ref': 'registry.k8s.io/pause:3.10', 'file': '../x.tar',
                  'sha256': 'a' * 64, 'digest': 'sha256:' + 'b' * 64}]},
     'images[0].file is missing or malformed'),
    ({'images': [{'ref': 'pause; rm -rf /', 'file': 'p.tar',
                  'sha256': 'a' * 64, 'digest': 'sha256:' + 'b' * 64}]},
     'images[0].ref is missing or malformed'),
])
def test_a_malformed_list_is_refused_naming_the_field(change, words):
    data = {'kubernetes_version': '1.37.1', 'images': [], **change}
    with pytest.raises(BundleError, match=words.replace('[', r'\[')
                       .replace(']', r'\]')):
        image_bundle.parse(json.dumps(data))


def test_the_plan_sends_the_bundle_for_its_minor_only(archives, tmp_path,
                                                       package, topology_of,
                                                       cluster_params):
    from kubernetes_mgmt.cluster import roles
    from kubernetes_mgmt.cluster.cluster_plan import build_plan
    from kubernetes_mgmt.errors import MgmtDriverError

    target = package / image_bundle.BUNDLE_DIR
    target.mkdir(parents=True)
    bundle = image_bundle.from_archives(archives[0])
    (target / image_bundle.MANIFEST_NAME).write_text(bundle.to_json())
    plan = build_plan('inst-1', cluster_params, topology_of(), package)
    assert plan.kubernetes_version == '1.37'
    config = roles.prepare(plan, plan.workers[0])
    assert (config['IMAGE_BUNDLE'], config['K8S_PATCH']) == \
        ('/var/lib/kubernetes-mgmt/images', '1.37.1')
    assert plan.freeze().image_bundle == '1.37.1'
    # An upgrade to 1.38 with this package: refused before any host.
    with pytest.raises(MgmtDriverError, match=r'need a bundle of 1\.38'):
        roles.upgrade(plan, plan.workers[0], '1.38', 'node')
    with pytest.raises(MgmtDriverError, match=r'need a bundle of 1\.38'):
        roles.check_plan(plan, '1.38')
    # The cluster still on 1.36, upgraded with this package: what the
    # operation installs is 1.37, which the bundle is for (a prepare at
    # 1.36 would need another bundle, and none runs in an upgrade).
    older = dataclasses.replace(plan, kubernetes_version='1.36')
    with pytest.raises(MgmtDriverError, match=r'need a bundle of 1\.36'):
        roles.check_plan(older)
    roles.check_plan(older, '1.37')


def test_an_archive_of_two_images_is_refused(archives, tmp_path):
    # bundle.json names each archive once: a second image in one archive
    # would be a list no node accepts.
    source, refs = archives
    (first, second) = list(refs)[:2]
    both = tmp_path / 'both.tar'
    with tarfile.open(source / archive_name(first)) as a, \
            tarfile.open(source / archive_name(second)) as b, \
            tarfile.open(both, 'w') as out:
        index_a = json.load(a.extractfile('index.json'))
        index_b = json.load(b.extractfile('index.json'))
        for tar in (a, b):
            for member in tar.getmembers():
                if member.name not in ('index.json',) and \
                        member.name not in out.getnames():
                    out.addfile(member, tar.extractfile(member))
        index = json.dumps({**index_a, 'manifests': index_a['manifests']
                            + index_b['manifests']}).encode()
        info = tarfile.TarInfo('index.json')
        info.size = len(index)
        out.addfile(info, io.BytesIO(index))
    assert len(image_bundle.archive_refs(both)) == 2
    with pytest.raises(BundleError, match='holds 2 images'):
        image_bundle.from_archives(tmp_path)

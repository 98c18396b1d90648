"""``kubernetes-mgmt package verify`` on a hostile package: it never runs
the package's code and never writes outside its scratch directory.

Each crafted package is checked through the CLI with the temporary
directory pointed at a scratch directory of the test; afterwards nothing
may exist under the test's directory that the test did not put there.
"""
from __future__ import annotations

import hashlib
import json
import stat
import tempfile
import warnings
import zipfile
from pathlib import Path

import pytest

from kubernetes_mgmt.cli import main
from kubernetes_mgmt.vnf_package import csar, layout, meta, zipcheck

USER_DATA = 'UserData/k8s_cluster_user_data.py'
CLASS = 'KubernetesClusterUserData'
REFUSED = ('unsafe entry in the archive ({}); the package is refused and '
           'nothing was extracted')


@pytest.fixture
def scratch(tmp_path, monkeypatch) -> Path:
    """The directory verify may use; ``tempfile`` puts its files there."""
    path = tmp_path / 'scratch'
    path.mkdir()
    monkeypatch.setattr(tempfile, 'tempdir', str(path))
    monkeypatch.chdir(path)
    return path


def snapshot(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob('*')}


def verify(capsys, package: Path, *requests: Path) -> tuple[int, list[str]]:
    argv = ['package', 'verify', str(package)]
    for request in requests:
        argv += ['--request', str(request)]
    status = main(argv)
    out, err = capsys.readouterr()
    assert 'Traceback' not in out + err
    return status, err.splitlines()


def crafted(source: Path, target: Path, extra: list[zipfile.ZipInfo | str],
            data: dict[str, bytes]) -> Path:
    """The built package plus ``extra`` entries (contents from ``data``),
    members named in ``data`` replaced and their hashes in TOSCA.meta
    updated (only what the test crafts is wrong)."""
    with zipfile.ZipFile(source) as archive:
        files = {n: archive.read(n) for n in archive.namelist()}
    files.update({n: b for n, b in data.items() if n in files})
    parsed = meta.parse(files[layout.TOSCA_META].decode())
    parsed.artifacts = [
        meta.Artifact(a.name, 'SHA-256',
                      hashlib.sha256(files[a.name]).hexdigest())
        for a in parsed.artifacts]
    files[layout.TOSCA_META] = meta.render(parsed).encode()
    with zipfile.ZipFile(target, 'w') as archive, warnings.catch_warnings():
        warnings.simplefilter('ignore')     # a duplicate name, on purpose
        for name, content in files.items():
            archive.writestr(name, content)
        for entry in extra:
            name = entry.filename if isinstance(entry, zipfile.ZipInfo) \
                else entry
            archive.writestr(entry, data.get(name, b'# crafted\n'))
    return target


def request_naming(tmp_path: Path, user_data: str) -> Path:
    body = json.loads((layout.request_samples_dir() /
                       'simple_kubernetes_param_file.json').read_text())
    body['additionalParams']['lcm-operation-user-data'] = user_data
    body['additionalParams']['lcm-operation-user-data-class'] = CLASS
    path = tmp_path / 'request.json'
    path.write_text(json.dumps(body))
    return path


def symlink(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


def test_user_data_code_is_not_run(capsys, tmp_path, scratch,
                                   built_package):
    marker = tmp_path / 'marker'
    with zipfile.ZipFile(built_package) as archive:
        source = archive.read(USER_DATA)
    hostile = (f'import pathlib\npathlib.Path({str(marker)!r})'
               ".write_text('ran at import')\n").encode() + source
    package = crafted(built_package, tmp_path / 'hostile.zip', [],
                      {USER_DATA: hostile})
    before = snapshot(tmp_path)
    status, err = verify(capsys, package)
    # The class is still a good one: checked by reading it, not running.
    assert (status, err) == (0, [])
    assert not marker.exists()
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize('kind', ['parent', 'absolute'])
def test_escaping_entry_named_by_a_request_is_refused(
        capsys, tmp_path, scratch, built_package, kind):
    outside = tmp_path / 'outside'
    outside.mkdir()
    # From the scratch directory's subdirectories, ../../ is tmp_path.
    name = '../../escaped.py' if kind == 'parent' else \
        str(outside / 'escaped.py')
    package = crafted(built_package, tmp_path / 'escape.zip', [name],
                      {name: b'from tacker.vnfm.lcm_user_data.abstract_'
                             b'user_data import AbstractUserData\n'})
    request = request_naming(tmp_path, name)
    before = snapshot(tmp_path)
    status, err = verify(capsys, package, request)
    reason = "a '..' component, which leads out of the package" \
        if kind == 'parent' else 'an absolute path'
    assert status == 1
    assert err == [f'problem: {name}: {REFUSED.format(reason)}',
                   f'{package}: 1 problem(s)']
    assert not (tmp_path / 'escaped.py').exists()
    assert not (outside / 'escaped.py').exists()
    assert snapshot(tmp_path) == before


def test_symlink_entry_is_refused(capsys, tmp_path, scratch, built_package):
    target = tmp_path / 'outside-target'
    name = 'UserData/linked.py'
    package = crafted(built_package, tmp_path / 'link.zip',
                      [symlink(name)], {name: str(target).encode()})
    request = request_naming(tmp_path, name)
    before = snapshot(tmp_path)
    status, err = verify(capsys, package, request)
    assert status == 1
    assert err == [
        f'problem: {name}: '
        f'{REFUSED.format("a symbolic link, not a regular file")}',
        f'{package}: 1 problem(s)']
    assert not target.exists()
    assert snapshot(tmp_path) == before


def test_every_unsafe_entry_gets_its_line(capsys, tmp_path, scratch,
                                          built_package):
    names = ['../x', '/tmp/x', 'C:/x', 'Files\\x', 'UserData/link']
    package = crafted(built_package, tmp_path / 'many.zip',
                      [*names[:4], symlink(names[4]), USER_DATA], {})
    status, err = verify(capsys, package)
    assert status == 1
    assert err == [
        f'problem: {name}: {REFUSED.format(reason)}' for name, reason in [
            ('../x', "a '..' component, which leads out of the package"),
            ('/tmp/x', 'an absolute path'),
            ('C:/x', 'a drive letter'),
            ('Files\\x', 'a backslash, a Windows path separator'),
            ('UserData/link', 'a symbolic link, not a regular file'),
            (USER_DATA, 'a second entry of that name (zip readers differ '
                        'on which one they take)')]
    ] + [f'{package}: 6 problem(s)']


def entry(name: str, size: int = 10, compressed: int = 10,
          method: int = zipfile.ZIP_DEFLATED) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.file_size, info.compress_size = size, compressed
    info.compress_type = method
    return info


def test_sizes_no_compressor_can_produce_are_refused():
    bomb = entry('Files/bomb', size=10 << 30, compressed=1 << 20)
    forged = entry('Files/forged', size=5000, compressed=10,
                   method=zipfile.ZIP_STORED)
    zeros = entry('Files/zeros.img', size=1 << 30, compressed=1 << 20)
    assert zipcheck.refusals([bomb, forged, zeros]) == [
        'Files/bomb: ' + REFUSED.format(
            f'it declares {10 << 30} bytes from {1 << 20} compressed, more '
            'than deflate can produce: a forged size or a zip bomb'),
        'Files/forged: ' + REFUSED.format(
            'stored uncompressed, yet it declares 5000 bytes in 10')]


def test_a_file_with_entries_beneath_it_is_refused():
    assert zipcheck.refusals([entry('Files/a'), entry('Files/a/b.yaml'),
                              entry('Files/c/d.yaml')]) == [
        'Files/a: ' + REFUSED.format('a file, yet other entries lie '
                                     'beneath it')]


def test_a_name_with_a_newline_stays_on_one_line():
    [line] = zipcheck.refusals([entry('../a\nb')])
    assert line.startswith("'../a\\nb': unsafe entry")


def test_a_text_member_too_large_to_read_is_unreadable(
        capsys, tmp_path, scratch, built_package):
    pv = 'Files/kubernetes/nfs-pv1.yaml'
    package = crafted(built_package, tmp_path / 'big.zip', [],
                      {pv: b' ' * (csar.READ_LIMIT + 1)})
    status, err = verify(capsys, package)
    assert status == 2
    assert err == [f'error: {package}: {pv} declares {csar.READ_LIMIT + 1} '
                   'bytes, more than the 64 MiB the verifier reads of a '
                   'text member']

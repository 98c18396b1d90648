"""The ``ctr`` stand-in (``emulated.ctr``): which command lines it takes
and the real ctr's command line it makes of them; on a simulated host
(no namespaces), an import into its containerd's store and the listing
of it. The VM cases, with a registry, are in
tests/lab/test_lab_ctr_lab.py."""
from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from kubernetes_mgmt_lab import oci_images
from kubernetes_mgmt_lab.emulated import COMMANDS, ctr, testing
from kubernetes_mgmt_lab.emulated.runner import CommandError

SOCKET = '/run/klab-containerd/containerd.sock'


def real_argv(*args: str) -> list[str]:
    return ctr.ctr_argv(ctr.parse(list(args)), SOCKET)


def test_registered_as_ctr():
    assert COMMANDS['ctr'] == 'ctr'


def test_the_install_scripts_pull():
    assert real_argv('--namespace', 'k8s.io', 'images', 'pull',
                     '--hosts-dir', '/etc/containerd/certs.d',
                     'registry.site:5000/pause:3.10') == [
        '--address', SOCKET, '--namespace', 'k8s.io', 'images', 'pull',
        '--hosts-dir', '/etc/containerd/certs.d', '--',
        'registry.site:5000/pause:3.10']


def test_flag_forms_become_ctrs_own(monkeypatch):
    monkeypatch.delenv('CONTAINERD_NAMESPACE', raising=False)
    # pflag forms and flags after the argument: ctr wants them first.
    assert real_argv('-a', '/x.sock', '--timeout=30s', 'i', 'import',
                     'f.tar', '--digests', '--no-unpack') == [
        '--address', SOCKET, '--namespace', 'default', '--timeout', '30s',
        'images', 'import', '--digests', '--no-unpack', '--', 'f.tar']
    assert real_argv('-n=k8s.io', 'image', 'list', '-q') == [
        '--address', SOCKET, '--namespace', 'k8s.io', 'images', 'ls',
        '--quiet']
    assert real_argv('images', 'pull', '--platform', 'linux/amd64',
                     '--platform', 'linux/arm64', 'r')[-6:] == [
        '--platform', 'linux/amd64', '--platform', 'linux/arm64', '--', 'r']
    assert real_argv('images', 'remove', 'a', 'b', '--sync')[-5:] == [
        'rm', '--sync', '--', 'a', 'b']
    assert real_argv('version')[-1] == 'version'


def test_namespace_from_the_environment(monkeypatch):
    monkeypatch.setenv('CONTAINERD_NAMESPACE', 'k8s.io')
    assert real_argv('images', 'ls')[3] == 'k8s.io'


@pytest.mark.parametrize(('args', 'message'), [
    (['--bogus', 'images', 'ls'], 'ctr: flag provided but not defined: '
                                  '-bogus'),
    (['images', 'pull', '-u', 'user:secret', 'r'],
     "ctr: flag provided but not defined: -u"),
    (['images', 'pull', '--user', 'user:secret', 'r'],
     'ctr: flag provided but not defined: -user'),
    (['containers', 'ls'], 'ctr: the lab runs only'),
    (['images', 'export', 'x.tar', 'r'], 'ctr: the lab runs only'),
    ([], 'ctr: the lab runs only'),
    (['images', 'pull'], 'ctr: pull: missing argument'),
    (['images', 'ls', 'extra'], 'ctr: ls: unexpected arguments extra'),
])
def test_refused(args, message):
    with pytest.raises(CommandError) as info:
        ctr.parse(args)
    assert info.value.code == 1
    assert info.value.message.startswith(message)
    assert 'secret' not in info.value.message


@pytest.fixture
def host():
    if os.geteuid() != 0 or not os.path.exists('/usr/bin/containerd'):
        pytest.skip('needs root and Debian\'s containerd')
    # Short: the simulated host's /run holds the containerd socket.
    base = tempfile.mkdtemp(prefix='kct-', dir='/var/tmp')
    h = testing.make_host(base, os.path.join(base, 'cluster'), 'h0',
                          testing.random_loopback_base() + '7', 'worker')
    yield h
    testing.cleanup([h])
    shutil.rmtree(base, ignore_errors=True)


def test_on_a_simulated_host(host, tmp_path):
    assert host.run('ctr', 'images', 'ls').returncode == 127  # no package
    host.run('apt-get', 'install', '-y', 'containerd', check=True)
    host.run('systemctl', 'stop', 'containerd', check=True)
    stopped = host.run('ctr', 'images', 'ls')
    assert stopped.returncode == 1
    assert 'failed to dial "/run/containerd/containerd.sock"' in \
        stopped.stderr
    host.run('systemctl', 'start', 'containerd', check=True)
    layout = oci_images.build(str(tmp_path / 'layout'), 'lab/true', '1.0')
    path = str(tmp_path / 'true.tar')
    digest = oci_images.archive(layout, path, 'site.lab/lab/true:1.0')
    done = host.run('ctr', '-n', 'k8s.io', 'images', 'import', path,
                    check=True)
    assert 'site.lab/lab/true:1.0' in done.stdout
    listed = host.run('ctr', '-n', 'k8s.io', 'images', 'ls', '-q',
                      check=True)
    assert listed.stdout.split() == ['site.lab/lab/true:1.0']
    assert host.run('ctr', 'images', 'ls', '-q',
                    check=True).stdout == ''      # the default namespace
    assert os.path.isdir(host.path('/var/lib/klab-containerd/root'))
    assert digest == layout.manifest_digest

"""Pure parsing pieces of the emulated Kubernetes commands."""
from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from kubernetes_mgmt_lab.emulated import install_commands, wrapper_script
from kubernetes_mgmt_lab.emulated.faults import matches
from kubernetes_mgmt_lab.emulated.flags import Flag, FlagError, parse
from kubernetes_mgmt_lab.emulated.tokens import parse_duration

SPEC = [Flag('output', short='o'), Flag('all', value=False, short='A'),
        Flag('file', short='f', multi=True)]


def test_pflag_forms():
    got = parse(SPEC, ['get', '-ojson', 'nodes', '-A', '--file=a',
                       '-f', 'b', '--', '-x'])
    assert got.values == {'output': 'json', 'all': True,
                          'file': ['a', 'b']}
    assert got.args == ['get', 'nodes', '-x']
    assert parse(SPEC, ['-o=name']).get('output') == 'name'
    assert parse(SPEC, ['--all=false']).get('all') is False


@pytest.mark.parametrize('argv,message', [
    (['--nope'], 'unknown flag: --nope'),
    (['-z'], "unknown shorthand flag: 'z' in -z"),
    (['--output'], 'flag needs an argument: --output'),
])
def test_pflag_errors(argv, message):
    with pytest.raises(FlagError, match=message):
        parse(SPEC, argv)


def test_durations():
    assert parse_duration('24h0m0s') == 86400
    assert parse_duration('1m30s') == 90
    with pytest.raises(ValueError):
        parse_duration('soon')


def test_fault_patterns_skip_global_flags():
    argv = ['kubectl', '--kubeconfig', 'x', 'drain', 'n1']
    assert matches('kubectl drain', argv)
    assert not matches('kubectl delete', argv)
    assert matches('kubeadm join', ['kubeadm', 'join', 'e:6443'])


def test_wrappers_quote_and_run(tmp_path):
    odd = tmp_path / "py dir's"
    odd.mkdir()
    python = odd / 'python3'
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    install_commands(str(tmp_path / 'bin'), str(python))
    wrapper = tmp_path / 'bin' / 'apt-get'
    assert wrapper.stat().st_mode & stat.S_IXUSR
    assert "'\"'\"'" in wrapper_script('apt-get', str(python))
    host_file = tmp_path / 'host.json'
    host_file.write_text('{"name": "h", "ip": "127.0.0.1", '
                         f'"cluster_dir": "{tmp_path / "c"}"}}')
    env = dict(os.environ, KLAB_HOST_FILE=str(host_file),
               KLAB_HOST_ROOT=str(tmp_path / 'root'))
    proc = subprocess.run([str(wrapper), 'install', '-y', 'haproxy-x'],
                          env=env, capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert 'Setting up haproxy-x' in proc.stdout
    with pytest.raises(ValueError):
        install_commands(str(tmp_path / 'bin'), 'python3')

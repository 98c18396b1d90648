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
from kubernetes_mgmt_lab.emulated.jsonpath import evaluate
from kubernetes_mgmt_lab.emulated.selectors import match_labels
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


DATA = {'items': [
    {'metadata': {'name': 'a', 'labels': {'kubernetes.io/hostname': 'h'}},
     'status': {'conditions': [{'type': 'Ready', 'status': 'True'}]}},
    {'metadata': {'name': 'b', 'labels': {}},
     'status': {'conditions': [{'type': 'Ready', 'status': 'False'}]}}]}


@pytest.mark.parametrize('template,expected', [
    ('{.items[*].metadata.name}', 'a b'),
    ('{range .items[*]}{.metadata.name}{"\\t"}{.status.conditions[?(@.type'
     '=="Ready")].status}{"\\n"}{end}', 'a\tTrue\nb\tFalse\n'),
    ('{.items[0].metadata.labels.kubernetes\\.io/hostname}', 'h'),
    ("{.items[0].metadata.labels['kubernetes.io/hostname']}", 'h'),
    ('{.items[-1].metadata.name}', 'b'),
    ('{.missing}', ''),
])
def test_jsonpath(template, expected):
    assert evaluate(template, DATA) == expected


def test_label_selectors():
    obj = {'metadata': {'labels': {'a': '1', 'role': 'x'}}}
    assert match_labels('a=1,role', obj)
    assert match_labels('a in (1,2),!b', obj)
    assert not match_labels('a!=1', obj)
    assert not match_labels('role notin (x)', obj)


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

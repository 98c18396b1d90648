"""What a newcomer meets first: the commands' help texts, the demo's
tables and summaries, the install metadata."""
from __future__ import annotations

import configparser
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kubernetes_mgmt.cli import main
from kubernetes_mgmt.engine.progress import PhaseTiming, Progress
from kubernetes_mgmt_lab.cli.demo import node_table
from kubernetes_mgmt_lab.state import LabHost

REPO = Path(__file__).resolve().parents[2]


def help_text(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as stop:
        main([*argv, '--help'])
    assert stop.value.code == 0
    # argparse wraps at the terminal width; compare words, not lines.
    return ' '.join(capsys.readouterr().out.split())


def test_demo_help_explains_each_flavour_and_the_default(capsys):
    text = help_text(capsys, 'demo')
    assert '{simple,ha,both}' in text
    for words in ('simple: 1 master + 2 workers',
                  'ha: 3 masters behind a VIP + 2 workers',
                  'both: simple, then ha (default: both)',
                  'Needs root'):
        assert words in text


def test_lab_up_help_gives_the_defaults(capsys):
    text = help_text(capsys, 'lab', 'up')
    assert '--masters N master VMs' in text and '(default: 1)' in text
    assert '--workers N worker VMs (default: 2)' in text
    assert ('--install-delay SECONDS how long each emulated package '
            'installation takes on a VM (default: 0: at once)') in text


def test_lab_exec_help_names_its_arguments(capsys):
    text = help_text(capsys, 'lab', 'exec')
    assert ('usage: kubernetes-mgmt lab exec [--root LAB_ROOT | --services '
            'ROOT] HOST -- COMMAND') in text
    assert 'HOST a host name as "lab status" lists it' in text
    assert ('or master-N / worker-N: the N-th control-plane / worker node '
            'of a cluster Tacker built') in text
    assert ('--services ROOT the labs of the services at ROOT ("lab tacker '
            'up --root ROOT")') in text
    assert 'COMMAND the command and its arguments, after "--"' in text
    assert 'kubernetes-mgmt lab exec master-0 -- kubectl get nodes' in text


def test_validate_request_help_names_every_kind(capsys):
    text = help_text(capsys, 'validate-request')
    assert '--kind {instantiate,scale,heal,terminate}' in text
    assert 'REPLACE_WITH_... placeholder are reported' in text


@pytest.mark.parametrize('script, options', [
    ('instantiate_bench.py', ('--install-delay SECONDS emulated package '
                              'installation time per node (default: 60)',
                              '--workers W [W ...] worker counts',
                              '--repeat N rounds of all the worker counts',
                              '--quiet only the run lines')),
    ('scale_bench.py', ('--install-delay SECONDS emulated package '
                        'installation time per new node (default: 60)',
                        '--workers N [N ...] workers to add',
                        '--quiet only the run lines')),
])
def test_benchmark_help_describes_every_option(script, options):
    proc = subprocess.run([sys.executable, str(REPO / 'bench' / script),
                           '--help'], capture_output=True, text=True,
                          timeout=60, check=True)
    text = ' '.join(proc.stdout.split())
    for words in options:
        assert words in text
    assert 'progress goes to stderr' in text


# -- the demo's node table and the operations' summaries --------------------

def _host(name: str, role: str, ip: str, server: str) -> LabHost:
    return LabHost(name=name, role=role, ip=ip, netns=f'ns-{name}',
                   root=f'/nowhere/{name}', server_id=server)


def _node(name: str, ip: str, ready: str, *roles: str) -> dict:
    return {'metadata': {'name': name, 'labels': {
                **{f'node-role.kubernetes.io/{r}': '' for r in roles},
                'kubernetes.io/hostname': name}},
            'status': {'addresses': [{'type': 'Hostname', 'address': name},
                                     {'type': 'InternalIP', 'address': ip}],
                       'conditions': [{'type': 'Ready', 'status': ready}]}}


def test_demo_node_table_puts_each_node_next_to_its_vm():
    hosts = [_host('master-0', 'master', '10.1.0.11', 'aaaaaaaa-1111'),
             _host('worker-0', 'worker', '10.1.0.21', 'bbbbbbbb-2222'),
             _host('worker-1', 'worker', '10.1.0.22', 'cccccccc-3333')]
    nodes = [_node('vnf-worker-x1', '10.1.0.21', 'True'),
             _node('vnf-master-m0', '10.1.0.11', 'True', 'control-plane'),
             _node('gone-node', '10.1.0.99', 'False')]
    rows = [line.split() for line in node_table(hosts, nodes).splitlines()]
    assert rows == [
        ['VM', 'SERVER', 'IP', 'NODE', 'STATUS', 'ROLES'],
        ['master-0', 'aaaaaaaa', '10.1.0.11', 'vnf-master-m0', 'Ready',
         'control-plane'],
        ['worker-0', 'bbbbbbbb', '10.1.0.21', 'vnf-worker-x1', 'Ready',
         '<none>'],
        ['worker-1', 'cccccccc', '10.1.0.22', '-', '(no', 'node)', '-'],
        ['-', '-', '10.1.0.99', 'gone-node', 'NotReady', '<none>'],
    ]


def test_summary_parts_add_up_to_the_total():
    progress = Progress('heal', 'vnf-1')
    progress.started = time.monotonic() - 10.3
    progress.phases = [PhaseTiming('prepare nodes', 3.0, 2.5),
                       PhaseTiming('join master', 1.0, 0.9)]
    line = progress.summary()
    assert line.startswith('heal vnf-1 finished in 10.3 s (prepare nodes '
                           '3.0 s, join master 1.0 s, outside phases 6.3 s)')


def test_summary_without_time_outside_phases_lists_only_phases():
    progress = Progress('scale', 'vnf-2')
    progress.phases = [PhaseTiming('join workers', 0.0, 0.0)]
    assert progress.summary().endswith('(join workers 0.0 s)')


# -- installing ---------------------------------------------------------------

def test_no_license_classifier_setuptools_would_warn_about():
    # setuptools >= 77 warns "License classifiers are deprecated" on every
    # build while a "License ::" classifier is there; the SPDX
    # expression in "license" says the same.
    config = configparser.ConfigParser()
    config.read(REPO / 'setup.cfg', encoding='utf-8')
    assert config['metadata']['license'] == 'Apache-2.0'
    assert 'License ::' not in config['metadata']['classifier']


def _fake_tools(tmp_path: Path, fail: str = '') -> dict[str, str]:
    """apt-get, python3 -m venv and pip stand-ins that chatter (and the
    one named ``fail`` fails), for running tools/*.sh without a
    network."""
    fake = tmp_path / 'fake'
    fake.mkdir()
    tool = ('#!/bin/sh\necho "$(basename "$0") chatter line"\n'
            '[ "$(basename "$0")" != "$FAIL" ] || { echo "$0: broken" >&2; '
            'exit 3; }\n')
    # "python3 -m venv --clear DIR": a venv whose pip and kubernetes-mgmt
    # are stand-ins too.
    venv_maker = (tool + 'mkdir -p "$4/bin"\n'
                  f'cp {fake}/pip {fake}/kubernetes-mgmt "$4/bin/"\n')
    for name, text in (('apt-get', tool), ('pip', tool),
                       ('python3', venv_maker),
                       ('kubernetes-mgmt', tool + 'echo "ran: $*"\n')):
        (fake / name).write_text(text)
        (fake / name).chmod(0o755)
    return {'PATH': f'{fake}:/usr/bin:/bin', 'FAIL': fail,
            'KMGMT_PYTHON': str(fake / 'python3')}


def _tools_copy(tmp_path: Path) -> Path:
    tools = tmp_path / 'repo' / 'tools'
    tools.mkdir(parents=True)
    for name in ('bootstrap.sh', 'demo.sh'):
        (tools / name).write_text((REPO / 'tools' / name).read_text())
        (tools / name).chmod(0o755)
    return tools


@pytest.mark.skipif(os.geteuid() != 0,
                    reason='tools/bootstrap.sh refuses to run without root')
def test_demo_sh_hides_install_chatter_and_links_the_command(tmp_path):
    tools = _tools_copy(tmp_path)
    env = {**_fake_tools(tmp_path), 'KMGMT_BIN_DIR': str(tmp_path),
           'KMGMT_VENV': str(tmp_path / 'venv')}
    proc = subprocess.run(['bash', str(tools / 'demo.sh'), '--flavour',
                           'ha'], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert 'chatter' not in proc.stderr
    # The services get the plugin of this clone, wherever demo.sh is run.
    assert proc.stdout.splitlines()[-1] == \
        f'ran: demo --plugin {tools.parent} --flavour ha'
    link = tmp_path / 'kubernetes-mgmt'
    assert link.is_symlink()
    assert link.resolve() == tmp_path / 'venv' / 'bin' / 'kubernetes-mgmt'


@pytest.mark.skipif(os.geteuid() != 0,
                    reason='tools/bootstrap.sh refuses to run without root')
def test_bootstrap_shows_the_install_output_when_a_step_fails(tmp_path):
    tools = _tools_copy(tmp_path)
    proc = subprocess.run(['bash', str(tools / 'bootstrap.sh'),
                           str(tmp_path / 'venv')],
                          env=_fake_tools(tmp_path, fail='pip'),
                          capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 1
    assert proc.stdout == ''
    assert 'ERROR: failed: ' in proc.stderr
    assert 'pip chatter line' in proc.stderr
    assert '/pip: broken' in proc.stderr

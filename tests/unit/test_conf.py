import subprocess
import sys
from pathlib import Path

from oslo_config import cfg

from kubernetes_mgmt import conf

REPO = Path(__file__).resolve().parents[2]


def test_options_live_in_their_own_group():
    names = {opt.name for group, opts in conf.list_opts() for opt in opts}
    assert {'ssh_connect_deadline', 'command_timeout', 'max_parallel_hosts',
            'host_key_checking', 'heat_client', 'vim_registry',
            'vnf_package_source'} <= names
    assert cfg.CONF.kubernetes_mgmt.host_key_checking is True
    groups = dict(conf.list_opts())
    assert {o.name for o in groups['kubernetes_cnf']} == {
        'ready_timeout', 'scale_timeout', 'heal_timeout', 'delete_timeout',
        'request_timeout'}


def test_oslo_config_generator_renders_sample(tmp_path):
    out = tmp_path / 'sample.conf'
    generator = Path(sys.executable).with_name('oslo-config-generator')
    subprocess.run(
        [str(generator), '--namespace', 'kubernetes_mgmt',
         '--output-file', str(out)], check=True, cwd=REPO)
    text = out.read_text()
    assert '[kubernetes_mgmt]' in text
    assert '#ssh_connect_deadline = 600' in text
    assert '[kubernetes_cnf]' in text and '#ready_timeout = 600' in text

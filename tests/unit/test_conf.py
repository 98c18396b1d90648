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


def _generated(tmp_path, namespace: str) -> str:
    out = tmp_path / f'{namespace}.conf'
    generator = Path(sys.executable).with_name('oslo-config-generator')
    subprocess.run(
        [str(generator), '--namespace', namespace,
         '--output-file', str(out)], check=True, cwd=tmp_path)
    return out.read_text()


def test_the_products_options_hold_none_of_the_labs(tmp_path):
    """The lab's options (its seams' settings) render under its own
    namespace, never under the product's."""
    from kubernetes_mgmt_lab import conf as lab_conf

    lab_names = {opt.name for opt in lab_conf.lab_opts}
    lab_text = _generated(tmp_path, 'kubernetes_mgmt_lab')
    assert all(f'#{name} = ' in lab_text for name in lab_names)
    product = _generated(tmp_path, 'kubernetes_mgmt')
    rendered = {line[1:].split(' = ')[0] for line in product.splitlines()
                if line.startswith('#') and ' = ' in line}
    assert rendered & lab_names == set()
    assert '[kubernetes_mgmt_lab]' not in product
    for seam in ('heat_client', 'vim_registry', 'vnf_package_source'):
        assert f'#{seam} = tacker' in product

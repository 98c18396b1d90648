"""scripts/install_k8s_cluster.sh without a lab: shellcheck, and the
script's own functions (config parsing and validation, CNI and containerd
patching), run by sourcing it. Sourcing defines functions only; no role
runs, so nothing on this machine is touched.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:     # Python 3.10
    import tomli as tomllib

from kubernetes_mgmt.cluster import contract, script
from kubernetes_mgmt_lab.emulated.containerd import (
    DEFAULT_CONFIG,
    DEFAULT_CONFIG_2X,
)

SCRIPT = Path(__file__).resolve().parents[2] / 'scripts' / \
    'install_k8s_cluster.sh'
TOKEN = 'abcdef.0123456789abcdef'
CERT_KEY = '0123456789abcdef' * 4
VOL1 = '5f0c7e3a-1b2d-4c6e-9a8b-0d1e2f3a4b5c'   # Cinder volume ids
VOL2 = '6a1d8f4b-2c3e-4d7f-8b9c-1e2f3a4b5c6d'


def bash(snippet: str, stdin: str = '') -> subprocess.CompletedProcess:
    """Run ``snippet`` after sourcing the script (its options and traps
    apply: the first failure ends it with the script's ERROR line)."""
    return subprocess.run(
        ['bash', '-c', f'source "$1"; {snippet}', 'bash', str(SCRIPT)],
        input=stdin, capture_output=True, text=True, timeout=60,
        check=False)


def test_shellcheck_clean():
    if shutil.which('shellcheck') is None:
        if os.environ.get('KMGMT_REQUIRE_LAB') == '1':
            pytest.fail('shellcheck is not installed (KMGMT_REQUIRE_LAB=1)')
        pytest.skip('shellcheck is not installed')
    proc = subprocess.run(['shellcheck', str(SCRIPT)], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_script_has_no_fixed_sleep_and_no_evaluation():
    text = SCRIPT.read_text(encoding='utf-8')
    code = [line.split('#', 1)[0] for line in text.splitlines()]
    sleeps = [line for line in code if 'sleep' in line.split()]
    # The only sleep is wait_for's backoff between polls.
    assert len(sleeps) == 1 and '$((tenths' in sleeps[0]
    assert not any(w in line.split() for line in code
                   for w in ('eval', 'source', '.'))


def check_config(role: str, config: str) -> subprocess.CompletedProcess:
    return bash(f'ROLE={role} STEP=config; read_config -; validate_config; '
                'for k in "${!CFG[@]}"; do echo "$k"; done | sort', config)


def lines(*pairs: str) -> str:
    return '\n'.join(pairs) + '\n'


BASE = ('NODE_NAME=worker-0', 'NODE_IP=10.0.0.5')


def test_valid_config_with_comments_and_blank_lines():
    proc = check_config('join-worker', lines(
        '# written by the driver', '', *BASE, '  # indented comment',
        'CONTROL_PLANE_ENDPOINT=10.0.0.100:16443',
        f'BOOTSTRAP_TOKEN={TOKEN}', 'CA_CERT_HASH=sha256:' + 'a' * 64,
        'DEADLINE=1800', 'API_CERT_SANS=', ''))
    assert proc.returncode != 0     # API_CERT_SANS belongs to init
    assert 'API_CERT_SANS is not used by role join-worker' in proc.stderr
    proc = check_config('join-worker', lines(
        '# written by the driver', '', *BASE, '  # indented comment',
        'CONTROL_PLANE_ENDPOINT=10.0.0.100:16443',
        f'BOOTSTRAP_TOKEN={TOKEN}', 'CA_CERT_HASH=sha256:' + 'a' * 64,
        'DEADLINE=1800'))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == sorted([
        'BOOTSTRAP_TOKEN', 'CA_CERT_HASH', 'CONTROL_PLANE_ENDPOINT',
        'DEADLINE', 'NODE_IP', 'NODE_NAME'])


FPR = 'DE15B14486CD377B9E876E1A234654DA9A296436'
# A valid configuration of each role, as the driver would send it.
VALID = {
    'prepare': {'K8S_VERSION': '1.37', 'K8S_APT_KEY_FINGERPRINTS': FPR,
                'IMAGE_REPOSITORY': 'mirror.example:5000/k8s'},
    'lb': {'LB_BACKENDS': 'master-0=10.0.0.1,master-1=10.0.0.2',
           'VIP': '10.0.0.100', 'VIP_PREFIX': '24', 'VRRP_ROUTER_ID': '51',
           'VRRP_PRIORITY': '150', 'VRRP_STATE': 'MASTER',
           'VRRP_PASSWORD': 'pw123456', 'VRRP_PEERS': '10.0.0.2'},
    'init': {'K8S_VERSION': '1.37', 'CNI': 'calico',
             'CNI_MANIFEST': '/var/lib/kubernetes-mgmt/cni.yaml',
             'CNI_SHA256': 'ab' * 32,
             'CONTROL_PLANE_ENDPOINT': '10.0.0.1:6443',
             'POD_CIDR': '10.244.0.0/16', 'SERVICE_CIDR': '10.96.0.0/12',
             'BOOTSTRAP_TOKEN': TOKEN},
    'join-master': {'CONTROL_PLANE_ENDPOINT': '10.0.0.100:16443',
                    'BOOTSTRAP_TOKEN': TOKEN,
                    'CA_CERT_HASH': 'sha256:' + 'a' * 64,
                    'CERTIFICATE_KEY': CERT_KEY},
    'join-worker': {'CONTROL_PLANE_ENDPOINT': '10.0.0.100:16443',
                    'BOOTSTRAP_TOKEN': TOKEN,
                    'CA_CERT_HASH': 'sha256:' + 'a' * 64},
    'refresh-join': {'BOOTSTRAP_TOKEN': TOKEN, 'CERTIFICATE_KEY': CERT_KEY,
                     'CNI': 'flannel', 'POD_CIDR': '10.244.0.0/16',
                     'CNI_MANIFEST': '/var/lib/kubernetes-mgmt/cni.yaml',
                     'CNI_SHA256': 'ab' * 32},
    'status': {}, 'reset': {},
    'upgrade': {'K8S_VERSION': '1.37', 'UPGRADE': 'node',
                'K8S_APT_KEY_FINGERPRINTS': FPR},
    'hosts': {'HOSTS': '10.0.0.1=master-0,10.0.0.5=worker-0'},
    'storage': {'VOLUMES': f'{VOL1} 1 /dev/vdb /volume;'
                           f'{VOL2} 20 /dev/vdc /data',
                'EXPORTS': '/volume/nfs/pv1 10.0.0.0/24;/data/x 10.0.0.7;'
                           '/data/x fd00::/64'},
}


def values_of(role: str, changes: dict) -> dict:
    return {'NODE_NAME': 'worker-0', 'NODE_IP': '10.0.0.5',
            **VALID[role], **changes}


def config_of(role: str, changes: dict, extra: tuple = ()) -> str:
    values = values_of(role, changes)
    return lines(*(f'{k}={v}' for k, v in values.items() if v is not None),
                 *extra)


def test_the_script_has_the_roles_of_the_contract():
    assert set(VALID) == set(contract.ROLES)


@pytest.mark.parametrize('role, changes, extra, message', [
    ('prepare', {'NODE_NAME': '$(touch /tmp/x)'}, (),
     'invalid NODE_NAME: expected a lowercase DNS name'),
    ('prepare', {'K8S_VERSION': '1.37`id`'}, (), 'invalid K8S_VERSION'),
    ('prepare', {'HOSTS': '10.0.0.1=a;reboot'}, (), 'invalid HOSTS'),
    ('prepare', {'HTTP_PROXY': 'http://u:p"w@proxy:3128'}, (),
     'invalid HTTP_PROXY'),
    ('prepare', {'K8S_APT_REPO': 'http://x/ $(id)'}, (),
     'invalid K8S_APT_REPO'),
    ('prepare', {}, ('FOO=bar',), 'unknown key FOO'),
    ('prepare', {'CNI': 'calico'}, (), 'CNI is not used by role prepare'),
    ('prepare', {}, ('K8S_VERSION=1.36',), 'K8S_VERSION is given twice'),
    ('prepare', {}, ('export HOSTS=x',), 'is not KEY=VALUE'),
    ('prepare', {'K8S_VERSION': None}, (),
     'K8S_VERSION is required for role prepare'),
    ('prepare', {'NODE_IP': '10.0.0.256'}, (), 'invalid NODE_IP'),
    ('lb', {'LB_PORT': '6443'}, (),
     'invalid LB_PORT: expected a port other than 6443'),
    ('lb', {'VRRP_PASSWORD': 'toolong99'}, (), 'invalid VRRP_PASSWORD'),
    ('lb', {'VRRP_ROUTER_ID': '256'}, (), 'invalid VRRP_ROUTER_ID'),
    ('join-master', {'BOOTSTRAP_TOKEN': 'ABCDEF.0123456789abcdef'}, (),
     'invalid BOOTSTRAP_TOKEN: expected a bootstrap token'),
    ('join-master', {'CERTIFICATE_KEY': 'g' * 64}, (),
     'invalid CERTIFICATE_KEY'),
    ('init', {'CNI_MANIFEST': '/var/lib/../../etc/shadow'}, (),
     'invalid CNI_MANIFEST'),
    ('init', {'CNI': 'weave'}, (), 'invalid CNI'),
    ('init', {'CNI_SHA256': None}, (), 'CNI_SHA256 is required for role init'),
    ('init', {'CNI_SHA256': 'AB' * 32}, (),
     'invalid CNI_SHA256: expected 64 lowercase hex digits'),
    ('init', {'CNI_SHA256': 'ab' * 31 + '$(id)'}, (), 'invalid CNI_SHA256'),
    ('prepare', {'IMAGE_REPOSITORY': 'mirror/$(reboot)'}, (),
     'invalid IMAGE_REPOSITORY'),
    ('hosts', {'HOSTS': None}, (), 'HOSTS is required for role hosts'),
    ('hosts', {'HOSTS': '10.0.0.1=a $(reboot)'}, (), 'invalid HOSTS'),
    ('hosts', {'K8S_VERSION': '1.37'}, (),
     'K8S_VERSION is not used by role hosts'),
    ('prepare', {'NFS_CLIENT': 'yes'}, (), 'invalid NFS_CLIENT'),
    ('storage',
     {'VOLUMES': f'{VOL1} 1 /dev/vdb /volume;{VOL2} 1 /dev/../etc /x'}, (),
     'invalid VOLUMES: expected "VOLUME-ID GIB /dev/DEVICE '
     '/MOUNT/POINT;..."'),
    ('storage', {'VOLUMES': f'{VOL1} 1 /dev/vdb /vol/../etc'}, (),
     'invalid VOLUMES'),
    ('storage', {'VOLUMES': f'{VOL1} 1 /dev/vdb volume'}, (),
     'invalid VOLUMES'),
    ('storage', {'VOLUMES': f'{VOL1} 1 /dev/vdb /volume;'}, (),
     'invalid VOLUMES'),
    ('storage', {'VOLUMES': '/dev/vdb /volume'}, (), 'invalid VOLUMES'),
    ('storage', {'VOLUMES': f'{VOL1} 0 /dev/vdb /volume'}, (),
     'invalid VOLUMES'),
    ('storage', {'VOLUMES': f'{VOL1} 1G /dev/vdb /volume'}, (),
     'invalid VOLUMES'),
    ('storage', {'VOLUMES': '$(reboot)x 1 /dev/vdb /volume'}, (),
     'invalid VOLUMES'),
    ('storage', {'VOLUMES': f'{VOL1} 1 /dev/vdb /volume extra'}, (),
     'invalid VOLUMES'),
    ('storage', {'VOLUMES': f'{VOL1}  1 /dev/vdb /volume'}, (),
     'invalid VOLUMES'),
    ('storage', {'EXPORTS': '/volume 10.0.0.0/24 extra'}, (),
     'invalid EXPORTS'),
    ('storage', {'EXPORTS': '/volume *(rw,insecure)'}, (), 'invalid EXPORTS'),
    ('storage', {'EXPORTS': '/volume 10.0.0.0/33'}, (), 'invalid EXPORTS'),
    ('storage', {'EXPORTS': None}, (),
     'EXPORTS is required for role storage'),
    ('storage', {'K8S_VERSION': '1.37'}, (),
     'K8S_VERSION is not used by role storage'),
])
def test_bad_config_is_refused_without_echoing_it(role, changes, extra,
                                                  message):
    proc = check_config(role, config_of(role, changes, extra))
    assert proc.returncode == 1
    assert proc.stdout == ''
    errors = proc.stderr.strip().splitlines()
    assert len(errors) == 1
    assert errors[0].startswith(f'ERROR [{role}/config]: ')
    assert message in errors[0]
    for bad in ('$(', '`', 'toolong99', 'ABCDEF', '"w@', '../', 'weave',
                'insecure', 'extra'):
        assert bad not in proc.stderr
    if not extra:
        # The driver refuses the same configuration, with the same words,
        # before sending it.
        found = contract.problems(role, values_of(role, changes))
        assert any(message in problem for problem in found), found


@pytest.mark.parametrize('role', sorted(VALID))
def test_valid_config_of_each_role(role):
    proc = check_config(role, config_of(role, {}))
    assert proc.returncode == 0, proc.stderr
    assert contract.problems(role, values_of(role, {})) == []


def test_unknown_role_and_usage():
    proc = subprocess.run(['bash', str(SCRIPT), 'reboot-everything', '-'],
                          input='', capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith('ERROR [install/arguments]: unknown role')
    assert 'reboot-everything' not in proc.stderr
    proc = subprocess.run(['bash', str(SCRIPT)], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 1 and 'usage:' in proc.stderr


def test_secrets_are_masked_in_command_output():
    proc = bash(
        'ROLE=init; read_config -; validate_config; '
        'printf "token %s key %s\\n" "${CFG[BOOTSTRAP_TOKEN]}" '
        '"${CFG[CERTIFICATE_KEY]}" | redact_stream',
        lines(*BASE, 'K8S_VERSION=1.37', 'CNI=calico',
              'CNI_MANIFEST=/var/lib/kubernetes-mgmt/cni.yaml',
              'CNI_SHA256=' + 'ab' * 32,
              'CONTROL_PLANE_ENDPOINT=10.0.0.1:6443',
              'POD_CIDR=10.244.0.0/16', 'SERVICE_CIDR=10.96.0.0/12',
              f'BOOTSTRAP_TOKEN={TOKEN}', f'CERTIFICATE_KEY={CERT_KEY}'))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == 'token *** key ***\n'


def test_failed_command_names_role_and_step_once():
    proc = bash('ROLE=init; step "kubeadm join"; false; echo unreachable')
    assert proc.returncode == 1
    assert proc.stdout == ''
    assert proc.stderr.splitlines() == [
        '[init] kubeadm join',
        'ERROR [init/kubeadm join]: command failed (exit 1): false']
    proc = bash('ROLE=init; step "x"; v=$(exit 3)')
    assert proc.returncode == 3
    assert proc.stderr.splitlines()[1:] == [
        'ERROR [init/x]: command failed (exit 3): v=$(exit 3)']


def test_wait_for_gives_up_at_the_deadline():
    proc = bash('ROLE=join-worker; DEADLINE=1; step "kubelet active"; '
                'wait_for "the kubelet" false')
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        'ERROR [join-worker/kubelet active]: timed out after 1s waiting for '
        'the kubelet')


def test_put_file_writes_only_changes(tmp_path):
    target = tmp_path / 'sub' / 'file.conf'
    snippet = (f'put_file {target} 0640 <<<"a"; echo "changed=$CHANGED"; '
               f'put_file {target} 0640 <<<"a"; echo "changed=$CHANGED"; '
               f'put_file {target} 0600 <<<"b"; echo "changed=$CHANGED"')
    proc = bash(snippet)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ['changed=1', 'changed=0', 'changed=1']
    assert target.read_text() == 'b\n'
    assert oct(target.stat().st_mode & 0o777) == '0o600'
    assert os.listdir(target.parent) == ['file.conf']
    proc = bash(f'ROLE=lb STEP=haproxy; put_file {target} 0600 false <<<"c"')
    assert proc.returncode == 1
    assert f'ERROR [lb/haproxy]: rendered {target} rejected by false' in \
        proc.stderr
    assert target.read_text() == 'b\n'
    assert os.listdir(target.parent) == ['file.conf']


def test_put_file_keeps_the_text_exactly_and_sets_any_mode(tmp_path):
    target = tmp_path / 'check.sh'
    text = '#!/bin/sh\n  spaced \\ back\\slash\n\n\n'
    proc = bash(f'put_file {target} 0755; echo "changed=$CHANGED"', text)
    assert proc.stdout == 'changed=1\n', proc.stderr
    assert target.read_text() == text
    assert oct(target.stat().st_mode & 0o777) == '0o755'
    target.chmod(0o644)
    proc = bash(f'put_file {target} 0755; echo "changed=$CHANGED"', text)
    assert proc.stdout == 'changed=0\n', proc.stderr
    assert oct(target.stat().st_mode & 0o777) == '0o755'


def test_put_file_refuses_a_relative_path_even_to_an_existing_file(
        tmp_path):
    (tmp_path / 'file.conf').write_text('a\n')
    for helper in ('put_file', 'put_binary_file'):
        proc = subprocess.run(
            ['bash', '-c', f'source "$1"; ROLE=lb STEP=files; '
             f'{helper} file.conf 0644 <<<"a"', 'bash', str(SCRIPT)],
            cwd=tmp_path, capture_output=True, text=True, timeout=60,
            check=False)
        assert proc.returncode == 1
        assert 'ERROR [lb/files]: put_file needs an absolute path: ' \
            'file.conf' in proc.stderr


def test_binary_content_goes_through_put_binary_file(tmp_path):
    target = tmp_path / 'keyring.gpg'
    data = b'\x99\x00\x01binary\n\x00'
    source = tmp_path / 'source'
    source.write_bytes(data)
    proc = bash(f'ROLE=prepare STEP=keyring; put_file {target} 0644 '
                f'<{source}')
    assert proc.returncode == 1
    assert 'binary content (use put_binary_file)' in proc.stderr
    assert not target.exists()
    for changed in ('1', '0'):
        proc = bash(f'put_binary_file {target} 0644 <{source}; '
                    'echo "changed=$CHANGED"')
        assert proc.stdout == f'changed={changed}\n', proc.stderr
        assert target.read_bytes() == data
    assert sorted(os.listdir(tmp_path)) == ['keyring.gpg', 'source']


UPSTREAM_CALICO = """\
            - name: CALICO_DISABLE_FILE_LOGGING
              value: "true"
            # The default IPv4 pool to create on startup if none exists.
            # Pod IPs will be chosen from this range.
            # - name: CALICO_IPV4POOL_CIDR
            #   value: "192.168.0.0/16"
            - name: CALICO_IPV4POOL_IPIP
              value: "Always"
"""
UPSTREAM_FLANNEL = """\
  net-conf.json: |
    {
      "Network": "10.244.0.0/16",
      "EnableNFTables": false,
      "Backend": {
        "Type": "vxlan"
      }
    }
"""


def patch_cni(tmp_path, cni: str,
              manifest: str) -> subprocess.CompletedProcess:
    src = tmp_path / 'cni.yaml'
    src.write_text(manifest)
    return bash(f'ROLE=init; CFG[CNI]={cni}; CFG[POD_CIDR]=172.16.0.0/12; '
                f'patch_cni {src}')


def test_calico_pool_cidr_is_uncommented_and_set(tmp_path):
    proc = patch_cni(tmp_path, 'calico', UPSTREAM_CALICO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == UPSTREAM_CALICO.replace(
        '            # - name: CALICO_IPV4POOL_CIDR\n'
        '            #   value: "192.168.0.0/16"\n',
        '            - name: CALICO_IPV4POOL_CIDR\n'
        '              value: "172.16.0.0/12"\n')
    again = patch_cni(tmp_path, 'calico', proc.stdout)
    assert again.stdout == proc.stdout


def test_flannel_network_is_the_pod_cidr(tmp_path):
    proc = patch_cni(tmp_path, 'flannel', UPSTREAM_FLANNEL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == UPSTREAM_FLANNEL.replace('10.244.0.0/16',
                                                   '172.16.0.0/12')


def test_other_manifests_are_applied_unchanged(tmp_path):
    manifest = 'kind: DaemonSet\nmetadata: {name: my-cni}\n'
    proc = patch_cni(tmp_path, 'calico', manifest)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == manifest
    assert 'applied unchanged' in proc.stderr


SANDBOX = 'mirror.example:5000/k8s/pause:3.10.2'
GOLDEN = Path(__file__).resolve().parents[1] / 'data' / 'golden' / \
    'install_k8s_cluster'


def patch_containerd(tmp_path, text: str,
                     sandbox: str = SANDBOX) -> tuple[int, str, str]:
    path = tmp_path / 'config.toml'
    path.write_text(text)
    proc = bash(f'ROLE=prepare; patch_containerd_config {path} {sandbox}')
    new = tmp_path / 'config.toml.new'
    return proc.returncode, new.read_text() if new.exists() else '', \
        proc.stderr


def matches_golden(name: str, text: str) -> bool:
    golden = GOLDEN / name
    if os.environ.get('UPDATE_GOLDEN') == '1':
        golden.write_text(text, encoding='utf-8')
    return text == golden.read_text(encoding='utf-8')


def test_containerd_1x_config_gets_systemd_cgroup_certs_d_and_sandbox(
        tmp_path):
    rc, text, err = patch_containerd(tmp_path, DEFAULT_CONFIG)
    assert rc == 0, err
    assert text == DEFAULT_CONFIG.replace(
        'SystemdCgroup = false', 'SystemdCgroup = true').replace(
        'config_path = ""', 'config_path = "/etc/containerd/certs.d"'
    ).replace('sandbox_image = "registry.k8s.io/pause:3.8"',
              f'sandbox_image = "{SANDBOX}"')
    assert matches_golden('containerd-config-1x.toml', text)
    rc, again, err = patch_containerd(tmp_path, text)
    assert again == text


def test_containerd_2x_config_gets_systemd_cgroup_certs_d_and_sandbox(
        tmp_path):
    rc, text, err = patch_containerd(tmp_path, DEFAULT_CONFIG_2X)
    assert rc == 0, err
    assert text == DEFAULT_CONFIG_2X.replace(
        "config_path = ''", 'config_path = "/etc/containerd/certs.d"'
    ).replace("runc.options]\n",
              'runc.options]\n            SystemdCgroup = true\n'
              ).replace("sandbox = 'registry.k8s.io/pause:3.10'",
                        f"sandbox = '{SANDBOX}'")
    assert matches_golden('containerd-config-2x.toml', text)
    rc, again, err = patch_containerd(tmp_path, text)
    assert again == text


@pytest.mark.parametrize('text, added', [
    # 1.x: the CRI plugin's table only implied by its sub-tables.
    ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes'
     '.runc.options]\n  SystemdCgroup = false\n',
     f'\n[plugins.\'io.containerd.grpc.v1.cri\']\n'
     f'  sandbox_image = "{SANDBOX}"\n'),
    # 2.x without pinned_images.
    ("version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd."
     "runtimes.runc.options]\n  SystemdCgroup = true\n",
     f"\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n"
     f"  sandbox = '{SANDBOX}'\n"),
])
def test_sandbox_table_is_added_when_missing(tmp_path, text, added):
    rc, patched, err = patch_containerd(tmp_path, text)
    assert rc == 0, err
    assert patched == text.replace('= false', '= true') + added
    assert tomllib.loads(patched)      # still TOML: no table defined twice
    rc, again, err = patch_containerd(tmp_path, patched)
    assert again == patched


def test_sandbox_key_is_added_below_an_existing_table_header(tmp_path):
    text = DEFAULT_CONFIG.replace(
        '    sandbox_image = "registry.k8s.io/pause:3.8"\n', '')
    rc, patched, err = patch_containerd(tmp_path, text)
    assert rc == 0, err
    assert '  [plugins."io.containerd.grpc.v1.cri"]\n' \
        f'    sandbox_image = "{SANDBOX}"\n' in patched
    parsed = tomllib.loads(patched)
    assert parsed['plugins']['io.containerd.grpc.v1.cri'][
        'sandbox_image'] == SANDBOX


def test_systemd_cgroup_is_set_in_the_runc_options_only(tmp_path):
    text = DEFAULT_CONFIG.replace(
        '      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]\n',
        '      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]\n'
        '        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata'
        '.options]\n          SystemdCgroup = false\n').replace(
        '            SystemdCgroup = false\n', '')
    rc, patched, err = patch_containerd(tmp_path, text)
    assert rc == 0, err
    cri = tomllib.loads(patched)['plugins']['io.containerd.grpc.v1.cri']
    runtimes = cri['containerd']['runtimes']
    assert runtimes['runc']['options'] == {'SystemdCgroup': True}
    assert runtimes['kata']['options'] == {'SystemdCgroup': False}


def test_containerd_config_of_an_unknown_layout_is_an_error(tmp_path):
    rc, _, err = patch_containerd(tmp_path, '[plugins.cri]\nx = 1\n')
    assert rc == 1
    assert "config version '': 2 (containerd 1.x) or 3 (2.x)" in err


def test_containerd_config_without_runc_options_is_an_error(tmp_path):
    rc, _, err = patch_containerd(tmp_path, 'version = 2\n')
    assert rc == 1
    assert 'ERROR [prepare/' in err and 'runc options' in err


# -- contract and CNI checksum ------------------------------------------

def test_script_prints_the_contract_the_driver_speaks():
    proc = subprocess.run(['bash', str(SCRIPT), '--contract-version'],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f'{script.CONTRACT_VERSION}\n'
    assert script.declared_contract(SCRIPT.read_text()) == \
        script.CONTRACT_VERSION


def test_cni_manifest_with_another_hash_is_not_applied(tmp_path):
    manifest = tmp_path / 'cni.yaml'
    manifest.write_text(UPSTREAM_CALICO)
    good = hashlib.sha256(UPSTREAM_CALICO.encode()).hexdigest()
    wrong = hashlib.sha256(b'the reviewed manifest').hexdigest()
    # kubectl here records that it ran; the check must stop before it.
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    (bin_dir / 'kubectl').write_text(
        f'#!/bin/sh\necho "$@" >> {tmp_path}/kubectl.log\n')
    (bin_dir / 'kubectl').chmod(0o755)
    (tmp_path / 'work').mkdir()
    proc = bash(f'PATH={bin_dir}:$PATH; ROLE=init; WORK={tmp_path}/work; '
                'CFG[CNI]=calico; '
                f'CFG[POD_CIDR]=10.244.0.0/16; CFG[CNI_MANIFEST]={manifest}; '
                f'CFG[CNI_SHA256]={wrong}; apply_cni')
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        f'ERROR [init/pod network]: the CNI manifest {manifest} has SHA-256 '
        f'{good}, expected {wrong} (CNI_SHA256): not applied')
    assert not (tmp_path / 'kubectl.log').exists()


FSTAB = """\
# /etc/fstab: static file system information.
UUID=1234 / ext4 defaults 0 1
/swap.img\tnone\tswap\tsw\t0\t0
#/old.swap none swap sw 0 0
/dev/vdb /srv/swapfiles ext4 defaults 0 2
"""


def test_only_swap_entries_are_commented(tmp_path):
    fstab = tmp_path / 'fstab'
    fstab.write_text(FSTAB)
    proc = bash(f'swap_commented {fstab}')
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == FSTAB.replace('/swap.img', '#/swap.img')
    fstab.write_text(proc.stdout)
    assert bash(f'swap_commented {fstab}').stdout == proc.stdout


HOSTS = """\
127.0.0.1 localhost
10.0.0.15 other-host
10.0.0.1 master-0
"""
BLOCK = ('# BEGIN kubernetes-mgmt nodes\n10.0.0.1 master-0\n'
         '10.0.0.2 worker-0\n# END kubernetes-mgmt nodes')


def hosts_block(path, block: str) -> str:
    proc = bash(f'with_hosts_block {path} "$(cat)"', block)
    assert proc.returncode == 0, proc.stderr
    path.write_text(proc.stdout)
    return proc.stdout


def test_hosts_block_is_replaced_in_place_never_appended_twice(tmp_path):
    hosts = tmp_path / 'hosts'
    hosts.write_text(HOSTS)
    first = hosts_block(hosts, BLOCK)
    assert first == HOSTS + BLOCK + '\n'
    assert hosts_block(hosts, BLOCK) == first
    # Lines added after our block stay where they are.
    hosts.write_text(first + '192.168.1.1 added-later\n')
    changed = BLOCK.replace('10.0.0.2', '10.0.0.3')
    assert hosts_block(hosts, changed) == \
        HOSTS + changed + '\n192.168.1.1 added-later\n'
    assert hosts_block(hosts, '') == HOSTS + '192.168.1.1 added-later\n'


def test_broken_hosts_block_is_not_guessed_at(tmp_path):
    hosts = tmp_path / 'hosts'
    hosts.write_text(HOSTS + '# BEGIN kubernetes-mgmt nodes\n10.0.0.9 x\n')
    proc = bash(f'ROLE=prepare STEP=/etc/hosts; with_hosts_block {hosts} x')
    assert proc.returncode == 1
    assert 'broken kubernetes-mgmt block' in proc.stderr


@pytest.mark.parametrize('release, ok', [
    ('ID=ubuntu\nVERSION_ID="22.04"\n', True),
    ('NAME="Ubuntu"\nID=ubuntu\nVERSION_ID="24.04"\n', True),
    ('ID=ubuntu\nVERSION_ID="26.04"\n', True),
    ('ID=ubuntu\nVERSION_ID="20.04"\n', False),
    ('ID=ubuntu\nVERSION_ID="24.10"\n', False),
    ('ID=debian\nVERSION_ID="12"\n', False),
])
def test_supported_operating_systems(tmp_path, release, ok):
    path = tmp_path / 'os-release'
    path.write_text(release)
    proc = bash(f'ROLE=prepare; check_os {path}')
    assert (proc.returncode == 0) == ok, proc.stderr
    if not ok:
        assert proc.stderr.splitlines()[-1] == (
            'ERROR [prepare/operating system]: unsupported OS: Ubuntu '
            '22.04, 24.04 or 26.04 is required')


# -- storage role helpers -------------------------------------------------

def test_fstab_entry_replaces_old_ones_for_the_volume_or_mount(tmp_path):
    fstab = tmp_path / 'fstab'
    fstab.write_text('# /etc/fstab\n'
                     'LABEL=root / ext4 defaults 0 1\n'
                     '/dev/vdb /old ext4 defaults 0 2\n'
                     '# UUID=u1 /volume ext4 defaults 0 2\n'
                     'UUID=zz /volume xfs defaults 0 2\n')
    proc = bash(f'fstab_with {fstab} u1 /dev/vdb /volume ext4')
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        '# /etc/fstab', 'LABEL=root / ext4 defaults 0 1',
        'UUID=u1 /volume ext4 defaults,nofail 0 2',
        '# UUID=u1 /volume ext4 defaults 0 2']
    fstab.write_text(proc.stdout)
    again = bash(f'fstab_with {fstab} u1 /dev/vdb /volume ext4')
    assert again.stdout == proc.stdout


def test_exports_have_one_line_per_directory_clients_in_order():
    proc = bash('declare -A CFG=([EXPORTS]="/v/a 10.0.0.0/24;/v/b 10.0.0.9;'
                '/v/a 10.1.0.0/16;/v/a 10.0.0.0/24"); render_exports')
    assert proc.returncode == 0, proc.stderr
    options = 'rw,sync,no_subtree_check,no_root_squash'
    assert proc.stdout.splitlines()[1:] == [
        f'/v/a 10.0.0.0/24({options}) 10.1.0.0/16({options})',
        f'/v/b 10.0.0.9({options})']
    assert proc.stdout.startswith('# Managed by kubernetes-mgmt')


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which('losetup') is None,
                    reason='needs root and a loop device')
def test_probe_formats_only_blank_devices(tmp_path):
    image = tmp_path / 'disk.img'
    image.write_bytes(b'')
    os.truncate(image, 16 << 20)
    dev = subprocess.run(['losetup', '--find', '--show', str(image)],
                         capture_output=True, text=True,
                         check=True).stdout.strip()
    try:
        blank = bash(f'probe_filesystem {dev}; echo "type=$FS_TYPE"')
        assert blank.returncode == 0, blank.stderr
        assert blank.stdout.strip() == 'type='
        subprocess.run(['mkfs.ext4', '-q', dev], check=True)
        ext4 = bash(f'probe_filesystem {dev}; echo "type=$FS_TYPE"')
        assert ext4.stdout.strip() == 'type=ext4'
        # A partition table without a filesystem may hold data elsewhere.
        subprocess.run(['wipefs', '-q', '-a', dev], check=True)
        with open(dev, 'r+b') as disk:      # an MBR with one partition
            disk.seek(446)
            disk.write(bytes([0, 0, 0, 0, 0x83, 0, 0, 0]) +
                       (2048).to_bytes(4, 'little') +
                       (8192).to_bytes(4, 'little'))
            disk.seek(510)
            disk.write(b'\x55\xaa')
        table = bash(f'probe_filesystem {dev}')
        assert table.returncode == 1
        assert 'not a filesystem: refusing to format or mount it' in \
            table.stderr
    finally:
        subprocess.run(['losetup', '-d', dev], check=False)


# ------------------------------------------------ kubeadm's secret files
# Rendered into a private directory and removed when the role ends (the
# lab tests show that), so pinned here: the lab's VMs no longer keep them.
PLACEHOLDERS = {'BOOTSTRAP_TOKEN': '{TOKEN}',
                'CERTIFICATE_KEY': '{CERTIFICATE_KEY}',
                'CA_CERT_HASH': '{CA_CERT_HASH}',
                'CONTROL_PLANE_ENDPOINT': '{VIP}:16443'}
KUBEADM_CONFIGS = {
    'kubeadm-init.yaml': (
        'init', 'render_init_config {KUBE_VERSION}',
        {'NODE_NAME': 'master-0', 'NODE_IP': '{MASTER0_IP}',
         'POD_CIDR': '10.244.0.0/16', 'SERVICE_CIDR': '10.96.0.0/12',
         'API_CERT_SANS': '{VIP},k8s.example.com'}),
    'kubeadm-join-master.yaml': (
        'join-master', 'render_join_config master',
        {'NODE_NAME': 'master-1', 'NODE_IP': '{MASTER1_IP}'}),
    'kubeadm-join-worker.yaml': (
        'join-worker', 'render_join_config worker',
        {'NODE_NAME': 'worker-0', 'NODE_IP': '{WORKER0_IP}'}),
    'kubeadm-join-secrets.yaml': (
        'refresh-join', 'render_join_secrets_config 2h0m0s {KUBE_VERSION}',
        {'NODE_NAME': 'master-0', 'NODE_IP': '{MASTER0_IP}'}),
}


@pytest.mark.parametrize('name', sorted(KUBEADM_CONFIGS))
def test_kubeadm_configuration_holding_secrets_matches_golden(name):
    role, call, values = KUBEADM_CONFIGS[name]
    config = {**PLACEHOLDERS, **values}
    if role == 'join-worker':
        del config['CERTIFICATE_KEY']
    proc = bash(f'ROLE={role}; read_config -; {call}',
                lines(*(f'{k}={v}' for k, v in config.items())))
    assert proc.returncode == 0, proc.stderr
    assert matches_golden(name, proc.stdout)


def test_secret_values_are_expanded_only_by_shell_builtins():
    """The token and the key are never arguments of a program (visible
    in ps and /proc/PID/cmdline to every user of the VM): each line that
    expands them is a printf (a builtin), a test or an assignment."""
    text = SCRIPT.read_text(encoding='utf-8')
    uses = [line.strip() for line in text.splitlines()
            if '${CFG[BOOTSTRAP_TOKEN]' in line
            or '${CFG[CERTIFICATE_KEY]' in line]
    assert len(uses) >= 4
    for line in uses:
        assert line.startswith(('printf ', 'if [[ ', '[[ ')), line
        # ... and what a test runs when true does not expand them.
        then = line.partition('; then')[2]
        assert 'BOOTSTRAP_TOKEN]' not in then or 'SECRETS+=' in then, line
        assert 'CERTIFICATE_KEY]' not in then, line


# -- finding a volume by its Cinder id --------------------------------------

@pytest.fixture
def loops(tmp_path):
    """Attach sparse files as loop devices: attach(size) -> device."""
    if os.geteuid() != 0 or shutil.which('losetup') is None:
        pytest.skip('needs root and loop devices')
    attached = []

    def attach(size: int) -> str:
        image = tmp_path / f'disk{len(attached)}.img'
        image.write_bytes(b'')
        os.truncate(image, size)
        dev = subprocess.run(['losetup', '--find', '--show', str(image)],
                             capture_output=True, text=True,
                             check=True).stdout.strip()
        attached.append(dev)
        return dev

    yield attach
    for dev in attached:
        subprocess.run(['losetup', '-d', dev], check=False)


def find_volume(by_id: Path, gib: int = 1, hint: str = '/dev/vdb'):
    return bash(f'find_volume {by_id} {VOL1} {gib} {hint}; '
                'echo "dev=$VOLUME_DEV"')


@pytest.mark.parametrize('link', [
    f'virtio-{VOL1[:20]}',                      # virtio-blk: 20-byte serial
    f'scsi-0QEMU_QEMU_HARDDISK_{VOL1}',         # virtio-scsi
    f'nvme-QEMU_NVMe_Ctrl_{VOL1[:20]}',         # NVMe: 20-byte serial
])
def test_volume_is_found_by_its_id_not_by_novas_device(tmp_path, loops,
                                                        link):
    by_id = tmp_path / 'by-id'
    by_id.mkdir()
    volume, other = loops(1 << 30), loops(1 << 30)
    (by_id / link).symlink_to(volume)
    (by_id / f'virtio-{VOL2[:20]}').symlink_to(other)
    proc = find_volume(by_id, hint=other)     # Nova names the other disk
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f'dev={volume}'
    assert f'volume {VOL1} is {volume} (Nova reports {other})' in \
        proc.stderr


def test_a_volume_without_its_id_is_refused_naming_what_is_there(tmp_path,
                                                                 loops):
    by_id = tmp_path / 'by-id'
    by_id.mkdir()
    blank = loops(1 << 30)
    (by_id / f'virtio-{VOL2[:20]}').symlink_to(blank)
    proc = find_volume(by_id, hint=blank)
    assert proc.returncode == 1
    error = proc.stderr.strip().splitlines()[-1]
    assert f'volume {VOL1}: no disk with this id under {by_id}' in error
    assert f'virtio-{VOL2[:20]}' in error           # what was found
    assert f'Nova reports {blank}, a disk whose identity cannot be ' \
        'confirmed' in error
    assert 'nothing was formatted' in error


def test_a_disk_of_another_size_is_refused(tmp_path, loops):
    by_id = tmp_path / 'by-id'
    by_id.mkdir()
    small = loops(64 << 20)
    (by_id / f'virtio-{VOL1[:20]}').symlink_to(small)
    proc = find_volume(by_id, gib=1)
    assert proc.returncode == 1
    assert f'volume {VOL1}: {small} has {64 << 20} bytes, but Cinder\'s ' \
        f'volume has 1 GiB ({1 << 30} bytes)' in proc.stderr


def test_two_disks_with_the_same_id_are_refused(tmp_path, loops):
    by_id = tmp_path / 'by-id'
    by_id.mkdir()
    first, second = loops(1 << 30), loops(1 << 30)
    (by_id / f'virtio-{VOL1[:20]}').symlink_to(first)
    (by_id / f'scsi-0QEMU_QEMU_HARDDISK_{VOL1}').symlink_to(second)
    proc = find_volume(by_id)
    assert proc.returncode == 1
    assert 'several disks carry its id' in proc.stderr
    assert first in proc.stderr and second in proc.stderr

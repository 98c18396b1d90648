"""The install script's contract: its version, as the driver reads it from
the package's script before anything remote happens; its key tables, one
definition (``cluster.contract``) the script's tables are rendered from
and checked against; the driver's checks of what it would send; and
where the CNI manifest and its SHA-256 come from."""
from __future__ import annotations

import difflib
import hashlib
import re
import subprocess
from pathlib import Path

import pytest

from kubernetes_mgmt.cluster import cluster_plan, contract, roles, script
from kubernetes_mgmt.cluster.cluster_plan import build_plan
from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.errors import MgmtDriverError

SCRIPT = Path(__file__).resolve().parents[2] / 'scripts' / \
    'install_k8s_cluster.sh'
HEADER = '#!/usr/bin/env bash\nset -Eeuo pipefail\n'


def test_the_bundled_script_speaks_the_drivers_contract():
    assert script.declared_contract(SCRIPT.read_text()) == \
        script.CONTRACT_VERSION
    script.check_contract(SCRIPT, 'Scripts/install_k8s_cluster.sh')


@pytest.mark.parametrize('line, version', [
    ('readonly CONTRACT_VERSION=2', 2),
    ('readonly CONTRACT_VERSION=17  # comment', 17),
])
def test_declaration_is_read(line, version):
    assert script.declared_contract(f'{HEADER}{line}\necho hi\n') == version


@pytest.mark.parametrize('text, message', [
    (HEADER + 'echo no declaration\n', 'declares no contract version'),
    # Only a declaration at the start of a line counts.
    (HEADER + '# readonly CONTRACT_VERSION=2\n',
     'declares no contract version'),
    (HEADER + 'readonly CONTRACT_VERSION=two\n',
     "declares CONTRACT_VERSION='two', not a positive integer"),
    (HEADER + 'readonly CONTRACT_VERSION=\n',
     "declares CONTRACT_VERSION='', not a positive integer"),
    (HEADER + 'readonly CONTRACT_VERSION=0\n', 'not a positive integer'),
    (HEADER + 'readonly CONTRACT_VERSION=2\nreadonly CONTRACT_VERSION=3\n',
     'declares CONTRACT_VERSION 2 times'),
])
def test_missing_or_garbage_declaration_is_an_error(text, message):
    with pytest.raises(ValueError) as exc:
        script.declared_contract(text)
    assert message in str(exc.value)


def write(tmp_path, text: str) -> Path:
    path = tmp_path / 'install_k8s_cluster.sh'
    path.write_text(text)
    return path


def test_script_of_another_contract_is_refused_naming_both_and_remedy(
        tmp_path):
    other = script.CONTRACT_VERSION + 1
    path = write(tmp_path, f'{HEADER}readonly CONTRACT_VERSION={other}\n')
    with pytest.raises(script.ContractMismatch) as exc:
        script.check_contract(path, 'Scripts/x.sh of the VNF package')
    message = str(exc.value)
    assert message.startswith('the install script Scripts/x.sh of the VNF '
                              f'package speaks install-script contract '
                              f'version {other}, this plugin speaks version '
                              f'{script.CONTRACT_VERSION}.')
    assert 'kubernetes-mgmt package build' in message
    assert 'install the plugin version that matches the package' in message
    assert isinstance(exc.value, MgmtDriverError)


def test_script_without_declaration_is_refused(tmp_path):
    path = write(tmp_path, HEADER)
    with pytest.raises(script.ContractMismatch) as exc:
        script.check_contract(path, 'Scripts/old.sh')
    assert 'declares no contract version' in str(exc.value)
    assert f'this plugin speaks contract version {script.CONTRACT_VERSION}' \
        in str(exc.value)


def test_unreadable_script_is_refused(tmp_path):
    path = tmp_path / 'binary.sh'
    path.write_bytes(b'\xff\xfe\x00')
    with pytest.raises(script.ContractMismatch, match='cannot read'):
        script.check_contract(path, 'Scripts/binary.sh')


# -- CNI source -----------------------------------------------------------

@pytest.fixture
def conf():
    def override(**values):
        for key, value in values.items():
            CONF.set_override(key, value, group='kubernetes_mgmt')
    yield override
    for key in ('cni', 'cni_manifest', 'cni_manifest_sha256'):
        CONF.clear_override(key, group='kubernetes_mgmt')


def _source(root):
    """The CNI source today's configuration gives (no cluster record)."""
    choice = cluster_plan._cni_choice()
    return cluster_plan._cni_source(root, CONF.kubernetes_mgmt.cni,
                                    choice['cni_manifest'],
                                    choice['cni_sha256'])


@pytest.mark.parametrize('cni', ['calico', 'flannel'])
def test_default_manifests_are_pinned_by_sha256(conf, tmp_path, cni):
    conf(cni=cni)
    source = _source(tmp_path)
    pinned = cluster_plan.CNI_MANIFESTS[cni]
    assert (source.name, source.url, source.sha256) == \
        (cni, pinned.url, pinned.sha256)
    assert re.fullmatch('[0-9a-f]{64}', source.sha256)


def test_manifest_url_needs_its_sha256(conf, tmp_path):
    conf(cni_manifest='http://mirror.example/calico.yaml')
    with pytest.raises(MgmtDriverError) as exc:
        _source(tmp_path)
    assert 'set [kubernetes_mgmt] cni_manifest_sha256' in str(exc.value)
    conf(cni_manifest_sha256='AB' * 32)
    source = _source(tmp_path)
    assert (source.url, source.sha256) == \
        ('http://mirror.example/calico.yaml', 'ab' * 32)


def test_package_manifest_is_pinned_to_its_own_hash_or_the_given_one(
        conf, tmp_path):
    (tmp_path / 'Files').mkdir()
    (tmp_path / 'Files' / 'cni.yaml').write_text('kind: DaemonSet\n')
    actual = hashlib.sha256(b'kind: DaemonSet\n').hexdigest()
    conf(cni_manifest='Files/cni.yaml')
    source = _source(tmp_path)
    assert (source.url, source.package_path, source.sha256) == \
        (None, tmp_path / 'Files' / 'cni.yaml', actual)
    conf(cni_manifest_sha256=actual)
    assert _source(tmp_path).sha256 == actual
    conf(cni_manifest_sha256='0' * 64)
    with pytest.raises(MgmtDriverError) as exc:
        _source(tmp_path)
    assert f'has SHA-256 {actual}, but {"0" * 64} is wanted ' \
        '([kubernetes_mgmt] cni_manifest_sha256' in str(exc.value)


def test_sha256_option_must_be_64_hex_digits(conf):
    with pytest.raises(ValueError):
        conf(cni_manifest_sha256='not-a-hash')


# -- one definition of the keys: contract.py, the script's tables ----------

def test_the_scripts_tables_are_the_ones_rendered_from_the_contract():
    text = SCRIPT.read_text(encoding='utf-8')
    block = contract.tables_block(text)
    rendered = contract.render_tables()
    assert block == rendered, (
        'scripts/install_k8s_cluster.sh has other contract tables than '
        'kubernetes_mgmt/cluster/contract.py renders (run '
        'tools/sync_script_contract.py):\n' + ''.join(difflib.unified_diff(
            (block or '').splitlines(keepends=True),
            rendered.splitlines(keepends=True), 'script', 'contract.py')))
    assert contract.table_problems(text) == []


def test_sync_tool_rewrites_only_the_tables(tmp_path):
    text = SCRIPT.read_text(encoding='utf-8')
    stale = text.replace("    [hosts]='HOSTS'\n", "    [hosts]=''\n")
    assert stale != text
    assert contract.replace_tables(stale) == text


def _script_with(old: str, new: str) -> str:
    text = SCRIPT.read_text(encoding='utf-8')
    assert text.count(old) == 1, old
    return text.replace(old, new)


@pytest.mark.parametrize('old, new, differences', [
    # CNI_SHA256 made optional for init.
    ("CNI CNI_MANIFEST CNI_SHA256'\n    [join-master]",
     "CNI CNI_MANIFEST'\n    [join-master]",
     ['role init: CNI_SHA256 (required) is missing from the script']),
    ("    [init]='CERTIFICATE_KEY IMAGE_REPOSITORY",
     "    [init]='CNI_SHA256 CERTIFICATE_KEY IMAGE_REPOSITORY",
     ['role init lists CNI_SHA256 as required and as optional']),
    ("    [join-master]=''\n", "    [join-master]='CERTIFICATE_KEY'\n",
     ['role join-master lists CERTIFICATE_KEY as required and as optional']),
    ('    [POD_CIDR]=cidr\n', '    [POD_CIDR]=ip\n',
     ['key POD_CIDR is of type cidr in the plugin, ip in the script']),
    ('    [EXPORTS]=exports\n', '    [EXPORTS]=exports\n    [FOO]=name\n',
     ['key FOO is in the script only']),
    ("    [storage]='HTTP_PROXY HTTPS_PROXY NO_PROXY'\n", '',
     ['role storage: HTTP_PROXY (optional) is missing from the script',
      'role storage: HTTPS_PROXY (optional) is missing from the script',
      'role storage: NO_PROXY (optional) is missing from the script']),
    ("    [upgrade]='K8S_VERSION UPGRADE K8S_APT_KEY_FINGERPRINTS'\n)\n"
     "declare -A OPTIONAL",
     "    [upgrade]='K8S_VERSION UPGRADE K8S_APT_KEY_FINGERPRINTS'\n"
     "    [reboot]=''\n)\ndeclare -A OPTIONAL",
     ['role reboot is in the script only']),
    ("readonly COMMON_OPTIONAL='DEADLINE'", "readonly COMMON_OPTIONAL=''",
     ['every role: DEADLINE (optional) is missing from the script']),
    ("    [sha256]='64 lowercase hex digits'\n", '',
     ["the error hints (HINT) differ from the plugin's"]),
    ('    [NODE_NAME]=name\n', '    [NODE_NAME]=name [NODE_IP]=ip\n',
     ['line 6 of the contract tables is not "[NAME]=VALUE": '
      "'[NODE_NAME]=name [NODE_IP]=ip'"]),
    ('# END contract tables\n', '',
     ['has no contract tables (the lines from "# BEGIN contract tables" to '
      '"# END contract tables")']),
])
def test_tables_that_differ_are_named_precisely(old, new, differences):
    assert contract.table_problems(_script_with(old, new)) == differences


def test_a_key_made_optional_is_named():
    text = _script_with(" CA_CERT_HASH CERTIFICATE_KEY'\n",
                        " CA_CERT_HASH'\n")
    text = text.replace("    [join-master]=''\n",
                        "    [join-master]='CERTIFICATE_KEY'\n")
    assert contract.table_problems(text) == [
        'role join-master: CERTIFICATE_KEY is required in the plugin, '
        'optional in the script']


def test_script_whose_tables_differ_is_refused_before_any_host(tmp_path):
    path = write(tmp_path, _script_with('    [POD_CIDR]=cidr\n',
                                        '    [POD_CIDR]=ip\n'))
    with pytest.raises(script.ContractMismatch) as exc:
        script.check_contract(path, 'Scripts/x.sh of the VNF package')
    message = str(exc.value)
    assert message.startswith(
        'the install script Scripts/x.sh of the VNF package declares '
        f'contract version {script.CONTRACT_VERSION} but its key tables '
        "differ from this plugin's: key POD_CIDR is of type cidr in the "
        'plugin, ip in the script.')
    assert 'kubernetes-mgmt package build' in message


# -- the value types: the driver's checks agree with the script's ----------

V1 = '5f0c7e3a-1b2d-4c6e-9a8b-0d1e2f3a4b5c'
SAMPLES = {
    'name': (['master-0', 'a.b-c.d', 'x' * 63], ['Master', '-a', 'a..b',
                                                 'a_b', 'x' * 64, '']),
    'ip': (['10.0.0.1', '255.255.255.255'], ['10.0.0.256', '10.0.0',
                                             '01.0.0.1x', 'a.b.c.d']),
    'seconds': (['1', '600', '086400'], ['0', '86401', '1s', '-1',
                                         '1234567']),
    'minor': (['1.37', '1.100'], ['1.', '2.37', '1.37.1', 'v1.37']),
    'url': (['https://pkgs.k8s.io/core:/stable:/v1.37/deb/',
             'http://m.example:8080'],
            ['ftp://x/', 'http://x/ $(id)', 'http://u@x/', 'https://']),
    'proxy': (['http://proxy:3128', 'http://u:p%40w@proxy:3128/'],
              ['http://u:p"w@proxy:3128', 'http://proxy/path', 'proxy:3128']),
    'noproxy': (['localhost,.svc,10.0.0.0/8,*.example'],
                ['a,,b', ',a', 'a,', 'a b']),
    'mirrors': (['docker.io=https://m.example:5000,_default=http://m/'],
                ['docker.io', 'Docker.io=https://m/', 'x=ftp://m/',
                 'docker.io=https://m/,']),
    'hosts': (['10.0.0.1=master-0,10.0.0.2=worker-0', '10.0.0.1'],
              ['10.0.0.1=Master', 'master-0=10.0.0.1', '10.0.0.1=a;reboot']),
    'backends': (['master-0=10.0.0.1,master-1=10.0.0.2'],
                 ['10.0.0.1=master-0,', 'm=10.0.0.1=x']),
    'iplist': (['10.0.0.2,10.0.0.3'], ['10.0.0.2 10.0.0.3', '']),
    'sans': (['10.0.0.100,api.example'], ['API.example', '10.0.0.100,']),
    'lbport': (['16443', '1'], ['6443', '0', '65536']),
    'prefix': (['1', '32'], ['0', '33']),
    'routerid': (['1', '255'], ['0', '256']),
    'priority': (['1', '254'], ['0', '255']),
    'vrrpstate': (['MASTER', 'BACKUP'], ['master', 'FAULT']),
    'vrrppass': (['pw123456', 'a'], ['toolong99', 'pw 1', '']),
    'endpoint': (['10.0.0.100:16443', 'api.example:6443'],
                 ['10.0.0.100', '10.0.0.100:0', 'API:6443', ':6443']),
    'cidr': (['10.244.0.0/16', '0.0.0.0/0'], ['10.244.0.0', '10.0.0.0/33',
                                              '10.0.0.0/16/8']),
    'token': (['abcdef.0123456789abcdef'], ['ABCDEF.0123456789abcdef',
                                            'abcdef0123456789abcdef']),
    'certkey': (['ab' * 32], ['AB' * 32, 'ab' * 31, 'g' * 64]),
    'cahash': (['sha256:' + 'a' * 64], ['a' * 64, 'sha256:' + 'A' * 64]),
    'imagerepo': (['registry.k8s.io', 'mirror.example:5000/k8s/sub'],
                  ['Mirror.example', 'mirror/$(reboot)', 'mirror/', 'a//b']),
    'cni': (['calico', 'flannel'], ['weave', 'Calico']),
    'manifest': (['/var/lib/kubernetes-mgmt/cni.yaml', 'https://x/c.yaml'],
                 ['/var/lib/../../etc/shadow', 'cni.yaml', '/a b']),
    'sha256': (['ab' * 32], ['AB' * 32, 'ab' * 31 + '$(id)']),
    'flag': (['0', '1'], ['yes', '2']),
    'upgrade': (['apply', 'node'], ['Apply', 'plan', 'node ']),
    'regblobs': (['reg.example:5000=LS0tLS1C,_default=YWI+/w==',
                  'registry.k8s.io=QmFzaWMgYQ=='],
                 ['reg.example=', '=YWI=', 'Reg.example=YWI=',
                  'reg.example=YW$(id)', 'reg.example=YWI=,',
                  'reg.example=YWI===']),
    'abspath': (['/var/lib/kubernetes-mgmt/images', '/a'],
                ['relative/dir', '/a/../b', '/a b', '/a/./b', '']),
    'patch': (['1.37.1', '1.100.20'], ['1.37', 'v1.37.1', '1.37.1-1.1',
                                       '2.0.0']),
    'registries': (['reg.example:5000,registry.k8s.io', '_default'],
                   ['reg.example,', 'REG.example', 'a b', 'reg:port']),
    'fingerprints': (['DE15B14486CD377B9E876E1A234654DA9A296436',
                      'DE15B14486CD377B9E876E1A234654DA9A296436,'
                      '0123456789ABCDEF0123456789ABCDEF01234567'],
                     ['de15b14486cd377b9e876e1a234654da9a296436',
                      'DE15 B144', 'DE15B14486CD377B9E876E1A234654DA9A29643',
                      'DE15B14486CD377B9E876E1A234654DA9A296436,']),
    'volumes': ([f'{V1} 1 /dev/vdb /volume;{V1} 20 /dev/disk/x /data/d'],
                [f'{V1} 1 /dev/vdb /volume;', f'{V1}  1 /dev/vdb /volume',
                 f'{V1} 1 /dev/../etc /x', f'{V1} 0 /dev/vdb /volume',
                 f'{V1} 1 /dev/vdb /vol/./x', f'{V1} 1 /dev/vdb volume',
                 f'{V1}\t1 /dev/vdb /volume', 'short 1 /dev/vdb /volume',
                 f'{V1} 1 /dev/vdb /volume extra']),
    'exports': (['/volume 10.0.0.0/24;/data/x 10.0.0.7;/data/x fd00::/64'],
                ['/volume 10.0.0.0/24 extra', '/volume *(rw)',
                 '/volume 10.0.0.0/33', 'volume 10.0.0.7', '/v 10.0.0.7;']),
}


def test_every_type_has_samples():
    assert set(SAMPLES) == set(contract.TYPES)
    assert set(contract.KEY_TYPES.values()) <= set(contract.TYPES)


def test_the_drivers_type_checks_agree_with_the_scripts():
    cases = [(kind, value, ok) for kind, (good, bad) in SAMPLES.items()
             for value, ok in [*((v, True) for v in good),
                               *((v, False) for v in bad)]]
    # One bash for every case: the script's own "valid TYPE VALUE".
    proc = subprocess.run(
        ['bash', '-c', 'source "$1"; while IFS=$\'\\t\' read -r t v; do '
         'if valid "$t" "$v"; then echo 1; else echo 0; fi; done',
         'bash', str(SCRIPT)],
        input=''.join(f'{k}\t{v}\n' for k, v, _ in cases),
        capture_output=True, text=True, timeout=60, check=True)
    by_script = [line == '1' for line in proc.stdout.split()]
    by_driver = [contract.TYPES[k].check(v) for k, v, _ in cases]
    expected = [ok for _, _, ok in cases]
    assert len(by_script) == len(cases)
    # The cases each side judges wrongly, for a readable failure.
    assert [c for c, ok in zip(cases, by_script, strict=True)
            if ok != c[2]] == []
    assert [c for c, ok in zip(cases, by_driver, strict=True)
            if ok != c[2]] == []
    assert by_script == by_driver == expected


# -- the driver checks what it would send ----------------------------------

def test_a_config_missing_a_required_key_is_refused_naming_role_and_key():
    config = {'NODE_NAME': 'master-0', 'NODE_IP': '10.0.0.1',
              'K8S_VERSION': '1.37', 'POD_CIDR': '10.244.0.0/16',
              'SERVICE_CIDR': '10.96.0.0/12',
              'CONTROL_PLANE_ENDPOINT': '10.0.0.1:6443',
              'BOOTSTRAP_TOKEN': 'abcdef.0123456789abcdef', 'CNI': 'calico',
              'CNI_MANIFEST': 'https://x/c.yaml', 'CNI_SHA256': None}
    with pytest.raises(contract.ContractViolation) as exc:
        contract.check('init', config)
    assert str(exc.value).startswith(
        'install-script role init for master-0: CNI_SHA256 is required for '
        'role init')
    assert isinstance(exc.value, MgmtDriverError)
    config['CNI_SHA256'] = 'ab' * 32
    contract.check('init', config)


def test_a_mistyped_or_foreign_key_is_refused_without_its_value():
    config = {'NODE_NAME': 'worker-0', 'NODE_IP': '10.0.0.5',
              'K8S_VERSION': '1.37', 'HTTP_PROXY': 'http://u:s3cret"@p:3128',
              'K8S_APT_KEY_FINGERPRINTS': 'AB' * 20,
              'DEADLINE': 100000, 'CNI': 'calico'}
    problems = contract.problems('prepare', config)
    assert problems == [
        'CNI is not used by role prepare',
        'invalid DEADLINE: expected a valid seconds',
        'invalid HTTP_PROXY: expected a valid proxy']
    with pytest.raises(contract.ContractViolation) as exc:
        contract.check('prepare', config)
    assert 's3cret' not in str(exc.value)
    assert contract.problems('reboot', {}) == [
        "'reboot' is not a role of the install script"]


def test_the_plan_is_checked_whole_naming_role_key_and_nodes(
        package, options, cluster_params, topology_of):
    plan = build_plan('inst-1', cluster_params, topology_of(), package)
    roles.check_plan(plan)      # the sample's configuration is fine
    options(image_repository='Mirror.Example/k8s', install_timeout=100000)
    plan = build_plan('inst-1', cluster_params, topology_of(), package)
    with pytest.raises(contract.ContractViolation) as exc:
        roles.check_plan(plan)
    message = str(exc.value)
    assert message.startswith('the install-script configuration built from '
                              "this cluster's settings breaks the script "
                              'contract; no host was touched: ')
    nodes = ', '.join(n.name for n in plan.nodes)
    masters = ', '.join(n.name for n in plan.masters)
    for line in (f'role prepare ({nodes}): invalid DEADLINE',
                 f'role prepare ({nodes}): invalid IMAGE_REPOSITORY',
                 f'role init ({masters}): invalid IMAGE_REPOSITORY',
                 f'role lb ({masters}): invalid DEADLINE',
                 f'role join-worker ({plan.workers[0].name}): invalid '
                 'DEADLINE'):
        assert line in message
    assert 'Mirror.Example' not in message

"""The lab's pure parts: addressing, names, paths, generated files."""
from __future__ import annotations

import hashlib
import os
import re
import stat

import pytest

from kubernetes_mgmt.cli import build_parser
from kubernetes_mgmt_lab import hosts, image, namespaces, net, procs, state
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.state import LabHost


def test_address_plan_reserves_gateway_and_vip():
    plan = net.AddressPlan.parse('10.10.0.0/24')
    assert (plan.gateway, plan.vip, plan.prefixlen) == \
        ('10.10.0.1', '10.10.0.100', 24)
    assert plan.allocate(set()) == '10.10.0.11'
    used = {f'10.10.0.{i}' for i in range(11, 100)}
    assert plan.allocate(used) == '10.10.0.101'
    assert plan.index('10.10.0.42') == 42


@pytest.mark.parametrize('subnet', ['8.8.8.0/24', 'fd00::/64',
                                    '10.10.0.0/28', '10.10.0.1/24', 'x'])
def test_address_plan_refuses_unsafe_or_odd_subnets(subnet):
    with pytest.raises(LabError):
        net.AddressPlan.parse(subnet)


def test_address_plan_refuses_addresses_outside_and_a_full_subnet():
    plan = net.AddressPlan.parse('10.10.0.0/24')
    with pytest.raises(LabError, match='outside'):
        plan.index('10.10.1.5')
    everything = {str(a) for a in plan.subnet}
    with pytest.raises(LabError, match='no free address'):
        plan.allocate(everything)


@pytest.mark.parametrize('name', ['', 'Klab', '1lab', 'k-lab', 'toolongname'])
def test_lab_names_stay_short_and_plain(name):
    with pytest.raises(LabError):
        net.check_lab_name(name)


def test_link_names_fit_the_kernel_limit():
    assert net.veth_name('abcdefgh', 65534) == 'abcdefghv65534'
    assert net.bridge_name('klab') == 'klabbr0'
    assert net.netns_name('klab', 'worker-3') == 'klab-worker-3'


def test_a_healed_host_keeps_its_mac():
    assert net.host_mac('10.10.0.11') == net.host_mac('10.10.0.11') \
        == '02:4b:0a:0a:00:0b'
    assert net.host_mac('10.10.0.12') != net.host_mac('10.10.0.11')


def test_disk_path_maps_private_directories_only():
    host = LabHost(name='m', role='master', ip='10.10.0.11', netns='k-m',
                   root='/lab/hosts/m', server_id='s')
    assert hosts.disk_path(host, '/etc/hosts') == '/lab/hosts/m/etc/hosts'
    assert hosts.disk_path(host, '/usr/local/bin/kubeadm') == \
        '/lab/hosts/m/usr/local/bin/kubeadm'
    assert hosts.disk_path(host, '/run') == '/lab/hosts/m/run'
    assert hosts.disk_path(host, '/usr/bin/env') == '/usr/bin/env'
    assert hosts.disk_path(host, '/etcetera') == '/etcetera'
    assert hosts.disk_path(host, '/etc/../tmp/x') == '/tmp/x'


def test_mountinfo_paths_are_decoded():
    assert namespaces.decode_mount_path('/a\\040b\\134c') == '/a b\\c'


def test_command_lines_naming_the_root_are_recognised():
    root = '/var/tmp/lab'
    assert procs._mentions(['x', '--state', '/var/tmp/lab/lab.json'], root)
    assert procs._mentions(['x', '--state=/var/tmp/lab/lab.json'], root)
    assert not procs._mentions(['x', '/var/tmp/lab2/lab.json'], root)


def test_sudo_rule_asks_for_a_password_and_keeps_usr_local_first():
    rule = image.sudoers_rule('ubuntu')
    assert 'NOPASSWD' not in rule
    assert 'ubuntu ALL=(ALL:ALL) ALL' in rule
    assert 'secure_path="/usr/local/sbin:/usr/local/bin:' in rule


def test_sshd_config_allows_passwords_and_many_sessions():
    lines = set(image.SSHD_CONFIG.splitlines())
    for wanted in ('PasswordAuthentication yes', 'UsePAM yes',
                   'PermitRootLogin no', 'MaxSessions 64',
                   'MaxStartups 100:30:200', 'LogLevel INFO'):
        assert wanted in lines


def test_state_file_is_private(tmp_path):
    lab = state.LabState(
        name='k', root=str(tmp_path), subnet='10.10.0.0/24',
        gateway='10.10.0.1', bridge='kbr0', username='u', password='p',
        tenant_id='t', stack_id='s', stack_name='n', install_delay=1.5)
    path = str(tmp_path / 'lab.json')
    state.save(lab, path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert state.load(path).install_delay == 1.5


def test_loop_devices_are_found_by_their_backing_file(tmp_path):
    from kubernetes_mgmt_lab import volumes

    sys_block = tmp_path / 'sys-block'
    for name, back in (('loop0', '/var/tmp/lab/hosts/s-0/volumes/v.img'),
                       ('loop3', '/var/tmp/lab/hosts/s-1/volumes/v.img'
                                 ' (deleted)'),
                       ('loop7', '/var/tmp/lab-other/v.img')):
        (sys_block / name / 'loop').mkdir(parents=True)
        (sys_block / name / 'loop' / 'backing_file').write_text(back + '\n')
    (sys_block / 'loop9').mkdir()       # free: no loop/ directory
    (sys_block / 'sda').mkdir()
    assert volumes.attached_under('/var/tmp/lab', str(sys_block)) == {
        '/dev/loop0': '/var/tmp/lab/hosts/s-0/volumes/v.img',
        '/dev/loop3': '/var/tmp/lab/hosts/s-1/volumes/v.img'}
    assert volumes.attached(str(sys_block))['/dev/loop7'] == \
        '/var/tmp/lab-other/v.img'
    host = LabHost(name='s-0', role='storage', ip='10.10.0.11', netns='n',
                   root='/var/tmp/lab/hosts/s-0', server_id='x')
    assert volumes.backing_file(host, 'v') == \
        '/var/tmp/lab/hosts/s-0/volumes/v.img'


def test_lab_command_line():
    parser = build_parser()
    args = parser.parse_args(['lab', 'up', '--masters', '3', '--workers',
                              '4', '--storage', '--install-delay', '0.5',
                              '--root', '/x'])
    assert (args.masters, args.workers, args.storage, args.install_delay,
            args.root, args.services) == (3, 4, True, 0.5, '/x', None)
    args = parser.parse_args(['lab', 'down'])
    assert args.root == state.DEFAULT_ROOT and args.name is None
    args = parser.parse_args(['lab', 'exec', 'master-0', '--', 'ls', '-l'])
    assert (args.host, args.argv) == ('master-0', ['ls', '-l'])


def test_missing_packages_are_installed_with_apt_get(monkeypatch):
    from kubernetes_mgmt_lab import packages

    present = {'/usr/sbin/haproxy': False}
    calls = []
    monkeypatch.setattr(packages, '_present',
                        lambda prog: present.get(prog, True))
    monkeypatch.setattr(packages.shutil, 'which', lambda prog: '/bin/x')

    def fake_run(argv, **kwargs):
        calls.append(argv)
        if argv[:2] == ['apt-get', 'install']:
            present['/usr/sbin/haproxy'] = True

    monkeypatch.setattr(packages, 'run', fake_run)
    packages.ensure()
    assert calls == [['apt-get', 'update'],
                     ['apt-get', 'install', '-y', '--no-install-recommends',
                      'haproxy']]
    calls.clear()
    packages.ensure()
    assert calls == []


def test_a_package_counts_as_installed_by_a_file_it_provides(tmp_path):
    from kubernetes_mgmt_lab import packages

    header = tmp_path / 'stdio.h'       # a file, not a program
    header.write_text('')
    assert packages.missing({str(header): 'libc6-dev', 'sh': 'dash',
                             str(tmp_path / 'cc'): 'gcc',
                             'no-such-program-here': 'absent'}) == \
        ['absent', 'gcc']


def test_missing_packages_without_apt_get_are_a_clear_error(monkeypatch):
    from kubernetes_mgmt_lab import packages

    monkeypatch.setattr(packages, '_present', lambda prog: prog != 'sudo')
    monkeypatch.setattr(packages.shutil, 'which', lambda prog: None)
    with pytest.raises(LabError, match='sudo'):
        packages.ensure()


# -- site mirror, VNF package directory, driver config -----------------------

def test_mirror_serves_the_key_and_both_manifests(tmp_path):
    import threading
    import urllib.request

    from kubernetes_mgmt_lab import mirror

    mirror.populate(str(tmp_path))
    server = mirror.serve(str(tmp_path), ('127.0.0.1', 0))
    threading.Thread(target=server.serve_forever, args=(0.05,),
                     daemon=True).start()
    base = f'http://127.0.0.1:{server.server_address[1]}/'
    try:
        fetched = {path: urllib.request.urlopen(base + path,  # noqa: S310
                                                timeout=5).read().decode()
                   for path in (mirror.KEY_PATH, mirror.CALICO_PATH,
                                mirror.FLANNEL_PATH)}
    finally:
        server.shutdown()
        server.server_close()
    assert fetched[mirror.CALICO_PATH] == mirror.CALICO_MANIFEST
    assert fetched[mirror.FLANNEL_PATH] == mirror.FLANNEL_MANIFEST
    key = fetched[mirror.KEY_PATH]
    assert key.startswith('-----BEGIN PGP PUBLIC KEY BLOCK-----')
    # A real key: gpg reads its fingerprint, which the lab pins.
    fingerprint = mirror.fingerprint_of(key)
    assert re.fullmatch('[0-9A-F]{40}', fingerprint)
    assert mirror.key_fingerprint(str(tmp_path)) == fingerprint
    # A restarted mirror serves the same key.
    mirror.populate(str(tmp_path))
    assert mirror.key_fingerprint(str(tmp_path)) == fingerprint


@pytest.mark.parametrize('manifest', ['CALICO_MANIFEST', 'FLANNEL_MANIFEST'])
def test_mirror_manifests_are_a_cni_to_the_emulated_kubectl(tmp_path,
                                                            manifest):
    from kubernetes_mgmt_lab import mirror
    from kubernetes_mgmt_lab.emulated import testing

    text = getattr(mirror, manifest)
    assert 'stand-in' in text.splitlines()[0]
    # The pod CIDR settings installers rewrite, as upstream ships them.
    assert '# - name: CALICO_IPV4POOL_CIDR' in text or '"Network":' in text
    sim = testing.init_cluster(str(tmp_path), workers=0, cni=False)
    try:
        assert not sim.view().node_ready('master-0')
        sim.masters[0].run('kubectl', '--kubeconfig',
                           '/etc/kubernetes/admin.conf', 'apply', '-f', '-',
                           stdin=text, check=True)
        assert sim.view().node_ready('master-0')
    finally:
        sim.cleanup()


def test_scripts_dir_prefers_package_data_then_the_checkout(tmp_path,
                                                            monkeypatch):
    import kubernetes_mgmt

    package = tmp_path / 'kubernetes_mgmt'
    packaged = package / 'data' / 'scripts'
    checkout = tmp_path / 'scripts'
    monkeypatch.setattr(kubernetes_mgmt, '_HERE', str(package))
    with pytest.raises(FileNotFoundError, match=r'install_k8s_cluster\.sh'):
        kubernetes_mgmt.scripts_dir()
    for directory in (checkout, packaged):
        directory.mkdir(parents=True)
        (directory / 'install_k8s_cluster.sh').write_text('#!/bin/sh\n')
        assert kubernetes_mgmt.scripts_dir() == str(directory)


def _lab_at(tmp_path):
    from kubernetes_mgmt_lab.manager import Lab

    os.makedirs(tmp_path, exist_ok=True)
    lab = Lab(str(tmp_path))
    state.save(state.LabState(
        name='k', root=lab.root, subnet='10.10.0.0/24', gateway='10.10.0.1',
        bridge='kbr0', username='u', password='p', tenant_id='t',
        mirror_port=8090), lab.state_file)
    return lab


def test_driver_config_points_at_mirror_package_and_vim_file(tmp_path):
    from oslo_config import cfg

    from kubernetes_mgmt import conf as kconf
    from kubernetes_mgmt_lab import conf as lab_conf
    from kubernetes_mgmt_lab import mirror as lab_mirror
    from kubernetes_mgmt_lab import mirrorproc

    lab = _lab_at(tmp_path)
    lab_mirror.populate(mirrorproc.content_dir(lab.root))
    lab._write_driver_config({'auth_url': 'http://10.10.0.1:5000/v3',
                              'username': 'admin', 'password': 'pw',
                              'project_name': 'admin'})
    assert stat.S_IMODE(os.stat(lab.driver_conf_path).st_mode) == 0o600
    assert lab.state.config_file == lab.driver_conf_path
    conf = cfg.ConfigOpts()
    kconf.register_opts(conf)
    lab_conf.register_opts(conf)
    conf(['--config-file', lab.driver_conf_path])
    group, own = conf.kubernetes_mgmt, conf.kubernetes_mgmt_lab
    mirror = 'http://10.10.0.1:8090/'
    # The product's seams name the lab's implementations, which read
    # their settings from the lab's own group.
    assert (group.heat_client, group.vnf_package_source,
            group.vim_registry, group.host_key_checking) == \
        ('lab', 'directory', 'file', True)
    assert (own.vnf_package_dir, own.vim_registry_file) == \
        (lab.root + '/package', lab.root + '/vims.json')
    assert (group.apt_repository_url, group.apt_key_url,
            group.cni_manifest) == \
        (mirror + 'apt/v{minor}/', mirror + 'apt/Release.key',
         mirror + 'cni/calico.yaml')
    assert group.apt_key_fingerprints == [lab_mirror.key_fingerprint(
        mirrorproc.content_dir(lab.root))]
    served = os.path.join(lab.root, 'mirror', 'cni', 'calico.yaml')
    mirror_dir = os.path.dirname(os.path.dirname(served))
    from kubernetes_mgmt_lab import mirror as lab_mirror
    lab_mirror.populate(mirror_dir)
    with open(served, 'rb') as f:
        assert group.cni_manifest_sha256 == \
            hashlib.sha256(f.read()).hexdigest()
    assert (own.heat_auth_url, own.heat_username, own.heat_password,
            own.heat_project) == \
        ('http://10.10.0.1:5000/v3', 'admin', 'pw', 'admin')


def test_package_dir_gets_the_plugin_scripts(tmp_path, monkeypatch):
    import kubernetes_mgmt

    source = tmp_path / 'src'
    source.mkdir()
    (source / 'install_k8s_cluster.sh').write_text('#!/bin/sh\necho hi\n')
    monkeypatch.setattr(kubernetes_mgmt, 'scripts_dir', lambda: str(source))
    lab = _lab_at(tmp_path / 'lab')
    lab._write_package()
    copy = os.path.join(lab.package_dir, 'Scripts', 'install_k8s_cluster.sh')
    with open(copy, encoding='utf-8') as f:
        assert f.read() == '#!/bin/sh\necho hi\n'
    assert os.access(copy, os.X_OK)
    # The sample package's PV manifests, as pv_registration_params name
    # them.
    manifests = os.listdir(os.path.join(lab.package_dir, 'Files',
                                        'kubernetes'))
    assert 'nfs-pv1.yaml' in manifests


# -- placement ---------------------------------------------------------------

def _placement_state(anti_affinity: bool, computes: int = 3):
    from kubernetes_mgmt_lab import manager, placement

    return state.LabState(
        name='u', root='/x', subnet='10.10.0.0/24', gateway='10.10.0.1',
        bridge='b', username='u', password='p', tenant_id='t',
        stack_id='s', stack_name='n', layouts=manager.default_layouts(),
        compute_hosts=placement.compute_host_names(computes),
        anti_affinity=anti_affinity)


def _placed(st, role: str, index: int, member: str | None = None):
    from kubernetes_mgmt_lab import placement

    host = LabHost(name=f'{role}-{index}', role=role,
                   ip=f'10.10.0.{11 + len(st.hosts)}', netns='n', root='/r',
                   server_id=f'srv-{role}-{index}', member_name=member)
    st.hosts.append(host)
    placement.place(st, host)
    return host


def test_ungrouped_hosts_go_round_robin():
    st = _placement_state(anti_affinity=False)
    hosts = [_placed(st, 'worker', i) for i in range(4)]
    assert [h.compute_host for h in hosts] == [
        'compute-0', 'compute-1', 'compute-2', 'compute-0']


def test_anti_affinity_spreads_workers_and_then_finds_no_host():
    from kubernetes_mgmt_lab import placement

    st = _placement_state(anti_affinity=True, computes=2)
    master = _placed(st, 'master', 0)
    workers = [_placed(st, 'worker', i) for i in range(2)]
    assert master.compute_host == 'compute-0'
    assert [w.compute_host for w in workers] == ['compute-0', 'compute-1']
    with pytest.raises(placement.NoValidHost) as caught:
        _placed(st, 'worker', 2, member='abcdefghijkl')
    assert caught.value.resource == 'worker_instance'
    assert str(caught.value) == (
        'ResourceInError: resources.worker_instance.resources.abcdefghijkl'
        '.resources.workerNode: Went to status ERROR due to "Message: No '
        'valid host was found. There are not enough hosts available., '
        'Code: 500"')
    # Masters are not in the group: they still find a host.
    assert _placed(st, 'master', 1).compute_host == 'compute-1'


def test_moves_keep_anti_affinity():
    from kubernetes_mgmt_lab import placement

    st = _placement_state(anti_affinity=True)
    w0, w1 = _placed(st, 'worker', 0), _placed(st, 'worker', 1)
    placement.check_move(st, w0, 'compute-2')
    with pytest.raises(LabError, match='anti-affinity'):
        placement.check_move(st, w0, w1.compute_host)
    with pytest.raises(LabError, match='no compute host'):
        placement.check_move(st, w0, 'compute-9')
    # A rebuilt member avoids its old host when another is free.
    placement.place(st, w0, previous=w0.compute_host)
    assert w0.compute_host == 'compute-2'
    with pytest.raises(LabError, match='at least one'):
        placement.compute_host_names(0)


def test_lab_up_anti_affinity_needs_the_services(capsys):
    parser = build_parser()
    args = parser.parse_args(['lab', 'up', '--services', '/x',
                              '--anti-affinity'])
    assert (args.services, args.anti_affinity) == ('/x', True)
    args = parser.parse_args(['lab', 'up', '--anti-affinity'])
    assert args.func(args) == 1     # refused before any lab is made
    assert '--anti-affinity needs --services' in capsys.readouterr().err


def test_rabbitmq_ports_stay_out_of_the_cli_tools_range():
    # A node whose distribution port rabbitmqctl may take at boot dies with
    # dist_port_already_used (seen on a fresh CI machine).
    import socket

    from kubernetes_mgmt_lab.openstack import rabbitmq
    held = []
    for port in (rabbitmq.PREFERRED_PORT, rabbitmq.PREFERRED_DIST_PORT):
        sock = socket.socket()
        try:
            sock.bind(('127.0.0.1', port))
            held.append(sock)
        except OSError:
            sock.close()    # already busy: just as good for this test
    try:
        amqp, dist = rabbitmq.free_ports()
    finally:
        for sock in held:
            sock.close()
    assert amqp != dist
    assert {amqp, dist}.isdisjoint({rabbitmq.PREFERRED_PORT,
                                    rabbitmq.PREFERRED_DIST_PORT})
    assert {amqp, dist}.isdisjoint(rabbitmq.CLI_DIST_PORTS)


def test_test_labs_of_two_xdist_workers_pick_disjoint_subnets(monkeypatch):
    from kubernetes_mgmt_lab import testing
    monkeypatch.setenv('PYTEST_XDIST_WORKER_COUNT', '2')
    monkeypatch.setenv('PYTEST_XDIST_WORKER', 'gw0')
    first = set(range(*_inclusive(testing._third_octets())))
    monkeypatch.setenv('PYTEST_XDIST_WORKER', 'gw1')
    second = set(range(*_inclusive(testing._third_octets())))
    assert first and second and not first & second
    assert min(first | second) >= 200 and max(first | second) <= 254


def _inclusive(bounds: tuple[int, int]) -> tuple[int, int]:
    return bounds[0], bounds[1] + 1


def test_the_key_inventory_vouches_for_the_vm_on_the_bridge(tmp_path):
    """A VM a heal replaced keeps its disk and its old address: the
    inventory names the keys of the one plugged in there now, whatever
    the order of the lab's hosts."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    from kubernetes_mgmt_lab.manager import Lab

    def vm(name: str, plugged: bool) -> LabHost:
        root = tmp_path / name
        (root / 'etc' / 'ssh').mkdir(parents=True)
        key = ed25519.Ed25519PrivateKey.generate().public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        (root / 'etc' / 'ssh' / 'ssh_host_ed25519_key.pub').write_text(
            f'{key.decode()} root@{name}\n')
        return LabHost(name, 'worker', '10.0.0.20', f'ns-{name}', str(root),
                       f'server-{name}', plugged=plugged)

    lab_root = tmp_path / 'lab'
    lab_root.mkdir()
    state.save(state.LabState(
        'lt', str(lab_root), '10.0.0.0/24', '10.0.0.1', 'br-lt', 'ubuntu',
        'pw', 'tenant', hosts=[vm('vm-2', True), vm('vm-1', False)]),
        state.state_path(str(lab_root)))
    new, old = (hosts.host_public_keys(h) for h in
                state.load(state.state_path(str(lab_root))).hosts)
    vouched = Lab(str(lab_root)).host_keys().keys['10.0.0.20']
    assert vouched == new != old

"""The lab's VMs: real sshd with password login, private directories,
sudo, heal with new host keys, slow boots, and a clean teardown."""
from __future__ import annotations

import base64
import os
import signal
import stat
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass

import paramiko
import pytest

from kubernetes_mgmt.remote.retry import poll
from kubernetes_mgmt_lab import hosts, mirror, net, volumes

pytestmark = pytest.mark.lab

SESSION_MASTERS = 2     # the shape of the session lab (conftest.py)
SESSION_WORKERS = 3
VOLUME = 'storage_server_volume'
GUEST = volumes.GUEST_DEVICE    # the volume inside the VM
# A mount point in a directory private to the VM: no trace on the machine.
MOUNT = '/var/lib/klab-test-volume'


def known_keys(lab, name: str) -> paramiko.HostKeys:
    host = lab.host(name)
    keys = paramiko.HostKeys()
    for key_type, blob in lab.host_public_keys(name).items():
        keys.add(host.ip, key_type,
                 paramiko.PKey.from_type_string(key_type,
                                                base64.b64decode(blob)))
    return keys


def ssh(lab, name: str, keys: paramiko.HostKeys | None = None
        ) -> paramiko.SSHClient:
    """A password login that accepts only the host's known keys."""
    client = paramiko.SSHClient()
    keys = keys or known_keys(lab, name)
    for hostname, entry in keys.items():
        for key_type, key in entry.items():
            client.get_host_keys().add(hostname, key_type, key)
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    client.connect(lab.host(name).ip, username=lab.state.username,
                   password=lab.state.password, look_for_keys=False,
                   allow_agent=False, timeout=10, banner_timeout=10,
                   auth_timeout=10)
    return client


def run(client: paramiko.SSHClient, command: str, stdin: str = ''
        ) -> tuple[int, str, str]:
    chan_in, out, err = client.exec_command(command, timeout=30)
    if stdin:
        chan_in.write(stdin)
    chan_in.channel.shutdown_write()
    status = out.channel.recv_exit_status()
    return status, out.read().decode(), err.read().decode()


@pytest.fixture(scope='module')
def spare(lab):
    """A worker of this module's own, so heal tests leave the session
    lab's hosts as they were."""
    host = lab.add_host('worker')
    yield host.name
    lab.remove_host(host.name)


def test_session_lab_has_its_hosts_and_a_0600_state(lab):
    state = lab.state
    roles = [h.role for h in state.hosts]
    assert roles.count('master') == SESSION_MASTERS
    assert roles.count('worker') == SESSION_WORKERS
    assert len({h.ip for h in state.hosts}) == len(state.hosts)
    assert state.vip and state.vip not in {h.ip for h in state.hosts}
    for path in (lab.state_file, state.config_file):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(state.config_file, encoding='utf-8') as f:
        config = f.read()
    assert 'heat_auth_url' not in config     # its VMs are no stack
    assert f'state_file = {lab.state_file}' in config
    assert state.config_file == lab.driver_conf_path
    site = f'http://{state.gateway}:{state.mirror_port}/'
    for line in (f'vnf_package_dir = {lab.root}/package',
                 f'apt_repository_url = {site}apt/v{{minor}}/',
                 f'apt_key_url = {site}apt/Release.key',
                 f'cni_manifest = {site}cni/calico.yaml',
                 'cni_manifest_sha256 = '
                 f'{mirror.sha256_of(mirror.CALICO_MANIFEST)}',
                 'heat_client = lab', 'vnf_package_source = directory',
                 'vim_registry = file',
                 f'vim_registry_file = {lab.root}/vims.json',
                 'host_key_checking = true'):
        assert line in config.splitlines()


def test_site_mirror_serves_key_and_manifests_to_the_vms(lab):
    state = lab.state
    site = f'http://{state.gateway}:{state.mirror_port}/'
    for path in ('apt/Release.key', 'cni/calico.yaml', 'cni/flannel.yaml'):
        got = lab.run_in_host(state.hosts[-1].name,
                              ['curl', '-fsS', '--noproxy', '*',
                               '--max-time', '10', site + path])
        assert got.returncode == 0, got.stderr
        with open(os.path.join(lab.root, 'mirror', path),
                  encoding='utf-8') as f:
            assert got.stdout == f.read()
    with open(os.path.join(lab.root, 'mirror.log'), encoding='utf-8') as f:
        assert 'GET /cni/flannel.yaml' in f.read()


def test_package_dir_holds_the_plugins_install_script(lab):
    import kubernetes_mgmt

    copy = os.path.join(lab.package_dir, 'Scripts',
                        'install_k8s_cluster.sh')
    original = os.path.join(kubernetes_mgmt.scripts_dir(),
                            'install_k8s_cluster.sh')
    with open(copy, 'rb') as mine, open(original, 'rb') as theirs:
        assert mine.read() == theirs.read()
    assert os.access(copy, os.X_OK)


def test_every_host_takes_a_password_login_and_knows_its_name(lab):
    for host in lab.state.hosts:
        client = ssh(lab, host.name)
        try:
            # uname: /usr/local/bin/hostname may be an emulated stand-in.
            status, out, _ = run(
                client, 'uname -n; id -un; ip -4 -o addr show dev eth0')
        finally:
            client.close()
        assert status == 0
        assert out.split()[:2] == [host.name, lab.state.username]
        assert f' {host.ip}/' in out


def test_host_json_describes_the_host(lab):
    import json

    host = lab.state.hosts[0]
    with open(lab.host_path(host.name, '/etc/klab/host.json'),
              encoding='utf-8') as f:
        info = json.load(f)
    assert info == {'name': host.name, 'ip': host.ip, 'role': host.role,
                    'lab_root': lab.root,
                    'cluster_dir': lab.state.cluster_dir,
                    'state_file': lab.state_file}


def test_private_etc_is_private_to_each_host(lab):
    one, other = lab.state.hosts[0].name, lab.state.hosts[1].name
    probe = f'/etc/klab-probe-{uuid.uuid4().hex}'
    written = lab.run_in_host(one, ['sh', '-c', f'echo hi > {probe}'])
    assert written.returncode == 0, written.stderr
    try:
        assert lab.run_in_host(one, ['cat', probe]).stdout == 'hi\n'
        assert lab.run_in_host(other, ['test', '-e', probe]).returncode \
            == 1
        assert not os.path.exists(probe)
        assert os.path.exists(lab.host_path(one, probe))
        assert lab.host_path(one, '/usr/bin/env') == '/usr/bin/env'
    finally:
        lab.run_in_host(one, ['rm', '-f', probe])


def test_sudo_asks_for_the_password(lab):
    client = ssh(lab, lab.state.hosts[0].name)
    try:
        status, _, err = run(client, 'sudo -n true')
        assert status != 0 and 'password is required' in err
        status, _, _ = run(client, 'sudo -S -p "" true', stdin='wrong\n')
        assert status != 0
        status, out, err = run(client, 'sudo -S -p "" sh -c "id -un; '
                                       'echo $PATH"',
                               stdin=lab.state.password + '\n')
    finally:
        client.close()
    assert status == 0
    assert 'unable to resolve host' not in err
    user, path = out.split()
    assert user == 'root'
    assert path.split(':').index('/usr/local/bin') < \
        path.split(':').index('/usr/bin')


def test_ssh_accepts_counts_connections(lab):
    name = lab.state.hosts[1].name
    before = lab.ssh_accepts(name)
    for _ in range(3):
        ssh(lab, name).close()
    assert lab.ssh_accepts(name, at_least=before + 3) == before + 3


def test_haproxy_and_keepalived_run_inside_a_host(lab):
    name = lab.state.hosts[0].name
    haproxy = lab.run_in_host(name, ['haproxy', '-v'])
    assert haproxy.returncode == 0 and 'HAProxy version' in haproxy.stdout
    keepalived = lab.run_in_host(name, ['keepalived', '-v'])
    assert keepalived.returncode == 0
    assert 'Keepalived v' in keepalived.stdout + keepalived.stderr


def test_added_host_is_a_full_vm_and_goes_away_when_removed(lab):
    host = lab.add_host('worker')
    try:
        assert host.name in {h.name for h in lab.state.hosts}
        client = ssh(lab, host.name)
        assert run(client, 'uname -n')[1].strip() == host.name
        client.close()
    finally:
        lab.remove_host(host.name)
    assert host.name not in {h.name for h in lab.state.hosts}
    assert not net.port_open(host.ip, hosts.SSH_PORT)
    netns = subprocess.run(['ip', 'netns', 'list'], capture_output=True,
                           text=True, check=True).stdout
    assert host.netns not in netns.split()


def test_replace_host_gives_new_keys_and_fresh_disks_same_ip(lab, spare):
    old = lab.host(spare)
    old_keys = lab.host_public_keys(spare)
    old_known = known_keys(lab, spare)
    client = ssh(lab, spare)
    run(client, 'touch ~/left-behind')
    client.close()

    new = lab.replace_host(spare)

    assert new.ip == old.ip and new.member_name == old.member_name
    assert new.server_id != old.server_id
    assert new.generation == old.generation + 1
    new_keys = lab.host_public_keys(spare)
    assert set(new_keys) == set(old_keys)
    assert all(new_keys[t] != old_keys[t] for t in old_keys)
    with pytest.raises(paramiko.BadHostKeyException):
        ssh(lab, spare, keys=old_known)
    client = ssh(lab, spare)
    try:
        status, _, _ = run(client, 'test -e ~/left-behind')
    finally:
        client.close()
    assert status == 1


def test_sshd_started_with_a_delay_comes_up_late(lab, spare):
    lab.stop_sshd(spare)
    assert not lab.sshd_up(spare)
    started = time.monotonic()
    lab.start_sshd(spare, delay=2)
    assert not lab.sshd_up(spare)
    while not lab.sshd_up(spare):
        assert time.monotonic() - started < 30, 'sshd never came back'
        time.sleep(0.1)
    assert time.monotonic() - started >= 1.9
    ssh(lab, spare).close()


def test_orphans_of_a_host_are_reaped_by_its_init(lab, spare):
    # A daemon a session leaves behind exits later: no zombie remains.
    client = ssh(lab, spare)
    pid = int(run(client, 'setsid sh -c \'echo $$; exec sleep 0.3\' '
                          '</dev/null 2>&1 &')[1].split()[0])
    client.close()
    # A zombie keeps its /proc entry; only a reaped process loses it.
    poll(lambda: _state(pid) == 'X', deadline=10, what='orphan reaped')


# -- volumes -----------------------------------------------------------------

def _probe(lab, name: str, device: str) -> subprocess.CompletedProcess:
    """blkid's low-level probe: exit 2 when the device holds nothing."""
    return lab.run_in_host(name, ['sh', '-c', f'test -b {device} && '
                                  f'blkid -p -o export {device}'])


def _format_and_mount(lab, name: str, device: str) -> str:
    """mkfs.ext4 and mount inside the VM; returns the filesystem UUID."""
    done = lab.run_in_host(name, ['sh', '-ec', f"""
        mkfs.ext4 -q {device}
        mkdir -p {MOUNT}
        mount {device} {MOUNT}
        echo data > {MOUNT}/file
        mountpoint -q {MOUNT}
        test "$(findmnt -n -o SOURCE {MOUNT})" = {device}
        blkid -s UUID -o value {device}"""])
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _machine_mounts() -> str:
    with open('/proc/self/mountinfo', encoding='utf-8') as f:
        return f.read()


def test_storage_volume_is_a_real_device_each_vm_its_own(lab):
    host = lab.add_host('storage')
    backing = volumes.backing_file(host, VOLUME)
    try:
        loop = host.volume_devices[VOLUME]
        assert loop.startswith('/dev/loop')
        assert lab.host(host.name).volume_devices == {VOLUME: loop}
        assert volumes.attached()[loop] == backing
        device = GUEST                      # the VM's name for it
        assert _probe(lab, host.name, device).returncode == 2   # empty

        uuid = _format_and_mount(lab, host.name, device)
        assert uuid
        assert _probe(lab, host.name, device).stdout.count('TYPE=ext4') \
            == 1
        # The mount is the VM's alone.
        assert f' {device} ' not in _machine_mounts()
        assert f' {loop} ' not in _machine_mounts()
        assert MOUNT not in _machine_mounts()

        # Heal: a new server with a new, empty volume.
        old_id = host.volume_ids[VOLUME]
        new = lab.replace_host(host.name)
        new_device = GUEST
        assert new.volume_ids[VOLUME] != old_id
        assert volumes.attached_under(host.root) == {
            new.volume_devices[VOLUME]: backing}
        assert _probe(lab, host.name, new_device).returncode == 2
        gone = lab.run_in_host(host.name, ['findmnt', MOUNT])
        assert gone.returncode == 1
        _format_and_mount(lab, host.name, new_device)
    finally:
        lab.remove_host(host.name)     # while the volume is mounted
    assert volumes.attached_under(host.root) == {}
    assert not os.path.exists(backing)


def test_lab_down_frees_a_mounted_volume(lab_args):
    from kubernetes_mgmt_lab.manager import Lab

    lab = Lab.up(masters=1, workers=0, storage=True, **lab_args)
    try:
        device = lab.host('storage-0').volume_devices[VOLUME]
        _format_and_mount(lab, 'storage-0', GUEST)
        namespaces = _lab_namespaces(lab.root, lab_args['name'])
        assert volumes.attached_under(lab.root) != {}
    except BaseException:
        lab.down()
        raise
    # Another process, knowing only the root, as after a crashed test.
    down = cli('down', '--root', lab.root)
    assert down.returncode == 0, down.stderr
    assert f'loop device {device}' in down.stdout
    assert volumes.attached_under(lab.root) == {}
    assert_nothing_left(lab.root, lab_args['name'], namespaces)


# -- up and down -------------------------------------------------------------

def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open(f'/proc/{entry}/stat', encoding='utf-8') as f:
                    fields = f.read().rsplit(')', 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def _state(pid: int) -> str:
    try:
        with open(f'/proc/{pid}/stat', encoding='utf-8') as f:
            return f.read().rsplit(')', 1)[1].split()[0]
    except OSError:
        return 'X'


@dataclass(frozen=True)
class Footprint:
    """A lab's namespaces (inode numbers), and when they were read: the
    kernel recycles a freed namespace's number, so after down a process
    started later in a namespace of that number (another lab's, in the
    other lane) is not one this lab left."""
    inodes: frozenset[int]
    taken_at: float     # seconds since boot


def _lab_namespaces(root: str, name: str) -> Footprint:
    inodes = set()
    for path in [os.path.join('/run/netns', n) for n in _netns(name)] + \
            [os.path.join(root, 'ns', f)
             for f in os.listdir(os.path.join(root, 'ns'))]:
        inodes.add(os.stat(path).st_ino)
    return Footprint(frozenset(inodes), _seconds_since_boot())


def _seconds_since_boot() -> float:
    with open('/proc/uptime', encoding='utf-8') as f:
        return float(f.read().split()[0])


def _started_at(pid: int) -> float:
    """The process's start, in seconds since boot (field 22 of stat)."""
    with open(f'/proc/{pid}/stat', encoding='utf-8') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return int(fields[19]) / os.sysconf('SC_CLK_TCK')


def _netns(name: str) -> list[str]:
    out = subprocess.run(['ip', 'netns', 'list'], capture_output=True,
                         text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines()
            if line.startswith(f'{name}-')]


def assert_nothing_left(root: str, name: str,
                        namespaces: Footprint | None) -> None:
    assert _netns(name) == []
    assert volumes.attached_under(root) == {}
    links = subprocess.run(['ip', '-br', 'link'], capture_output=True,
                           text=True, check=True).stdout
    assert [ln for ln in links.splitlines() if ln.startswith(name)] == []
    with open('/proc/self/mountinfo', encoding='utf-8') as f:
        assert [ln for ln in f if root in ln] == []
    for entry in os.listdir('/proc'):
        if not entry.isdigit() or _state(int(entry)) in ('Z', 'X'):
            continue
        try:
            with open(f'/proc/{entry}/cmdline', 'rb') as f:
                cmdline = f.read().decode(errors='replace')
            ns = {int(os.readlink(f'/proc/{entry}/ns/{kind}')
                      .split('[')[1].rstrip(']'))
                  for kind in ('mnt', 'net', 'uts')}
            started = _started_at(int(entry))
        except OSError:
            continue
        assert root not in cmdline, cmdline
        if namespaces and started <= namespaces.taken_at:
            assert not ns & namespaces.inodes, cmdline
    assert not os.path.exists(root)


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, '-m', 'kubernetes_mgmt.cli', 'lab', *args],
        capture_output=True, text=True, timeout=timeout, check=False)


def test_lab_up_then_down_leaves_nothing_behind(lab_args):
    from kubernetes_mgmt_lab.manager import Lab

    args = lab_args
    root, name = args['root'], args['name']
    up = cli('up', '--root', root, '--name', name, '--subnet',
             args['subnet'], '--masters', '1', '--workers', '2')
    assert up.returncode == 0, up.stderr
    assert 'master-0' in up.stdout and 'kubernetes_mgmt.conf' in up.stdout
    status = cli('status', '--root', root)
    assert status.returncode == 0, status.stderr
    assert status.stdout.count(' up') >= 3
    namespaces = _lab_namespaces(root, name)
    assert len(namespaces.inodes) == 9     # net, mnt and uts of three hosts
    state = Lab.load(root).state
    helpers = {'mirror': state.mirror_pid}
    assert all(_state(pid) not in ('Z', 'X') for pid in helpers.values())
    assert net.port_open(state.gateway, state.mirror_port)

    down = cli('down', '--root', root)
    assert down.returncode == 0, down.stderr
    assert_nothing_left(root, name, namespaces)
    # Gone: reaped (X), or a zombie its new parent has not reaped yet.
    assert {k: _state(p) in ('X', 'Z') for k, p in helpers.items()} == \
        {'mirror': True}
    # Not a connect test: with the bridge gone, the address routes away.
    listening = subprocess.run(['ss', '-Hltn'], capture_output=True,
                               text=True, check=True).stdout
    assert f'{state.gateway}:{state.mirror_port} ' not in listening
    again = cli('down', '--root', root, '--name', name)
    assert again.returncode == 0, again.stderr


def test_lab_down_cleans_up_after_lab_up_was_killed_half_way(lab_args):
    args = lab_args
    root, name = args['root'], args['name']
    up = subprocess.Popen(
        [sys.executable, '-m', 'kubernetes_mgmt.cli', 'lab', 'up',
         '--root', root, '--name', name, '--subnet', args['subnet'],
         '--masters', '3', '--workers', '8', '--storage'],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not _netns(name) and up.poll() is None:
            assert time.monotonic() < deadline, 'lab up made no netns'
            time.sleep(0.01)
    finally:
        up.send_signal(signal.SIGKILL)
        up.wait()
    namespaces = _lab_namespaces(root, name)

    down = cli('down', '--root', root)    # the name comes from the root
    assert down.returncode == 0, down.stderr
    assert_nothing_left(root, name, namespaces)


def test_lab_down_frees_the_volume_of_a_killed_lab_up(lab_args):
    # Killed once the loop device is attached, maybe before the state names
    # it: lab down finds it by its backing file.
    args = lab_args
    root, name = args['root'], args['name']
    up = subprocess.Popen(
        [sys.executable, '-m', 'kubernetes_mgmt.cli', 'lab', 'up',
         '--root', root, '--name', name, '--subnet', args['subnet'],
         '--masters', '1', '--workers', '0', '--storage'],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        poll(lambda: volumes.attached_under(root) or up.poll() is not None,
             deadline=60, what='a loop device attached')
    finally:
        up.send_signal(signal.SIGKILL)
        up.wait()
    assert volumes.attached_under(root) != {}
    namespaces = _lab_namespaces(root, name)
    down = cli('down', '--root', root)
    assert down.returncode == 0, down.stderr
    assert 'loop device /dev/loop' in down.stdout
    assert_nothing_left(root, name, namespaces)


def test_failed_lab_up_removes_what_it_made(lab, lab_args):
    from kubernetes_mgmt_lab.errors import LabError
    from kubernetes_mgmt_lab.manager import Lab

    lab_args['subnet'] = lab.state.subnet      # taken by the session lab
    with pytest.raises(LabError, match='overlaps'):
        Lab.up(masters=1, workers=0, **lab_args)
    assert_nothing_left(lab_args['root'], lab_args['name'], None)

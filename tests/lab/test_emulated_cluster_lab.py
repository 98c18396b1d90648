"""Emulated Kubernetes and the real HAProxy/keepalived, used over SSH.

The commands a Mgmt Driver runs on its VMs (apt-get, kubeadm, kubectl,
systemctl) act on one shared emulated cluster, while keepalived and HAProxy
are the real daemons running inside the lab VMs.
"""
import json

import pytest

from kubernetes_mgmt.cli import main
from kubernetes_mgmt.remote.retry import poll
from kubernetes_mgmt.remote.ssh import Endpoint, Login, Sessions
from kubernetes_mgmt_lab import net, volumes
from kubernetes_mgmt_lab.emulated import (
    ClusterView,
    half_upgraded,
    node_histories,
    set_clock_offset,
)
from kubernetes_mgmt_lab.emulated.testing import CNI_MANIFEST

pytestmark = pytest.mark.lab

KUBEADM_CONFIG = """\
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: {ip}
nodeRegistration:
  name: {name}
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
controlPlaneEndpoint: {ip}:6443
networking:
  podSubnet: 192.168.0.0/16
  serviceSubnet: 10.96.0.0/12
"""

KEEPALIVED = """\
vrrp_instance lab {{
    state {state}
    interface eth0
    virtual_router_id 77
    priority {priority}
    advert_int 1
    authentication {{
        auth_type PASS
        auth_pass {secret}
    }}
    virtual_ipaddress {{
        {vip}/24
    }}
}}
"""


@pytest.fixture(scope='module')
def small_lab():
    from kubernetes_mgmt_lab.testing import throwaway_lab, unavailable_reason
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with throwaway_lab(3, 2) as lab:
        yield lab


@pytest.fixture
def sessions(small_lab):
    state = small_lab.state
    login = Login(state.username, state.password)
    with Sessions(small_lab.known_hosts()) as pool:
        yield lambda host: pool.get(Endpoint(host.ip, login,
                                             label=host.name))


def use_repository(session, site: str, minor: str) -> None:
    """Point the VM's apt at the site mirror's repository of ``minor``,
    as the install script writes it."""
    session.upload(f'deb [signed-by=/etc/apt/keyrings/kubernetes-apt-'
                   f'keyring.gpg] {site}apt/v{minor}/ /\n',
                   '/etc/apt/sources.list.d/kubernetes.list',
                   step='apt source', sudo=True)
    session.run(['apt-get', 'update'], step='apt update', sudo=True)


@pytest.fixture(scope='module')
def kubeadm_cluster(small_lab):
    """master-0 ran kubeadm init, worker-0 joined it (over SSH), both
    with the packages of the site's 1.36 repository."""
    master, worker = small_lab.state.hosts[0], small_lab.state.hosts[3]
    state = small_lab.state
    login = Login(state.username, state.password)
    with Sessions(small_lab.known_hosts()) as pool:
        def sessions(host):
            return pool.get(Endpoint(host.ip, login, label=host.name))
        for host in (master, worker):
            use_repository(sessions(host), state.mirror_url, '1.36')
            sessions(host).run(['apt-get', 'install', '-y', 'containerd',
                                'kubelet', 'kubeadm', 'kubectl'],
                               step='install', sudo=True)
        m = sessions(master)
        m.upload(KUBEADM_CONFIG.format(ip=master.ip, name=master.name),
                 '/etc/kubernetes/kubeadm.yaml', step='config', sudo=True)
        m.run(['kubeadm', 'init', '--config',
               '/etc/kubernetes/kubeadm.yaml'],
              step='kubeadm init', sudo=True)
        join = m.run(['kubeadm', 'token', 'create', '--print-join-command'],
                     step='token', sudo=True).stdout.split()
        sessions(worker).run([*join, '--node-name', worker.name],
                             step='kubeadm join', sudo=True)
    return master, worker


def test_kubeadm_cluster_over_ssh_shares_one_state(small_lab, sessions,
                                                   kubeadm_cluster):
    master, worker = kubeadm_cluster
    m = sessions(master)

    view = ClusterView(small_lab.state.cluster_dir)
    roles = {n['metadata']['name']: sorted(n['metadata']['labels'])
             for n in view.nodes()}
    assert set(roles) == {master.name, worker.name}
    assert 'node-role.kubernetes.io/control-plane' in roles[master.name]
    assert 'node-role.kubernetes.io/control-plane' not in roles[worker.name]
    listed = m.run(['kubectl', '--kubeconfig', '/etc/kubernetes/admin.conf',
                    'get', 'nodes', '-o', 'name'], step='nodes', sudo=True)
    assert sorted(listed.stdout.split()) == sorted(
        f'node/{h.name}' for h in (master, worker))
    # A worker has no admin credentials, as on a real cluster.
    assert sessions(worker).run(['kubectl', 'get', 'nodes'], step='no conf',
                                check=False).exit_status != 0


def test_lab_exec_kubectl_on_a_master_as_the_readme_shows(
        small_lab, kubeadm_cluster, capsys):
    # Root on a kubeadm master has KUBECONFIG set, so the README's
    # "lab exec master-0 -- kubectl get nodes" needs no --kubeconfig.
    master, worker = kubeadm_cluster
    status = main(['lab', 'exec', '--root', small_lab.root, master.name,
                   '--', 'kubectl', 'get', 'nodes', '-o', 'name'])
    out, err = capsys.readouterr()
    assert (status, err) == (0, '')
    assert sorted(out.split()) == sorted(
        f'node/{h.name}' for h in (master, worker))
    # As the README shows it: the API server's table, as a real one's.
    assert main(['lab', 'exec', '--root', small_lab.root, master.name,
                 '--', 'kubectl', 'get', 'nodes']) == 0
    header, *rows = [line.split() for line in
                     capsys.readouterr().out.splitlines()]
    assert header == ['NAME', 'STATUS', 'ROLES', 'AGE', 'VERSION']
    view = ClusterView(small_lab.state.cluster_dir)
    assert sorted(row[:3] for row in rows) == [
        [h.name, 'Ready' if view.node_ready(h.name) else 'NotReady', role]
        for h, role in ((master, 'control-plane'), (worker, '<none>'))]
    # A worker has no admin kubeconfig: kubectl fails there as on a VM.
    assert main(['lab', 'exec', '--root', small_lab.root, worker.name,
                 '--', 'kubectl', 'get', 'nodes']) != 0


def test_lab_exec_on_an_unknown_host_lists_the_hosts(small_lab, capsys):
    status = main(['lab', 'exec', '--root', small_lab.root, 'nosuch',
                   '--', 'true'])
    out, err = capsys.readouterr()
    assert (status, out) == (1, '')
    names = ', '.join(h.name for h in small_lab.state.hosts)
    assert err == ("kubernetes-mgmt lab: no lab host named 'nosuch'; the "
                   f'hosts of the lab at {small_lab.root}: {names}\n')


def test_real_keepalived_puts_the_vip_on_exactly_one_master(small_lab,
                                                            sessions):
    state = small_lab.state
    masters = [h for h in state.hosts if h.role == 'master']
    for rank, host in enumerate(masters):
        s = sessions(host)
        s.run(['apt-get', 'install', '-y', 'keepalived'], step='install',
              sudo=True)
        s.upload(KEEPALIVED.format(
            state='MASTER' if rank == 0 else 'BACKUP',
            priority=100 - rank, secret='lab-vrrp', vip=state.vip),
            '/etc/keepalived/keepalived.conf', step='keepalived.conf',
            sudo=True, mode=0o600)
        s.run(['systemctl', 'restart', 'keepalived'], step='start',
              sudo=True)

    def holders():
        return [h.name for h in masters
                if f' {state.vip}/' in small_lab.run_in_host(
                    h.name, ['ip', '-br', 'addr', 'show', 'eth0']).stdout]

    assert poll(holders, deadline=15, what='VIP assigned') == \
        [masters[0].name]
    sessions(masters[0]).run(['systemctl', 'stop', 'keepalived'],
                             step='stop', sudo=True)
    assert poll(lambda: holders() == [masters[1].name] and holders(),
                deadline=15, what='VIP moved') == [masters[1].name]


VOLUME_MOUNT = '/var/lib/klab-test-nfs'     # private to the VM
NFS_OPTIONS = 'rw,sync,no_subtree_check,no_root_squash'


def test_nfs_server_on_the_storage_volume_over_ssh(small_lab, sessions):
    # What the driver does on a storage VM: real mkfs and mount on the
    # volume's device inside the VM, the emulated NFS server packages and
    # exportfs.
    storage = small_lab.add_host('storage')
    try:
        device = volumes.GUEST_DEVICE
        s = sessions(storage)
        s.run(['test', '-b', device], step='device', sudo=True)
        probe = s.run(['blkid', '-p', '-o', 'export', device],
                      step='probe', sudo=True, check=False)
        assert probe.exit_status == 2       # nothing on a new volume
        s.run(['mkfs.ext4', '-q', device], step='mkfs', sudo=True)
        s.run(['mkdir', '-p', VOLUME_MOUNT], step='mkdir', sudo=True)
        s.run(['mount', device, VOLUME_MOUNT], step='mount', sudo=True)
        export_dir = f'{VOLUME_MOUNT}/nfs/pv1'
        s.run(['mkdir', '-p', export_dir], step='export dir', sudo=True)
        missing = s.run(['exportfs', '-s'], step='no server', sudo=True,
                        check=False)
        assert missing.exit_status == 127
        s.run(['apt-get', 'install', '-y', 'nfs-kernel-server'],
              step='install', sudo=True)
        subnet = small_lab.state.subnet
        s.upload(f'{export_dir} {subnet}({NFS_OPTIONS})\n',
                 '/etc/exports.d/kubernetes-mgmt.exports', step='exports',
                 sudo=True)
        s.run(['systemctl', 'enable', '--now', 'nfs-server'], step='enable',
              sudo=True)
        s.run(['exportfs', '-ra'], step='exportfs', sudo=True)
        active = s.run(['exportfs', '-s'], step='list', sudo=True).stdout
        assert active.split() == [
            export_dir, f'{subnet}(sync,wdelay,hide,no_subtree_check,'
            'sec=sys,rw,secure,no_root_squash,no_all_squash)']

        master = small_lab.state.hosts[0]
        m = sessions(master)
        m.run(['apt-get', 'install', '-y', 'nfs-common'], step='client',
              sudo=True)
        version = m.run(['dpkg-query', '-W', '-f=${Status}', 'nfs-common'],
                        step='query').stdout
        assert version == 'install ok installed'
    finally:
        small_lab.remove_host(storage.name)


ADMIN = ['--kubeconfig', '/etc/kubernetes/admin.conf']
NEW = 'v1.37.1'
DAY = 86400


def _vip_holders(lab, hosts) -> list[str]:
    return [h.name for h in hosts if f' {lab.state.vip}/' in lab.run_in_host(
        h.name, ['ip', '-br', 'addr', 'show', 'eth0']).stdout]


def test_a_vm_powered_off_and_on_comes_back_with_its_services(
        small_lab, kubeadm_cluster):
    """A crash, then a boot: the lab's VM failure for the automatic heal.
    Off: the VM answers nothing, its node goes NotReady, the VIP it held
    moves. On: sshd, the enabled units (keepalived, the kubelet and with
    it etcd and the API server) start again, and the VIP is held once."""
    master, _ = kubeadm_cluster
    lab, state = small_lab, small_lab.state
    login = Login(state.username, state.password)
    view = ClusterView(state.cluster_dir)
    others = [h for h in state.hosts if h.role == 'master' and h != master]
    with Sessions(lab.known_hosts()) as pool:
        m = pool.get(Endpoint(master.ip, login, label=master.name))
        m.upload(CNI_MANIFEST, '/root/cni.yaml', step='cni', sudo=True)
        m.run(['kubectl', *ADMIN, 'apply', '-f', '/root/cni.yaml'],
              step='cni', sudo=True)
        for rank, host in enumerate(others):
            s = pool.get(Endpoint(host.ip, login, label=host.name))
            s.run(['apt-get', 'install', '-y', 'keepalived'],
                  step='install', sudo=True)
            s.upload(KEEPALIVED.format(
                state='BACKUP', priority=90 - rank, secret='lab-vrrp',
                vip=state.vip), '/etc/keepalived/keepalived.conf',
                step='keepalived.conf', sudo=True, mode=0o600)
            s.run(['systemctl', 'restart', 'keepalived'], step='start',
                  sudo=True)
    assert poll(lambda: view.node_ready(master.name), deadline=30,
                what='master Ready')
    assert poll(lambda: len(_vip_holders(lab, others)) == 1 and
                _vip_holders(lab, others), deadline=15, what='VIP held')
    holder = next(h for h in others if h.name in _vip_holders(lab, others))

    lab.power_off(master.name)
    lab.power_off(holder.name)
    assert not lab.sshd_up(master.name)
    assert not net.port_open(master.ip, 6443, timeout=0.5)
    assert not view.node_ready(master.name)
    assert poll(lambda: _vip_holders(lab, others) == [
        h.name for h in others if h != holder] and 'moved',
        deadline=15, what='VIP moved')

    lab.power_on(master.name)
    lab.power_on(holder.name)
    assert poll(lambda: view.node_ready(master.name), deadline=30,
                what='master Ready again')
    assert poll(lambda: len(_vip_holders(lab, others)) == 1 and 'one',
                deadline=15, what='VIP held once')
    assert lab.run_in_host(holder.name, ['systemctl', 'is-active',
                                         'keepalived']).stdout.strip() \
        == 'active'
    # The boot goes on after sshd: etcd, then the API server.
    assert poll(lambda: net.port_open(master.ip, 6443, timeout=0.5),
                deadline=60, what='API server back')
    with Sessions(lab.known_hosts()) as pool:
        m = pool.get(Endpoint(master.ip, login, label=master.name))
        # The API server and etcd are back: the cluster answers.
        nodes = m.run(['kubectl', *ADMIN, 'get', 'nodes', '-o', 'name'],
                      step='nodes', sudo=True).stdout.split()
    assert f'node/{master.name}' in nodes
    assert [mb['name'] for mb in view.etcd_members()] == [master.name]


def _upgrade_node(run, node: str, first_master: bool, kubectl) -> None:
    """kubeadm's documented procedure for one node, by hand: drain,
    kubeadm package, kubeadm upgrade, kubelet and kubectl packages,
    kubelet restart, uncordon."""
    kubectl('drain', node, '--ignore-daemonsets', '--delete-emptydir-data')
    run('apt-get', 'install', '-y', 'kubeadm=1.37.*')
    if first_master:
        run('kubeadm', 'upgrade', 'plan')
        run('kubeadm', 'upgrade', 'apply', NEW, '--yes')
    else:
        run('kubeadm', 'upgrade', 'node')
    run('apt-get', 'install', '-y', 'kubelet=1.37.*', 'kubectl=1.37.*')
    run('systemctl', 'daemon-reload')
    run('systemctl', 'restart', 'kubelet')
    kubectl('uncordon', node)


def test_kubeadm_upgrade_by_hand_from_1_36_to_1_37(small_lab, sessions,
                                                   kubeadm_cluster):
    """Last in this module: it moves the module's cluster to 1.37."""
    master, worker = kubeadm_cluster
    m, w = sessions(master), sessions(worker)
    cdir = small_lab.state.cluster_dir
    view = ClusterView(cdir)

    def on(session):
        return lambda *argv: session.run(list(argv), step=argv[0],
                                         sudo=True).stdout

    def kubectl(*argv):
        return m.run(['kubectl', *ADMIN, *argv], step='kubectl',
                     sudo=True).stdout

    m.upload(CNI_MANIFEST, '/root/cni.yaml', step='cni', sudo=True)
    kubectl('apply', '-f', '/root/cni.yaml')
    assert poll(lambda: all(view.node_ready(h.name)
                            for h in (master, worker)),
                deadline=30, what='nodes Ready')
    # The 1.36 repository has no 1.37 packages, as on pkgs.k8s.io.
    refused = m.run(['apt-get', 'install', '-y', 'kubeadm=1.37.*'],
                    step='refused', sudo=True, check=False)
    assert refused.exit_status == 100
    assert "E: Version '1.37.*' for 'kubeadm' was not found" in \
        refused.stderr
    for session in (m, w):
        use_repository(session, small_lab.state.mirror_url, '1.37')

    _upgrade_node(on(m), master.name, True, kubectl)
    assert view.node(worker.name)['status']['nodeInfo'][
        'kubeletVersion'] == 'v1.36.4'          # not its turn yet
    _upgrade_node(on(w), worker.name, False, kubectl)

    assert {n['metadata']['name']: n['status']['nodeInfo']['kubeletVersion']
            for n in view.nodes()} == {master.name: NEW, worker.name: NEW}
    versions = json.loads(kubectl('version', '-o', 'json'))
    assert versions['serverVersion']['gitVersion'] == NEW
    assert versions['clientVersion']['gitVersion'] == NEW   # real kubectl
    assert view.info()['kubernetes_version'] == NEW
    assert half_upgraded(cdir) == []
    steps = [c['what'] for c in node_histories(cdir)[master.name]
             if c['what'] in ('cordon', 'upgrade-apply-start',
                              'upgrade-apply-end', 'kubelet-start',
                              'uncordon')]
    assert steps[-5:] == ['cordon', 'upgrade-apply-start',
                          'upgrade-apply-end', 'kubelet-start', 'uncordon']

    # Certificates aged by the lab clock show in check-expiration.
    try:
        set_clock_offset(cdir, days=345)
        info = json.loads(m.run(['kubeadm', 'certs', 'check-expiration',
                                 '-o', 'json'], step='certs',
                                sudo=True).stdout)
    finally:
        set_clock_offset(cdir, days=0)
    left = {c['name']: c['residualTime'] for c in info['certificates']}
    assert 19 * DAY < left['apiserver'] <= 20 * DAY
    assert max(left.values()) <= 20 * DAY

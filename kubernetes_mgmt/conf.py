"""oslo.config options of the plugin: the Mgmt Driver's in the
``[kubernetes_mgmt]`` group, the CNF infra driver's in
``[kubernetes_cnf]``.

``list_opts`` is registered as an ``oslo.config.opts`` entry point so that
``oslo-config-generator --namespace kubernetes_mgmt`` renders a sample.
"""
from __future__ import annotations

from oslo_config import cfg

GROUP = 'kubernetes_mgmt'
CNF_GROUP = 'kubernetes_cnf'

ssh_opts = [
    cfg.IntOpt('ssh_connect_deadline', default=600, min=1,
               help='Seconds to keep retrying an SSH connection (with '
                    'backoff) before giving up; VMs may still be booting.'),
    cfg.IntOpt('bystander_connect_deadline', default=20, min=1,
               help='Seconds to keep retrying SSH to a node that is not '
                    'part of the operation (another node whose /etc/hosts '
                    'a scale or heal refreshes, a master tried as the '
                    'one that runs kubectl). Such nodes were running '
                    'before, so they are not waited for as long as a '
                    'booting VM: an unreachable one is skipped with a '
                    'warning, and the next operation repairs it. All are '
                    'tried in parallel.'),
    cfg.IntOpt('ssh_connect_timeout', default=10, min=1,
               help='Seconds a single SSH connection attempt may take.'),
    cfg.IntOpt('command_timeout', default=600, min=1,
               help='Default seconds a remote command may run; then its '
                    'process group is killed on the VM.'),
    cfg.IntOpt('sftp_timeout', default=120, min=1,
               help='Seconds one file transfer to or from a VM (SFTP, or '
                    'sudo install for a root file) may take.'),
    cfg.IntOpt('install_timeout', default=1800, min=1,
               help='Seconds a node installation step may run.'),
    cfg.BoolOpt('host_key_checking', default=True,
                help='Log in to a VM only when its SSH host key is known: '
                     'the key stored for its Nova server by an earlier '
                     'operation, else a key the VM printed to its console '
                     'at first boot (cloud-init; read through Nova\'s '
                     'os-getConsoleOutput). False trusts unknown and '
                     'changed keys unverified, with a warning: only for '
                     'labs without a console log.'),
]

orchestration_opts = [
    cfg.IntOpt('max_parallel_hosts', default=20, min=1,
               help='How many hosts are prepared or joined at the same '
                    'time. Control-plane joins always run one at a time.'),
    cfg.IntOpt('node_ready_timeout', default=900, min=1,
               help='Seconds to wait until every node reports Ready.'),
    cfg.IntOpt('stack_settle_timeout', default=600, min=1,
               help='Seconds a scale-out or heal waits, before it reads '
                    'the stack, for Heat to finish the stack update that '
                    'Tacker started; a stack that Heat leaves *_FAILED '
                    'fails the operation at once.'),
    cfg.IntOpt('drain_timeout', default=300, min=1,
               help='Seconds "kubectl drain" may take to evict the pods '
                    'of a node that is scaled in or healed. Evictions '
                    'that a PodDisruptionBudget forbids are retried until '
                    'then; after that the operation fails with the node '
                    'cordoned but not deleted.'),
    cfg.IntOpt('etcd_snapshot_retention', default=3, min=1,
               help='etcd snapshots kept per cluster, the newest ones, in '
                    'each place they are kept (the storage server, else '
                    'every master). One is taken before each change of '
                    'the control plane (a master heal, an upgrade).'),
    cfg.IntOpt('volume_timeout', default=300, min=1,
               help='Seconds to wait until a registered PersistentVolume '
                    'is Available, or a deleted one is gone.'),
]

kubernetes_opts = [
    cfg.StrOpt('kubernetes_version', default='1.37',
               regex=r'^1\.[0-9]{2,3}$',
               help='Kubernetes minor version to install (kubelet, kubeadm '
                    'and kubectl from pkgs.k8s.io are pinned to it).'),
    cfg.StrOpt('apt_repository_url',
               help='Base URL of the Kubernetes apt repository (a mirror '
                    'for sites without internet). "{minor}" in it is '
                    'replaced by the minor version a node installs (e.g. '
                    '1.37): each minor has its own repository, as on '
                    'pkgs.k8s.io, and an upgrade moves the nodes to the '
                    'next one. Default: '
                    'https://pkgs.k8s.io/core:/stable:/v{minor}/deb/'),
    cfg.StrOpt('apt_key_url',
               help='URL of the repository signing key ("{minor}" as in '
                    'apt_repository_url). Default: '
                    '<apt_repository_url>Release.key'),
    cfg.ListOpt('apt_key_fingerprints',
                default=['DE15B14486CD377B9E876E1A234654DA9A296436'],
                help='OpenPGP fingerprints (40 hex digits) the Kubernetes '
                     'apt repository key must have; a node refuses any '
                     'other key before installing anything. The default '
                     'is the key of pkgs.k8s.io. A site mirror that '
                     'signs with its own key names that key here; a '
                     'request may name its own '
                     '(k8s_cluster_installation_param.'
                     'apt_key_fingerprints).'),
    cfg.StrOpt('image_repository',
               help='Registry that holds the control-plane images '
                    '(kubeadm imageRepository), e.g. a local mirror. '
                    'containerd\'s sandbox (pause) image comes from it '
                    'too, at the tag kubeadm names for the cluster\'s '
                    'version. Default: registry.k8s.io.'),
    cfg.ListOpt('registry_mirrors', default=[],
                help='containerd registry mirrors as registry=url pairs, '
                     'e.g. docker.io=https://mirror.example:5000'),
    cfg.StrOpt('cni', default='calico', choices=['calico', 'flannel'],
               help='Pod network add-on installed after kubeadm init.'),
    cfg.StrOpt('cni_manifest',
               help='Manifest of the pod network add-on: a URL, or a path '
                    'inside the VNF package. Default: the pinned upstream '
                    'manifest of the chosen CNI (checked against its '
                    'pinned SHA-256).'),
    cfg.StrOpt('cni_manifest_sha256', regex=r'^[0-9a-fA-F]{64}$',
               help='SHA-256 (64 hex digits) of cni_manifest. Required '
                    'when cni_manifest is a URL: the node refuses to apply '
                    'a download with another hash. Optional for a package '
                    'file (TOSCA.meta already pins it); when set, the '
                    'file must match it. Not used without cni_manifest '
                    '(the default manifests are pinned in the plugin).'),
    cfg.StrOpt('compute_host_label', default='CIS-node',
               regex=r'^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?'
                     r'[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$',
               help='Node label that carries the compute host of a worker '
                    'in an anti-affinity server group (its server\'s '
                    'OS-EXT-SRV-ATTR:host), for pod affinity rules.'),
    cfg.ListOpt('zone_labels',
                default=['topology.kubernetes.io/zone', 'kubernetes.io/zone'],
                help='Node labels set to the availability zone a Grant '
                     'gives a VM. topology.kubernetes.io/zone is the key '
                     'the scheduler and topology spread constraints use; '
                     'kubernetes.io/zone is the older documented one. '
                     'Empty: no zone labels.'),
    cfg.PortOpt('lb_port', default=16443,
                help='Port HAProxy listens on for the API server in HA '
                     'clusters (never 6443, which kube-apiserver uses).'),
]

# The guards of every node heal (cluster.heal_guard): an alert may heal
# with no human to stop it.
heal_guard_opts = [
    cfg.StrOpt('heal_max_unhealthy', default='40%',
               regex=r'^\d+%?$',
               help='Workers that may be unhealthy (NotReady, or their VM '
                    'not answering) for a node heal to go on: a count, or '
                    'a percentage of the workers rounded down but at least '
                    'one (0% and 0: none). With more, '
                    'the cause is likely not the nodes (network, storage, '
                    'the cloud) and the heal is refused naming them, as '
                    'Cluster API\'s MachineHealthCheck maxUnhealthy does. '
                    'A heal with additionalParams.force: true goes on.'),
    cfg.IntOpt('heal_repeat_limit', default=3, min=1,
               help='Heals of one node within heal_repeat_window after '
                    'which it is not healed again without '
                    'additionalParams.force: true (its rebuilds do not '
                    'cure it, so an alert must not loop).'),
    cfg.IntOpt('heal_repeat_window', default=3600, min=1,
               help='Seconds over which heal_repeat_limit counts a '
                    'node\'s heals.'),
]

# What Prometheus scrapes for the automatic heal (monitoring.targets).
monitoring_opts = [
    cfg.StrOpt('monitoring_targets_dir',
               help='A directory Prometheus reads with file_sd_configs: '
                    'at the end of every operation that changes the '
                    'nodes, the driver writes there one file per VNF '
                    'instance naming each node\'s node exporter with its '
                    'vnf_instance_id and vnfc_info_id, and removes it at '
                    'terminate. Unset: no file. With conductors on '
                    'several hosts, a directory they share.'),
    cfg.PortOpt('node_exporter_port', default=9100,
                help='The port of the node exporter on every VM.'),
    cfg.URIOpt('alertmanager_url', schemes=['http', 'https'],
               help='The Alertmanager that posts to Tacker\'s '
                    '/alert/auto_healing, e.g. http://alertmanager:9093. '
                    'Set: each heal of an instance with isAutohealEnabled '
                    'logs the auto-heal alerts firing for the VNFCs it '
                    'names (Tacker passes the driver no trace of them). '
                    'Read only; a failure to read it is logged and '
                    'changes nothing.'),
]

# The control plane's certificates (kubeadm issues them for one year).
certificate_opts = [
    cfg.IntOpt('cert_renew_days', default=30, min=1, max=364,
               help='Every operation that reaches the cluster reads the '
                    'expiry of the control plane\'s certificates on each '
                    'master (kubeadm certs check-expiration); when fewer '
                    'than this many days remain on any certificate '
                    'kubeadm manages, on any master, they are renewed on '
                    'every master, one master at a time (kubeadm certs '
                    'renew all, then its control-plane pods restarted). '
                    'Exactly this many days left is not yet due.'),
    cfg.IntOpt('control_plane_restart_timeout', default=300, min=1,
               help='Seconds each stage of restarting a master\'s '
                    'control-plane pods after a certificate renewal may '
                    'take: the old containers stopped, new ones running, '
                    'the API server serving through that master again.'),
]

# Seams: each names an entry point of its group (kubernetes_mgmt.seams);
# the product provides "tacker", other distributions (the lab) add theirs.
tacker_opts = [
    cfg.StrOpt('vnf_package_source', default='tacker',
               help='Where VNF package files (install script, manifests) '
                    'are read from: an entry point of group '
                    'kubernetes_mgmt.package_sources. "tacker": the '
                    'package Tacker unpacked for the VNF.'),
    cfg.StrOpt('vim_registry', default='tacker',
               help='Where the cluster is registered as a VIM: an entry '
                    'point of group kubernetes_mgmt.vim_registries. '
                    '"tacker": Tacker\'s NFVO (in tacker-conductor).'),
    cfg.StrOpt('heat_client', default='tacker',
               help='How the Heat client for a VNF\'s stack is made: an '
                    'entry point of group kubernetes_mgmt.heat_clients. '
                    '"tacker": through the VNF\'s OpenStack VIM, as '
                    'Tacker\'s OpenStack infra driver does.'),
    cfg.IntOpt('openstack_api_timeout', default=60, min=1,
               help='Seconds one request of the "tacker" Heat client to '
                    'the OpenStack VIM (Keystone, Heat) may take; a '
                    'server that accepts but does not answer fails the '
                    'operation after that instead of holding it.'),
]

# What the driver stores in each VNF instance, and how it is protected.
state_opts = [
    cfg.StrOpt('state_key_file',
               default='/etc/tacker/kubernetes_mgmt/state.key',
               help='File holding the key that signs the driver\'s state '
                    'stored in each VNF instance (vnf_metadata), so that '
                    'an edit through Tacker\'s API is detected. Created '
                    '(mode 0600, with a warning in the log) by the first '
                    'instantiate on a host that has never verified any '
                    'stored state; never replaced. Every tacker-conductor '
                    'host of a site needs the same file: copy it to each '
                    'before it serves VNFs, and keep it like Tacker\'s '
                    'VIM keys. A conductor without it refuses to load '
                    'stored state.'),
    cfg.StrOpt('state_generation_dir',
               help='Directory where this host keeps, per VNF instance, '
                    'the highest generation of stored state it has seen, '
                    'so that an older signed copy put back through '
                    'Tacker\'s API, or a blanked state, is refused. '
                    'Default: "generations" beside state_key_file. Per '
                    'host unless shared: put it on storage every '
                    'tacker-conductor host mounts (as for '
                    '[vnf_package] vnf_package_csar_path) for site-wide '
                    'protection.'),
    cfg.BoolOpt('trust_unsigned_state', default=False,
                help='Accept, once, driver state stored without '
                     'signatures by plugin versions before 0.2, and sign '
                     'it. Only for upgrading such VNF instances; turn it '
                     'off again afterwards.'),
]

# The CNF infra driver (kubernetes-namespaced): how long it waits.
cnf_opts = [
    cfg.IntOpt('ready_timeout', default=600, min=1,
               help='Seconds the objects of an instantiated CNF may take '
                    'to become ready (image pulls included).'),
    cfg.IntOpt('scale_timeout', default=600, min=1,
               help='Seconds the pods of a scaled workload may take to '
                    'settle.'),
    cfg.IntOpt('heal_timeout', default=600, min=1,
               help='Seconds a replacement pod may take to become ready.'),
    cfg.IntOpt('delete_timeout', default=300, min=1,
               help='Seconds deleted objects may take to disappear (a '
                    'terminate\'s graceful timeout is added).'),
    cfg.IntOpt('request_timeout', default=60, min=1,
               help='Seconds one request to the Kubernetes API may take.'),
]

_ALL = (ssh_opts, orchestration_opts, kubernetes_opts,
        certificate_opts, heal_guard_opts, monitoring_opts, tacker_opts,
        state_opts)


def register_opts(conf: cfg.ConfigOpts = cfg.CONF) -> None:
    group = cfg.OptGroup(GROUP, title='Kubernetes Mgmt Driver options')
    conf.register_group(group)
    for opts in _ALL:
        conf.register_opts(opts, group=group)
    conf.register_group(cfg.OptGroup(
        CNF_GROUP, title='Kubernetes CNF infra driver options'))
    conf.register_opts(cnf_opts, group=CNF_GROUP)


def list_opts():
    return [(GROUP, [opt for opts in _ALL for opt in opts]),
            (CNF_GROUP, list(cnf_opts))]


register_opts()
CONF = cfg.CONF

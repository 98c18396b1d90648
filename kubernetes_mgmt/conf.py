"""oslo.config options of the plugin, in the ``[kubernetes_mgmt]`` group.

``list_opts`` is registered as an ``oslo.config.opts`` entry point so that
``oslo-config-generator --namespace kubernetes_mgmt`` renders a sample.
"""
from __future__ import annotations

from oslo_config import cfg

GROUP = 'kubernetes_mgmt'

ssh_opts = [
    cfg.IntOpt('ssh_connect_deadline', default=600, min=1,
               help='Seconds to keep retrying an SSH connection (with '
                    'backoff) before giving up; VMs may still be booting.'),
    cfg.IntOpt('ssh_connect_timeout', default=10, min=1,
               help='Seconds a single SSH connection attempt may take.'),
    cfg.IntOpt('command_timeout', default=600, min=1,
               help='Default seconds a remote command may run.'),
    cfg.IntOpt('install_timeout', default=1800, min=1,
               help='Seconds a node installation step may run.'),
    cfg.BoolOpt('host_key_checking', default=True,
                help='Remember each VM\'s SSH host key per VNF instance and '
                     'refuse a changed key unless that VM is being '
                     'replaced. Turn off only for lab or debug use.'),
]

orchestration_opts = [
    cfg.IntOpt('max_parallel_hosts', default=10, min=1,
               help='How many hosts are prepared or joined at the same '
                    'time. Control-plane joins always run one at a time.'),
]

heat_opts = [
    cfg.StrOpt('heat_endpoint',
               help='Use this Heat endpoint URL instead of the one found '
                    'through the VNF\'s OpenStack VIM (lab and testing).'),
    cfg.StrOpt('heat_token', secret=True,
               help='Token sent with requests to heat_endpoint.'),
]


def register_opts(conf: cfg.ConfigOpts = cfg.CONF) -> None:
    group = cfg.OptGroup(GROUP, title='Kubernetes Mgmt Driver options')
    conf.register_group(group)
    for opts in (ssh_opts, orchestration_opts, heat_opts):
        conf.register_opts(opts, group=group)


def list_opts():
    return [(GROUP, ssh_opts + orchestration_opts + heat_opts)]


register_opts()
CONF = cfg.CONF

"""The lab's own options, in ``[kubernetes_mgmt_lab]``.

They belong to the lab's implementations of the product's seams (see
``kubernetes_mgmt_lab.seams``), never to the product's option list.
"""
from __future__ import annotations

from oslo_config import cfg

GROUP = 'kubernetes_mgmt_lab'

lab_opts = [
    cfg.URIOpt('heat_auth_url',
               help='Keystone v3 URL of the lab\'s real Heat (heat_client = '
                    'lab); with heat_username, heat_password and '
                    'heat_project, the admin of the services root.'),
    cfg.StrOpt('heat_username', default='admin',
               help='User that reads the stacks (heat_auth_url).'),
    cfg.StrOpt('heat_password', secret=True,
               help='Password of heat_username.'),
    cfg.StrOpt('heat_project', default='admin',
               help='Project of the stacks (heat_auth_url).'),
    cfg.StrOpt('vnf_package_dir',
               help='Directory read as the VNF package '
                    '(vnf_package_source = directory).'),
    cfg.StrOpt('vim_registry_file',
               help='JSON file that stands in for Tacker\'s VIM database '
                    '(vim_registry = file).'),
    cfg.StrOpt('state_file',
               help='The lab\'s state file (hosts, addresses, secrets).'),
]


def register_opts(conf: cfg.ConfigOpts = cfg.CONF) -> None:
    conf.register_group(cfg.OptGroup(GROUP, title='Kubernetes mgmt lab'))
    conf.register_opts(lab_opts, group=GROUP)


def list_opts():
    return [(GROUP, list(lab_opts))]


register_opts()
CONF = cfg.CONF

"""Tacker 16 from PyPI with this plugin installed into its venv as
README tells operators: tacker-server and one long-lived
tacker-conductor, on MariaDB and RabbitMQ."""
from __future__ import annotations

import glob
import json
import os
import shutil
import tempfile
import uuid
import zipfile
from collections.abc import Callable

from kubernetes_mgmt_lab import filelock
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.openstack import conffile, mariadb, processes
from kubernetes_mgmt_lab.openstack.layout import HOST, Root
from kubernetes_mgmt_lab.openstack.venvs import Venv
from kubernetes_mgmt_lab.sysrun import run

NAME = 'tacker'
VENV = Venv(NAME, {'tacker': '16.0.0'}, ('PyMySQL',))
PLUGIN = 'tacker-kubernetes-mgmt'
PACKAGE = 'kubernetes_mgmt'
MGMT_LOG_LINE = 'Registered drivers from tacker.tacker.mgmt.drivers'
MGMT_DRIVERS = 'vnflcm_noop,mgmt-drivers-kubernetes'
CONDUCTOR_HOST = 'conductor-a'
# Tacker's defaults, plus the driver manager at DEBUG: its "Registered
# drivers" line is how an operator sees which Mgmt Drivers loaded.
LOG_LEVELS = ('amqp=WARN,amqplib=WARN,sqlalchemy=WARN,oslo.messaging=INFO,'
              'iso8601=WARN,urllib3.connectionpool=WARN,'
              'requests.packages.urllib3.connectionpool=WARN,'
              'keystonemiddleware=WARN,routes.middleware=WARN,'
              'stevedore=WARN,tacker.common.driver_manager=DEBUG')


def url(port: int) -> str:
    return f'http://{HOST}:{port}/'


def conf_path(root: Root) -> str:
    return root.of(NAME, 'tacker.conf')


def install_plugin(source: str) -> None:
    """``pip install`` of the plugin's checkout, not editable (README,
    "Install into Tacker"), unless the venv already holds exactly what
    its wheel holds, so the conductor runs the checkout's code. The venv
    is shared by every services root of this machine (CI starts three at
    once): the check and the install hold a lock, the wheel is built
    from a clean copy (a build/ left in the checkout can put stale files
    in it), and what is installed is judged by its files, never by a note
    of the last install. A reinstall pulls files from under a running
    conductor, so it happens only when they differ."""
    with filelock.exclusive(os.path.join(VENV.path, INSTALL_LOCK)), \
            tempfile.TemporaryDirectory(prefix='kmgmt-wheel-') as work:
        wheel = _build_wheel(source, work)
        if _installed_as_in(wheel):
            return
        VENV.pip_install(wheel)     # its dependencies
        VENV.pip_install('--no-deps', '--force-reinstall', wheel)
        if not _installed_as_in(wheel):
            raise LabError(f'the plugin installed into {VENV.path} differs '
                           f'from the wheel of {source}')


INSTALL_LOCK = 'kubernetes-mgmt-install.lock'
# What setup.py builds the wheel from (the package, its scripts and
# samples, the build files).
SOURCE_PARTS = ('setup.py', 'setup.cfg', 'kubernetes_mgmt', 'scripts',
                'samples')


def _build_wheel(source: str, work: str) -> str:
    clean = os.path.join(work, 'source')
    for part in SOURCE_PARTS:
        path = os.path.join(source, part)
        if os.path.isdir(path):
            shutil.copytree(path, os.path.join(clean, part),
                            ignore=shutil.ignore_patterns('__pycache__'))
        else:
            os.makedirs(clean, exist_ok=True)
            shutil.copy2(path, clean)
    run([VENV.bin('pip'), 'wheel', '-q', '--no-deps', '--use-pep517',
         '-w', work, clean])
    (wheel,) = glob.glob(os.path.join(work, '*.whl'))
    return wheel


def _installed_as_in(wheel: str) -> bool:
    """Whether every file of the wheel's package is installed in the
    venv with the same content."""
    found = glob.glob(os.path.join(VENV.path, 'lib', 'python3*',
                                   'site-packages'))
    if not found:
        return False
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            if not info.filename.startswith(f'{PACKAGE}/') or \
                    info.is_dir():
                continue
            installed = os.path.join(found[0], info.filename)
            try:
                with open(installed, 'rb') as f:
                    if f.read() != archive.read(info):
                        return False
            except OSError:
                return False
    return True


def state_key_file(root: Root) -> str:
    """The plugin's state key of the root's (first) conductor."""
    return os.path.join(root.service_dir(NAME), 'kubernetes_mgmt',
                        'state.key')


def configure(root: Root, port: int, keystone_url: str, password: str,
              database_url: str, transport_url: str,
              plugin_options: dict[str, str]) -> None:
    base = root.service_dir(NAME)
    conffile.write(conf_path(root), {
        'DEFAULT': {'bind_host': HOST, 'bind_port': str(port),
                    # The conductor's name on the bus (RPC server), as
                    # on a site with one conductor per host (a second
                    # one: openstack.conductors).
                    'host': CONDUCTOR_HOST,
                    'auth_strategy': 'keystone',
                    'transport_url': transport_url,
                    'api_paste_config': os.path.join(
                        VENV.path, 'etc', 'tacker', 'api-paste.ini'),
                    # The v2 API's locks (tooz, file backend) live under
                    # state_path: the root's, not /var/lib/tacker.
                    'state_path': base,
                    # oslo.log files named after each program: the
                    # services' logs, and the v2 LCM script's own
                    # (tacker_kubernetes_mgmt_v2.py.log), which Tacker
                    # does not show when the script succeeds.
                    'log_dir': root.log_dir(),
                    'default_log_levels': LOG_LEVELS},
        'database': {'connection': database_url},
        # README, "CNF infra driver": the plugin's kubernetes-namespaced
        # driver serves Kubernetes VIMs (v1 scale reads infra_driver).
        'tacker': {'vnflcm_mgmt_driver': MGMT_DRIVERS,
                   'vnflcm_infra_driver': 'openstack,kubernetes-namespaced',
                   'infra_driver': 'noop,openstack,kubernetes-namespaced'},
        'vnf_package': {'vnf_package_csar_path':
                        os.path.join(base, 'vnfpackages')},
        'glance_store': {'default_store': 'file', 'stores': 'file',
                         'filesystem_store_datadir':
                         os.path.join(base, 'csar_files')},
        'oslo_concurrency': {'lock_path': os.path.join(base, 'lock')},
        # Tacker's default poll interval (10 s), with a 10-minute ceiling.
        # Not shorter: v1's scale_wait looks once one interval after its
        # scaling signal, and if Heat has not started the scaling by then
        # (no member IN_PROGRESS, no new policy event) it logs "skip
        # scaling" and goes on with the stack as it was. Heat took 4 s to
        # start on a loaded CI machine, so with 1 s a scale-in kept its
        # removed worker in Tacker's VNFCs and a scale-out never ended.
        'openstack_vim': {'stack_retry_wait': '10', 'stack_retries': '60'},
        # VIM password keys in the root, not /etc/tacker/vim/fernet_keys.
        'vim_keys': {'openstack': os.path.join(base, 'vim_keys'),
                     'use_barbican': 'false'},
        # Tacker stores a Kubernetes VIM only with Barbican (the key of
        # its token); found in the catalog as key-manager.
        'k8s_vim': {'use_barbican': 'true'},
        # Alertmanager's auto_heal alerts (POST /alert/auto_healing) heal
        # the VNFCs they name, gathered for 5 s (default 20).
        'prometheus_plugin': {'auto_healing': 'True',
                              'timer_interval': '5'},
        'keystone_authtoken': conffile.authtoken(keystone_url, NAME,
                                                 password),
        # The plugin's key that signs its stored state, beside tacker.conf
        # (its generations beside it).
        'kubernetes_mgmt': {'state_key_file': state_key_file(root),
                            **plugin_options},
    })
    for sub in ('vnfpackages', 'csar_files', 'lock', 'vim_keys'):
        os.makedirs(os.path.join(base, sub), exist_ok=True)


def setup(root: Root) -> None:
    run([VENV.bin('tacker-db-manage'), '--config-file', conf_path(root),
         'upgrade', 'head'], timeout=600)


def start_server(root: Root, port: int) -> int:
    pid = processes.spawn([VENV.bin('tacker-server'), '--config-file',
                           conf_path(root)], root.log('tacker-server'))
    processes.wait_ready('tacker-server', pid,
                         lambda: processes.answers(url(port)),
                         root.log('tacker-server'))
    return pid


def start_conductor(root: Root, consuming: Callable[[], bool], *,
                    name: str = 'tacker-conductor',
                    conf: str | None = None) -> int:
    """Start a conductor (``name``: its log's; ``conf``: its tacker.conf,
    default the root's); ready once it has loaded its drivers (its log
    says so) and ``consuming`` (its RPC queue has a consumer) holds."""
    log = root.log(name)
    offset = os.path.getsize(log) if os.path.exists(log) else 0
    pid = processes.spawn([VENV.bin('tacker-conductor'), '--config-file',
                           conf or conf_path(root)], log)
    processes.wait_ready(
        name, pid,
        lambda: loaded_drivers(log, offset) is not None and consuming(),
        log)
    return pid


def loaded_drivers(log_path: str, offset: int = 0) -> str | None:
    """The conductor's "Registered drivers" line for Mgmt Drivers, from
    ``offset`` in its log, or None."""
    try:
        with open(log_path, encoding='utf-8', errors='replace') as f:
            f.seek(offset)
            text = f.read()
    except OSError:
        return None
    for line in text.splitlines():
        if MGMT_LOG_LINE in line:
            return line
    return None


# Run in Tacker's venv: Tacker's own VimClient decrypts a VIM's
# credentials (the key from Barbican) as the conductor does for a CNF.
_VIM_AUTH = '''
import json, sys
from tacker import context, objects
from tacker.common import config
# Registers [keystone_authtoken] as the conductor does (key manager).
from tacker.conductor import conductor_server  # noqa: F401
from tacker.vnfm import vim_client
config.init(['--config-file', sys.argv[1]])
objects.register_all()
vim = vim_client.VimClient().get_vim(context.get_admin_context(),
                                     sys.argv[2])
json.dump(vim['vim_auth'], sys.stdout)
'''


def vim_auth(root: Root, vim_id: str) -> dict:
    """A VIM's decrypted credentials, as Tacker hands them to an infra
    driver (for tests: they go to the caller, never to a log)."""
    proc = run([VENV.bin('python'), '-c', _VIM_AUTH, conf_path(root),
                vim_id], timeout=120, check=False)
    if proc.returncode != 0:
        raise LabError(f'Tacker could not read VIM {vim_id}: '
                       f'{proc.stderr.strip()[-500:]}')
    return json.loads(proc.stdout)


def record_vim_connection(root: Root, vnf_id: str, vim_id: str,
                          vim_type: str = 'kubernetes') -> None:
    """Make VNF instance ``vnf_id`` name ``vim_id`` in its
    vim_connection_info, straight in Tacker's database: a stand-in for a
    CNF deployed on that VIM (Tacker's API changes it only for an
    instantiated VNF)."""
    uuid.UUID(vnf_id)       # refuses anything but an id
    info = json.dumps([{'id': str(uuid.uuid4()), 'vim_id': vim_id,
                        'vim_type': vim_type, 'interface_info': {},
                        'access_info': {}, 'extra': {}}])
    value, key = mariadb.quote(info), mariadb.quote(vnf_id)
    sql = (f'UPDATE tacker.vnf_instances SET vim_connection_info = '  # noqa: S608 - quoted
           f'{value} WHERE id = {key};')
    mariadb.execute(root, sql)

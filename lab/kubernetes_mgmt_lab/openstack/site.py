"""Bring the services up in order, down by PID, and report their status."""
from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from kubernetes_mgmt.redact import get_logger
from kubernetes_mgmt_lab import net, packages, procs
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.filelock import exclusive
from kubernetes_mgmt_lab.openstack import (
    barbican,
    catalog,
    clients,
    cloud,
    glance,
    heat,
    keystone,
    mariadb,
    monitoring,
    processes,
    rabbitmq,
    tacker,
)
from kubernetes_mgmt_lab.openstack.layout import HOST, UP_LOCK, Root
from kubernetes_mgmt_lab.openstack.state import ServicesState

LOG = get_logger(__name__)

DEBIAN = {'/usr/sbin/mariadbd': 'mariadb-server',
          '/usr/bin/mariadb-install-db': 'mariadb-server',
          '/usr/sbin/rabbitmq-server': 'rabbitmq-server',
          'runuser': 'util-linux'}
VENVS = (keystone.VENV, glance.VENV, heat.VENV, barbican.VENV, tacker.VENV,
         clients.VENV)
PREFERRED_PORTS = {'mariadb': 13306, 'keystone': 5000,
                   'glance': 9292, 'cloud': 8774, 'heat': 8004,
                   'barbican': 9311, 'tacker': 9890}
# Start order.
SERVICES = ('mariadb', 'rabbitmq', 'keystone', 'glance', 'cloud',
            'heat-api', 'heat-engine', 'barbican', 'tacker-server',
            'tacker-conductor', 'alertmanager', 'prometheus')


@dataclass
class ServiceStatus:
    name: str
    pid: int | None
    url: str
    up: bool


def install() -> dict[str, float]:
    """Debian packages and the venvs; seconds each venv took (0: reused)."""
    packages.ensure({**DEBIAN, **monitoring.DEBIAN})
    with ThreadPoolExecutor(max_workers=2) as pool:
        spent = dict(zip((v.service for v in VENVS),
                         pool.map(lambda v: v.ensure(), VENVS),
                         strict=True))
    return spent


def up(root_path: str, plugin_source: str) -> ServicesState:
    """Install what is missing, start every service, write the clouds
    file; on failure stop what this call started."""
    root = Root(os.path.abspath(root_path))
    os.makedirs(root.of('log'), exist_ok=True)
    # Traversable: mysql and rabbitmq reach their own directories.
    os.chmod(root.path, 0o711)  # noqa: S103
    # One "up" at a time on this machine: two roots started together
    # would build the same shared venvs and take the same free ports.
    with exclusive(UP_LOCK):
        state = ServicesState.load_or_new(root)
        if any(processes.alive(p) for p in state.pids.values()):
            raise LabError(f'services of {root.path} are running already; '
                           '"lab tacker down" first')
        state.pids, state.epmd_pid = {}, None
        started = time.monotonic()
        state.timings = {f'install_{k}': round(v, 1)
                         for k, v in install().items()}
        tacker.install_plugin(plugin_source)
        state.timings['install_total'] = round(time.monotonic() - started,
                                               1)
        try:
            _start_all(root, state)
        except BaseException:
            LOG.error('lab tacker: start failed; stopping what started')
            down(root.path)
            raise
    return state


def _start_all(root: Root, state: ServicesState) -> None:
    started = time.monotonic()
    pw = state.passwords
    for name, preferred in PREFERRED_PORTS.items():
        state.ports[name] = net.free_port(HOST, preferred)
    state.ports['rabbitmq'], state.ports['rabbitmq_dist'] = (
        rabbitmq.free_ports())
    ports = state.ports
    state.save()

    state.pids['mariadb'] = mariadb.start(root, ports['mariadb'])
    state.save()
    mariadb.ensure_database(root, 'tacker', 'tacker', pw['mariadb_tacker'])
    mariadb.ensure_database(root, 'heat', 'heat', pw['mariadb_heat'])
    state.pids['rabbitmq'], state.epmd_pid = rabbitmq.start(
        root, ports['rabbitmq'], ports['rabbitmq_dist'])
    state.save()
    rabbitmq.ensure_user(root, 'tacker', pw['rabbit_tacker'])
    rabbitmq.ensure_user(root, 'heat', pw['rabbit_heat'])

    keystone_url = keystone.url(ports['keystone'])
    keystone.configure(root)
    keystone.setup(root, ports['keystone'], pw['admin'])
    state.pids['keystone'] = keystone.start(root, ports['keystone'])
    state.save()
    project_id = _catalog(state)

    glance.configure(root, ports['glance'], keystone_url,
                     pw['keystone_glance'])
    glance.setup(root)
    state.pids['glance'] = glance.start(root, ports['glance'])
    state.save()

    state.subnets = state.subnets or cloud.free_subnets()
    state.save()
    cloud.ensure_labs(root, state.subnets, pw['vm'])
    state.pids['cloud'] = cloud.start(root, ports['cloud'], project_id,
                                      keystone_url)
    state.save()
    _start_heat(root, state, keystone_url)
    _start_barbican(root, state, keystone_url)

    # Alertmanager's port first: the plugin logs the alerts behind a heal.
    state.ports.update(monitoring.ports())
    tacker.configure(
        root, ports['tacker'], keystone_url, pw['keystone_tacker'],
        mariadb.url('tacker', pw['mariadb_tacker'], ports['mariadb'],
                    'tacker'),
        rabbitmq.url('tacker', pw['rabbit_tacker'], ports['rabbitmq']),
        {**cloud.plugin_options(root),
         'alertmanager_url': monitoring.url(state.ports['alertmanager'])})
    tacker.setup(root)
    state.pids['tacker-server'] = tacker.start_server(root, ports['tacker'])
    state.save()
    state.pids['tacker-conductor'] = tacker.start_conductor(
        root, lambda: rabbitmq.has_consumer(root, 'TACKER_CONDUCTOR'))
    _start_monitoring(root, state)
    state.timings['start_total'] = round(time.monotonic() - started, 1)
    state.save()
    clients.write_clouds(root, keystone_url, pw['admin'])


def _start_monitoring(root: Root, state: ServicesState) -> None:
    """Prometheus and Alertmanager, alerting Tacker's auto-heal."""
    monitoring.configure(root, state.ports, tacker.url(state.ports['tacker']))
    state.pids['alertmanager'] = monitoring.start_alertmanager(
        root, state.ports['alertmanager'])
    state.save()
    state.pids['prometheus'] = monitoring.start_prometheus(
        root, state.ports['prometheus'])
    state.save()


def _catalog(state: ServicesState) -> str:
    """Service users and the catalog; the admin project's id."""
    pw, ports = state.passwords, state.ports
    ks = catalog.Keystone.login(keystone.url(ports['keystone']), 'admin',
                                pw['admin'])
    for kind, (name, path) in cloud.SERVICES.items():
        ks.service(kind, name, cloud.url(ports['cloud']) + path)
    service = ks.project('service')
    admin = ks.role('admin')
    ks.service_user('tacker', pw['keystone_tacker'], service, admin)
    ks.service_user('glance', pw['keystone_glance'], service, admin)
    ks.service('image', 'glance', glance.url(ports['glance']))
    ks.service('nfv-orchestration', 'tacker', tacker.url(ports['tacker']))
    _heat_identities(ks, state, service, admin)
    ks.service_user('barbican', pw['keystone_barbican'], service, admin)
    ks.service('key-manager', 'barbican', barbican.url(ports['barbican']))
    project = ks.project('admin')
    # A user without the admin role, for what such a VIM user sees.
    ks.service_user(keystone.MEMBER_USER, pw['keystone_member'], project,
                    ks.role('member'))
    return project


def _heat_identities(ks: catalog.Keystone, state: ServicesState,
                     service: str, admin: str) -> None:
    """Heat's user and catalog entry, its stack-user domain with that
    domain's admin, and its two roles. ``admin`` needs no
    ``heat_stack_owner``: Heat's policy lets an admin create stacks."""
    pw = state.passwords
    ks.service_user('heat', pw['keystone_heat'], service, admin)
    ks.service('orchestration', 'heat', heat.endpoint(state.ports['heat']))
    domain = ks.domain(heat.STACK_DOMAIN)
    ks.domain_admin(heat.DOMAIN_ADMIN, pw['heat_domain_admin'], domain,
                    admin)
    for role in (heat.STACK_OWNER_ROLE, heat.STACK_USER_ROLE):
        ks.role(role)


def _start_heat(root: Root, state: ServicesState, keystone_url: str
                ) -> None:
    pw, ports = state.passwords, state.ports
    heat.configure(
        root, ports['heat'], keystone_url, pw['keystone_heat'],
        pw['heat_domain_admin'],
        mariadb.url('heat', pw['mariadb_heat'], ports['mariadb'], 'heat'),
        rabbitmq.url('heat', pw['rabbit_heat'], ports['rabbitmq']))
    heat.setup(root)
    started = time.monotonic()
    state.pids['heat-api'] = heat.start_api(root, ports['heat'])
    state.save()
    state.pids['heat-engine'] = heat.start_engine(
        root, lambda: rabbitmq.has_consumer(root, heat.ENGINE_TOPIC))
    state.timings['start_heat'] = round(time.monotonic() - started, 1)
    state.save()


def _start_barbican(root: Root, state: ServicesState, keystone_url: str
                    ) -> None:
    """Barbican: where Tacker keeps the key of each Kubernetes VIM's
    token."""
    pw, port = state.passwords, state.ports['barbican']
    barbican.configure(root, port, keystone_url, pw['keystone_barbican'],
                       pw['barbican_kek'])
    barbican.setup(root)
    started = time.monotonic()
    state.pids['barbican'] = barbican.start(root, port)
    state.timings['start_barbican'] = round(time.monotonic() - started, 1)
    state.save()


# Stopped together, in this order: the Tacker processes outlive SIGTERM
# and heat-engine takes 13 to 19 s after it, so their graces overlap.
STOP_GROUPS = (('prometheus', 'alertmanager'),
               ('tacker-conductor', 'tacker-conductor-b', 'tacker-server',
                'heat-engine', 'heat-api', 'barbican'), ('cloud',),
               ('glance',), ('keystone',), ('rabbitmq',), ('mariadb',))


def down(root_path: str) -> list[str]:
    """Stop every service of the root by PID (children included), then
    anything else still running from the root; the names stopped."""
    root = Root(os.path.abspath(root_path))
    state = ServicesState.load(root)
    stopped = []
    for group in STOP_GROUPS:
        pids = {n: state.pids[n] for n in group if state.pids.get(n)}
        stopped += [n for n, pid in pids.items() if processes.alive(pid)]
        if group == ('rabbitmq',) and pids:
            rabbitmq.stop(pids['rabbitmq'], state.epmd_pid)
        else:
            processes.stop(*pids.values())
        for name in pids:
            del state.pids[name]
        state.save()
    # The VMs are processes too; Tacker's records of them stay.
    cloud.remove_labs(root)
    # A worker whose parent died early still names a file of the root.
    leftovers = procs.find(root=root.path)
    if leftovers:
        procs.terminate(leftovers)
    state.epmd_pid = None
    state.save()
    return stopped


def status(root_path: str) -> list[ServiceStatus]:
    root = Root(os.path.abspath(root_path))
    state = ServicesState.load(root)
    ports = state.ports
    urls = {'mariadb': f'mysql://{HOST}:{ports.get("mariadb")}',
            'rabbitmq': f'amqp://{HOST}:{ports.get("rabbitmq")}',
            'keystone': keystone.url(ports.get('keystone', 0)),
            'glance': glance.url(ports.get('glance', 0)),
            'cloud': cloud.url(ports.get('cloud', 0)),
            'heat-api': heat.endpoint(ports.get('heat', 0)),
            'heat-engine': '-',
            'barbican': barbican.url(ports.get('barbican', 0)),
            'tacker-server': tacker.url(ports.get('tacker', 0)),
            'tacker-conductor': '-',
            'alertmanager': monitoring.url(ports.get('alertmanager', 0)),
            'prometheus': monitoring.url(ports.get('prometheus', 0))}
    return [ServiceStatus(name, state.pids.get(name), urls[name],
                          processes.alive(state.pids.get(name)))
            for name in SERVICES]

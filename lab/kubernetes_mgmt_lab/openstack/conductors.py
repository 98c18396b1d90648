"""A second tacker-conductor, as a site's second conductor host runs it.

Production Tacker runs several conductors, on several hosts, on one
RabbitMQ: each takes operations off the shared queue. Here the second
one runs beside the first, with a tacker.conf of its own that differs as
a second host's would for this plugin: another ``[DEFAULT] host`` (its
name on the bus), and the plugin's state key and generations in a
directory of its own, where the key is only once the operator copies it
(``copy_key``). Tacker's own files (its database, VIM fernet keys, VNF
packages) are shared, as a site shares them by copy or shared storage.

Which conductor takes an operation is up to RabbitMQ; tests choose by
running one at a time (``swap``).
"""
from __future__ import annotations

import configparser
import os
import socket

from kubernetes_mgmt.state import durable
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.openstack import conffile, processes, rabbitmq, tacker
from kubernetes_mgmt_lab.openstack.layout import Root
from kubernetes_mgmt_lab.openstack.state import ServicesState

FIRST = 'tacker-conductor'          # the site's, started by site.up
SECOND = 'tacker-conductor-b'       # its name in the state and its log
SECOND_HOST = 'conductor-b'
TOPIC = 'TACKER_CONDUCTOR'
# An idle conductor outlives SIGTERM by minutes (oslo.service waits for
# its workers); one with no operation in flight loses nothing to KILL.
IDLE_GRACE = 2.0


def conf_path(root: Root, name: str) -> str:
    if name == FIRST:
        return tacker.conf_path(root)
    return root.of(tacker.NAME, name, 'tacker.conf')


def key_file(root: Root, name: str) -> str:
    """The plugin's state key file of conductor ``name``."""
    return _option(conf_path(root, name), 'kubernetes_mgmt',
                   'state_key_file') or ''


def generations_dir(root: Root, name: str) -> str:
    """Where conductor ``name`` keeps the generations it has seen (the
    default: beside its key)."""
    return os.path.join(os.path.dirname(key_file(root, name)), 'generations')


def host(root: Root, name: str) -> str:
    return _option(conf_path(root, name), 'DEFAULT', 'host') or \
        socket.gethostname()


def configure_second(root: Root) -> str:
    """The second conductor's tacker.conf, from the first's: its own host
    name, log file and plugin directory (no key in it yet)."""
    parser = _read(tacker.conf_path(root))
    sections = {name: dict(parser[name]) for name in parser.sections()}
    sections['DEFAULT'] = {**sections.get('DEFAULT', {}),
                           'host': SECOND_HOST, 'log_file': root.log(SECOND)}
    own = root.of(tacker.NAME, SECOND, 'kubernetes_mgmt')
    sections['kubernetes_mgmt'] = {
        **sections.get('kubernetes_mgmt', {}),
        'state_key_file': os.path.join(own, 'state.key')}
    sections['kubernetes_mgmt'].pop('state_generation_dir', None)
    return conffile.write(conf_path(root, SECOND), sections)


def copy_key(root: Root) -> str:
    """What the operator does on a new conductor host: the first
    conductor's state key copied to it (owner-only)."""
    with open(key_file(root, FIRST), 'rb') as f:
        key = f.read()
    target = key_file(root, SECOND)
    durable.replace(target, key, 0o600)
    return target


def start(root: Root, name: str) -> int:
    """Start conductor ``name``; ready once its own queue on the bus has a
    consumer. Its PID goes into the services state (``site.down`` stops
    it)."""
    state = ServicesState.load(root)
    if processes.alive(state.pids.get(name)):
        raise LabError(f'{name} of {root.path} is running already')
    queue = f'{TOPIC}.{host(root, name)}'
    pid = tacker.start_conductor(
        root, lambda: rabbitmq.has_consumer(root, queue), name=name,
        conf=conf_path(root, name))
    state = ServicesState.load(root)
    state.pids[name] = pid
    state.save()
    return pid


def stop(root: Root, name: str) -> None:
    """Stop conductor ``name`` (no operation may be in flight)."""
    state = ServicesState.load(root)
    processes.stop(state.pids.get(name), grace=IDLE_GRACE)
    state = ServicesState.load(root)
    state.pids.pop(name, None)
    state.save()


def running(root: Root, name: str) -> bool:
    return processes.alive(ServicesState.load(root).pids.get(name))


def swap(root: Root, to: str, away: str) -> None:
    """Conductor ``to`` takes over from ``away``: started first, so that
    the bus always has a consumer."""
    if not running(root, to):
        start(root, to)
    if running(root, away):
        stop(root, away)


def _option(path: str, section: str, option: str) -> str | None:
    return _read(path).get(section, option, fallback=None)


def _read(path: str) -> configparser.ConfigParser:
    """``path`` with [DEFAULT] as a section like the others (not merged
    into each)."""
    parser = configparser.ConfigParser(interpolation=None,
                                       default_section='\0none')
    if not parser.read(path):
        raise LabError(f'no tacker.conf at {path}')
    return parser

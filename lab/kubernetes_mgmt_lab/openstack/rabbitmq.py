"""RabbitMQ from Debian: a node of the services root (own name, ports,
data and logs), run as the ``rabbitmq`` user as Debian's wrapper does.
Passwords reach ``rabbitmqctl`` on stdin."""
from __future__ import annotations

import hashlib
import os
import shutil

from kubernetes_mgmt_lab import net
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.openstack import processes
from kubernetes_mgmt_lab.openstack.layout import HOST, Root
from kubernetes_mgmt_lab.sysrun import run

NAME = 'rabbitmq'
USER = 'rabbitmq'
HOME = '/var/lib/rabbitmq'      # its Erlang cookie
BIN = '/usr/lib/rabbitmq/bin'
EPMD_PORT = 4369
# rabbitmqctl's own Erlang node listens on one of these (the default
# distribution port + 10000 ... + 10010): a server node given one of them
# loses the race to a CLI call made while it boots and dies with
# dist_port_already_used.
CLI_DIST_PORTS = range(35672, 35683)
PREFERRED_PORT = 5673
PREFERRED_DIST_PORT = 25673


def node_name(root: Root) -> str:
    digest = hashlib.sha256(os.path.realpath(root.path).encode()).hexdigest()
    return f'kmgmt{digest[:8]}@localhost'


def free_ports() -> tuple[int, int]:
    """Free ports for AMQP and for the node's Erlang distribution, both
    outside the range the CLI tools take."""
    amqp = _free_port(PREFERRED_PORT, 'AMQP', CLI_DIST_PORTS)
    return amqp, _free_port(PREFERRED_DIST_PORT, 'distribution',
                            [*CLI_DIST_PORTS, amqp])


def _free_port(preferred: int, what: str, avoid) -> int:
    for _ in range(20):
        port = net.free_port(HOST, preferred)
        if port not in avoid:
            return port
    raise LabError(f'no free port for the RabbitMQ {what} listener')


def node_log(root: Root) -> str:
    """The node's own log (its boot errors land here)."""
    name = node_name(root)
    return os.path.join(root.service_dir(NAME), 'log', f'{name}.log')


def _env(root: Root, port: int, dist: int) -> dict[str, str]:
    base = root.service_dir(NAME)
    return {'PATH': '/usr/sbin:/usr/bin:/sbin:/bin', 'HOME': HOME,
            'LANG': 'C.UTF-8',
            'RABBITMQ_NODENAME': node_name(root),
            'RABBITMQ_NODE_IP_ADDRESS': HOST,
            'RABBITMQ_NODE_PORT': str(port),
            'RABBITMQ_DIST_PORT': str(dist),
            'ERL_CRASH_DUMP': os.path.join(base, 'erl_crash.dump'),
            'RABBITMQ_MNESIA_BASE': os.path.join(base, 'mnesia'),
            'RABBITMQ_LOG_BASE': os.path.join(base, 'log'),
            'RABBITMQ_PID_FILE': pid_file(root),
            'RABBITMQ_ENABLED_PLUGINS_FILE': os.path.join(base, 'plugins'),
            'RABBITMQ_CONFIG_FILES': os.path.join(base, 'conf.d')}


def pid_file(root: Root) -> str:
    return root.of(NAME, 'rabbit.pid')


def _as_rabbitmq(argv: list[str]) -> list[str]:
    return ['runuser', '-u', USER, '--', *argv]


def ctl(root: Root, *args: str, input: str | None = None,
        check: bool = True):
    proc = run(_as_rabbitmq([f'{BIN}/rabbitmqctl', '-n', node_name(root),
                             *args]),
               input=input, check=False, timeout=60,
               env={'PATH': '/usr/sbin:/usr/bin:/sbin:/bin', 'HOME': HOME,
                    'LANG': 'C.UTF-8'})
    if check and proc.returncode != 0:
        raise LabError(f'rabbitmqctl {args[0]} on node {node_name(root)} '
                       f'failed: {proc.stderr.strip()[-500:]}')
    return proc


def epmd_pid() -> int | None:
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/cmdline', 'rb') as f:
                argv = f.read().split(b'\0')
        except OSError:
            continue
        if argv and os.path.basename(argv[0]) == b'epmd':
            return int(entry)
    return None


def start(root: Root, port: int, dist: int) -> tuple[int, int | None]:
    """Start the node and wait until it serves; its PID and, when this
    start launched it, epmd's."""
    base = root.service_dir(NAME)
    os.makedirs(os.path.join(base, 'conf.d'), exist_ok=True)
    with open(os.path.join(base, 'plugins'), 'w', encoding='utf-8') as f:
        f.write('[].\n')
    for path in (base, os.path.join(base, 'conf.d'),
                 os.path.join(base, 'plugins')):
        shutil.chown(path, USER, USER)
    epmd_before = epmd_pid()
    env = _env(root, port, dist)
    run(_as_rabbitmq(['env', *[f'{k}={v}' for k, v in env.items()],
                      f'{BIN}/rabbitmq-server', '-detached']),
        env=env, timeout=60, cwd=base)
    processes.wait_ready('RabbitMQ', None, lambda: _pinged(root),
                         node_log(root))
    with open(pid_file(root), encoding='utf-8') as f:
        pid = int(f.read().strip())
    epmd = None if epmd_before else epmd_pid()
    return pid, epmd


def _pinged(root: Root) -> bool:
    return ctl(root, 'await_startup', '--timeout', '5',
               check=False).returncode == 0


def ensure_user(root: Root, user: str, password: str) -> None:
    """The bus user with full rights on ``/``; idempotent."""
    listed = ctl(root, '--quiet', 'list_users').stdout.split()
    if user in listed:
        ctl(root, 'change_password', user, input=password + '\n')
    else:
        ctl(root, 'add_user', user, input=password + '\n')
    ctl(root, 'set_permissions', '-p', '/', user, '.*', '.*', '.*')


def has_consumer(root: Root, queue: str) -> bool:
    """Whether ``queue`` exists and something consumes it."""
    proc = ctl(root, '--quiet', 'list_queues', 'name', 'consumers',
               check=False)
    for line in proc.stdout.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] == queue:
            return fields[1].isdigit() and int(fields[1]) > 0
    return False


def stop(pid: int | None, epmd: int | None) -> None:
    processes.stop(pid)
    if epmd and processes.alive(epmd) and not epmd_names():
        processes.stop(epmd, grace=2.0)


def epmd_names() -> list[str]:
    proc = run(['epmd', '-names'], check=False)
    return [line for line in proc.stdout.splitlines()
            if line.startswith('name ')]


def url(user: str, password: str, port: int) -> str:
    return f'rabbit://{user}:{password}@{HOST}:{port}/'

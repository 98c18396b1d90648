"""Tacker 16 as a site runs it, with the plugin installed into it as
README says: the operator's openstack CLI against real Keystone, Glance,
Heat (heat-api, heat-engine), tacker-server and one tacker-conductor on
MariaDB and RabbitMQ.

Barbican keeps the key of each Kubernetes VIM's token, as Tacker
requires. The operator's session itself (VIM, package, every LCM
operation, with the lab cloud below Heat) is test_tacker_lifecycle_lab:
it shares this session's services and runs before this module, whose
last test stops them."""
from __future__ import annotations

import base64
import ipaddress
import json
import os
import secrets
import subprocess
import sys
import time

import pytest
import yaml

from kubernetes_mgmt.cli import main
from kubernetes_mgmt.remote.retry import poll
from kubernetes_mgmt_lab import net, pki, procs
from kubernetes_mgmt_lab.emulated import apiserver, objects, store
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.manager import Lab
from kubernetes_mgmt_lab.openstack import (
    barbican,
    clients,
    cloud,
    heat,
    processes,
    rabbitmq,
    site,
    tacker,
)
from kubernetes_mgmt_lab.openstack.layout import CLOUD_NAME, HOST, Root
from kubernetes_mgmt_lab.openstack.operator import VIM_NAME, Operator
from kubernetes_mgmt_lab.openstack.state import ServicesState

pytestmark = pytest.mark.lab

CATALOG = {'identity', 'image', 'orchestration', 'nfv-orchestration',
           'compute', 'network', 'volumev3', 'block-storage', 'key-manager'}


def openstack(state: ServicesState, *args: str) -> dict | list:
    """``openstack ARGS -f json``: its parsed output; fails the test with
    the CLI's error otherwise."""
    proc = clients.openstack(Root(state.root), *args, '-f', 'json')
    assert proc.returncode == 0, (f'openstack {" ".join(args)} failed: '
                                  f'{proc.stderr}')
    return json.loads(proc.stdout)


def rss_mib(pid: int) -> float:
    total = 0
    for p in (pid, *processes.descendants(pid)):
        try:
            with open(f'/proc/{p}/status', encoding='utf-8') as f:
                total += next(int(line.split()[1]) for line in f
                              if line.startswith('VmRSS:'))
        except (OSError, StopIteration):
            continue
    return total / 1024


def test_services_run_with_their_figures(tacker_site):
    state = tacker_site
    rows = site.status(state.root)
    assert [r.name for r in rows] == list(site.SERVICES)
    assert all(r.up for r in rows), rows
    figures = {r.name: round(rss_mib(r.pid)) for r in rows}
    # Figures to read, not to gate on: start time depends on the machine's
    # load (the bench measures it).
    print(f'\ntimings: {state.timings}\nRSS MiB (with children): {figures}')
    assert state.timings['start_total'] > 0


def test_credentials_stay_in_owner_only_files(tacker_site):
    root = Root(tacker_site.root)
    for path in (root.state_file, root.clouds_file,
                 tacker.conf_path(root), heat.conf_path(root),
                 barbican.conf_path(root)):
        assert os.stat(path).st_mode & 0o077 == 0, path


def test_token_and_catalog(tacker_site):
    token = openstack(tacker_site, 'token', 'issue')
    assert token['id'] and token['project_id']
    types = {s['Type'] for s in openstack(tacker_site, 'catalog', 'list')}
    assert types == CATALOG


def test_conductor_loaded_our_driver(tacker_site):
    line = tacker.loaded_drivers(Root(tacker_site.root).log(
        'tacker-conductor'))
    assert line is not None
    assert "'mgmt-drivers-kubernetes'" in line and "'vnflcm_noop'" in line


def test_status_lists_heat_with_its_endpoint(tacker_site, capsys):
    assert main(['lab', 'tacker', 'status', '--root',
                 tacker_site.root]) == 0
    rows = {line.split()[0]: line.split()[1:]
            for line in capsys.readouterr().out.splitlines()[1:]}
    port = tacker_site.ports['heat']
    assert rows['heat-api'] == [str(tacker_site.pids['heat-api']),
                                f'http://{HOST}:{port}/v1/%(tenant_id)s',
                                'up']
    assert rows['heat-engine'] == [str(tacker_site.pids['heat-engine']),
                                   '-', 'up']



def test_status_lists_barbican_with_its_endpoint(tacker_site, capsys):
    assert main(['lab', 'tacker', 'status', '--root',
                 tacker_site.root]) == 0
    rows = {line.split()[0]: line.split()[1:]
            for line in capsys.readouterr().out.splitlines()[1:]}
    assert rows['barbican'] == [str(tacker_site.pids['barbican']),
                                barbican.url(tacker_site.ports['barbican']),
                                'up']


def test_operator_stores_reads_and_deletes_a_secret(tacker_site):
    state = tacker_site
    # Hex: a urlsafe token may start with '-', which the CLI's argument
    # parser takes for an option.
    payload = secrets.token_hex(16)
    stored = openstack(state, 'secret', 'store', '--name', 'lab-secret',
                       '--payload', payload)
    href = stored['Secret href']
    assert href.startswith(barbican.url(state.ports['barbican']) + '/v1/')
    assert openstack(state, 'secret', 'get', '--payload', href) == {
        'Payload': payload}
    run_cli(state, 'secret', 'delete', href)
    assert href not in [s['Secret href']
                        for s in openstack(state, 'secret', 'list')]
    proc = clients.openstack(Root(state.root), 'secret', 'get', href)
    assert proc.returncode != 0 and 'Not Found' in proc.stderr


def _token_secret(account: str, namespace: str, token: str) -> dict:
    """A service account's token Secret, as the token controller fills
    it."""
    return {'apiVersion': 'v1', 'kind': 'Secret',
            'type': 'kubernetes.io/service-account-token',
            'metadata': objects.new_meta(
                f'{account}-token', namespace, annotations={
                    'kubernetes.io/service-account.name': account}),
            'data': {'token': base64.b64encode(token.encode()).decode()}}


def _admin_binding(account: str, namespace: str) -> dict:
    return {'apiVersion': 'rbac.authorization.k8s.io/v1',
            'kind': 'ClusterRoleBinding',
            'metadata': objects.new_meta(f'{account}-admin'),
            'roleRef': {'apiGroup': 'rbac.authorization.k8s.io',
                        'kind': 'ClusterRole', 'name': 'cluster-admin'},
            'subjects': [{'kind': 'ServiceAccount', 'name': account,
                          'namespace': namespace}]}


@pytest.fixture
def kube_api(tmp_path):
    """A lab cluster's kube-apiserver on the services' host, TLS with its
    own CA, knowing one service account's token, bound to cluster-admin:
    what Tacker validates a Kubernetes VIM against before storing it."""
    pki_dir, cluster = tmp_path / 'pki', str(tmp_path / 'cluster')
    ca, ca_key = pki.make_ca('kubernetes')
    cert, key = pki.issue(ca, ca_key, 'kube-apiserver', ips=(HOST,))
    pki.write(str(pki_dir / 'ca.crt'), ca)
    pki.write(str(pki_dir / 'apiserver.crt'), cert)
    pki.write(str(pki_dir / 'apiserver.key'), key, private=True)
    token = secrets.token_urlsafe(24)
    with store.mutate(cluster) as state:
        for obj in (objects.namespace('default'),
                    objects.service_account('tacker', 'default'),
                    _token_secret('tacker', 'default', token),
                    *objects.bootstrap_rbac(),
                    _admin_binding('tacker', 'default')):
            state['objects'].setdefault(obj['kind'], []).append(obj)
    port = net.free_port(HOST, 0)
    pidfile = str(tmp_path / 'apiserver.pid')
    apiserver.start(sys.executable, HOST, port, str(pki_dir), pidfile,
                    str(tmp_path / 'apiserver.log'), cluster, 'v1.30.0')
    try:
        yield {'auth_url': f'https://{HOST}:{port}', 'bearer_token': token,
               'ssl_ca_cert': ca.decode(), 'project_name': 'default',
               'type': 'kubernetes'}
    finally:
        apiserver.stop(pidfile)


def as_tacker(state: ServicesState, tmp_path) -> dict[str, str]:
    """The CLI's environment for Tacker's service user (project
    ``service``, where Tacker keeps its secrets): an owner-only clouds
    file of its own."""
    path = tmp_path / 'tacker-clouds.yaml'
    cloud = {'auth': {'auth_url': f'http://{HOST}:'
                                  f'{state.ports["keystone"]}/v3',
                      'username': 'tacker',
                      'password': state.passwords['keystone_tacker'],
                      'project_name': 'service',
                      'user_domain_name': 'Default',
                      'project_domain_name': 'Default'},
             'identity_api_version': 3}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w', encoding='utf-8') as f:
        yaml.safe_dump({'clouds': {CLOUD_NAME: cloud}}, f)
    return {'OS_CLIENT_CONFIG_FILE': str(path)}


def tackers_secrets(state: ServicesState, env: dict[str, str]) -> set:
    proc = clients.openstack(Root(state.root), 'secret', 'list', '-f',
                             'json', env=env)
    assert proc.returncode == 0, proc.stderr
    return {s['Secret href'] for s in json.loads(proc.stdout)}


def test_tacker_keeps_a_kubernetes_vims_key_in_barbican(
        tacker_site, kube_api, tmp_path):
    state = tacker_site
    root = Root(state.root)
    vim_file = tmp_path / 'k8s-vim.yaml'
    fd = os.open(vim_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w', encoding='utf-8') as f:
        yaml.safe_dump(kube_api, f)
    tacker_env = as_tacker(state, tmp_path)
    before = tackers_secrets(state, tacker_env)

    vim = openstack(state, 'vim', 'register', '--config-file',
                    str(vim_file), 'lab-kubernetes')
    assert (vim['type'], vim['status'], vim['is_default']) == (
        'kubernetes', 'ACTIVE', False)
    assert vim['auth_cred']['key_type'] == 'barbican_key'
    added = tackers_secrets(state, tacker_env) - before
    assert len(added) == 1
    assert 'lab-kubernetes' in [v['Name']
                                for v in openstack(state, 'vim', 'list')]
    shown = clients.openstack(root, 'vim', 'show', '-f', 'json',
                              'lab-kubernetes')
    assert shown.returncode == 0, shown.stderr
    assert kube_api['bearer_token'] not in shown.stdout
    assert json.loads(shown.stdout)['auth_cred']['bearer_token'] == '***'
    for path in _service_logs(root):
        with open(path, encoding='utf-8', errors='replace') as f:
            assert kube_api['bearer_token'] not in f.read(), path

    run_cli(state, 'vim', 'delete', 'lab-kubernetes')
    assert 'lab-kubernetes' not in [
        v['Name'] for v in openstack(state, 'vim', 'list')]
    assert tackers_secrets(state, tacker_env) == before

# A group of nested members that hold no server (the compute API below
# Heat is not in the lab yet), scaled by two policies. The capacity is a
# parameter, as in Tacker's HOT: an update that repeats the template's
# capacity keeps the group's size; Heat counts a member marked unhealthy
# out of the size, so without it the update would drop that member.
MEMBER_HOT = """\
heat_template_version: 2021-04-16
parameters:
  prefix: {type: string}
resources:
  secret:
    type: OS::Heat::RandomString
    properties: {length: 12}
outputs:
  name:
    value:
      list_join: ['-', [{get_param: prefix}, {get_attr: [secret, value]}]]
"""
GROUP_HOT = """\
heat_template_version: 2021-04-16
parameters:
  capacity: {type: number, default: 1}
resources:
  group:
    type: OS::Heat::AutoScalingGroup
    properties:
      min_size: 1
      max_size: 3
      desired_capacity: {get_param: capacity}
      resource:
        type: member.yaml
        properties: {prefix: node}
  scale_out:
    type: OS::Heat::ScalingPolicy
    properties:
      adjustment_type: change_in_capacity
      auto_scaling_group_id: {get_resource: group}
      scaling_adjustment: 1
      cooldown: 0
  scale_in:
    type: OS::Heat::ScalingPolicy
    properties:
      adjustment_type: change_in_capacity
      auto_scaling_group_id: {get_resource: group}
      scaling_adjustment: -1
      cooldown: 0
outputs:
  names:
    value: {get_attr: [group, outputs_list, name]}
"""


def run_cli(state: ServicesState, *args: str) -> str:
    """``openstack ARGS`` (table output): its stdout; fails the test with
    the CLI's error otherwise."""
    proc = clients.openstack(Root(state.root), *args)
    assert proc.returncode == 0, (f'openstack {" ".join(args)} failed: '
                                  f'{proc.stderr}')
    return proc.stdout


def members(state: ServicesState, stack: str) -> dict[str, dict]:
    """The group's members (nested-template resources) by name."""
    return {r['resource_name']: r
            for r in openstack(state, 'stack', 'resource', 'list', '-n',
                               '2', stack)
            if r['resource_type'].endswith('/member.yaml')}


def settled_members(state: ServicesState, stack: str, count: int):
    """Wait until the group has ``count`` members, all complete."""
    def settled():
        found = members(state, stack)
        done = len(found) == count and all(
            m['resource_status'].endswith('_COMPLETE')
            for m in found.values())
        return found if done else None

    return poll(settled, deadline=90, what=f'{stack}: {count} members')


def output_names(state: ServicesState, stack: str) -> list[str]:
    shown = openstack(state, 'stack', 'show', stack)
    return next(o['output_value'] for o in shown['outputs']
                if o['output_key'] == 'names')


def test_heat_scales_and_heals_a_group_of_nested_members(tacker_site,
                                                         tmp_path):
    state = tacker_site
    (tmp_path / 'member.yaml').write_text(MEMBER_HOT)
    (tmp_path / 'group.yaml').write_text(GROUP_HOT)
    timings = {}
    started = time.monotonic()
    run_cli(state, 'stack', 'create', '--wait', '-t',
            str(tmp_path / 'group.yaml'), 'asg')
    timings['create'] = time.monotonic() - started
    assert openstack(state, 'stack', 'show', 'asg')['stack_status'] == (
        'CREATE_COMPLETE')
    assert len(settled_members(state, 'asg', 1)) == 1
    assert [n[:5] for n in output_names(state, 'asg')] == ['node-']

    started = time.monotonic()
    run_cli(state, 'stack', 'resource', 'signal', 'asg', 'scale_out')
    grown = settled_members(state, 'asg', 2)
    timings['scale_out'] = time.monotonic() - started
    names = output_names(state, 'asg')
    assert len(set(names)) == 2 and all(n.startswith('node-')
                                        for n in names)

    # Heal as Tacker does: mark the member unhealthy, update in place.
    group = openstack(state, 'stack', 'resource', 'show', 'asg', 'group')
    sick, well = sorted(grown)
    started = time.monotonic()
    run_cli(state, 'stack', 'resource', 'mark', 'unhealthy',
            group['physical_resource_id'], sick, 'lab test')
    run_cli(state, 'stack', 'update', '--existing', '--parameter',
            'capacity=2', '--wait', 'asg')
    timings['heal'] = time.monotonic() - started
    assert openstack(state, 'stack', 'show', 'asg')['stack_status'] == (
        'UPDATE_COMPLETE')
    healed = settled_members(state, 'asg', 2)
    assert healed.keys() == grown.keys()
    assert (healed[sick]['physical_resource_id']
            != grown[sick]['physical_resource_id'])
    assert (healed[well]['physical_resource_id']
            == grown[well]['physical_resource_id'])

    run_cli(state, 'stack', 'resource', 'signal', 'asg', 'scale_in')
    assert len(settled_members(state, 'asg', 1)) == 1

    started = time.monotonic()
    run_cli(state, 'stack', 'delete', '--yes', '--wait', 'asg')
    timings['delete'] = time.monotonic() - started
    assert openstack(state, 'stack', 'list') == []
    # The policies' users lived in Heat's stack-user domain; gone too.
    assert [u['Name'] for u in openstack(
        state, 'user', 'list', '--domain', heat.STACK_DOMAIN)] == [
        heat.DOMAIN_ADMIN]
    print('\nheat through the CLI (s): '
          + ', '.join(f'{k} {v:.1f}' for k, v in timings.items()))


def refused(state: ServicesState, *args: str) -> str:
    """The error of an ``openstack`` command that must fail."""
    proc = clients.openstack(Root(state.root), *args)
    assert proc.returncode != 0, f'openstack {" ".join(args)} succeeded'
    return proc.stderr


def test_a_network_made_through_the_api_is_a_bridge_of_its_own(
        tacker_site, tmp_path):
    state = tacker_site
    cidr, = cloud.free_subnets(1)
    openstack(state, 'network', 'create', 'extra-net')
    assert 'has no subnet' in refused(state, 'port', 'create', '--network',
                                      'extra-net', 'early')
    subnet = openstack(state, 'subnet', 'create', '--network', 'extra-net',
                       '--subnet-range', cidr, 'extra-subnet')
    assert subnet['cidr'] == cidr
    assert 'has a subnet already' in refused(
        state, 'subnet', 'create', '--network', 'extra-net',
        '--subnet-range', cloud.free_subnets(1)[0], 'second')
    image = tmp_path / 'disk.img'
    image.write_bytes(bytes(4096))
    openstack(state, 'image', 'create', '--disk-format', 'raw',
              '--container-format', 'bare', '--file', str(image),
              'extra-image')
    port = openstack(state, 'port', 'create', '--network', 'extra-net',
                     'extra-port')
    server = openstack(state, 'server', 'create', '--flavor', 'm1.small',
                       '--image', 'extra-image', '--port', port['id'],
                       '--wait', 'extra-vm')
    ip = port['fixed_ips'][0]['ip_address']
    assert ipaddress.ip_address(ip) in ipaddress.ip_network(cidr)
    made, = _made_labs(state)
    lab = Lab.load(made)
    bridge = net.bridge_name(lab.state.name)
    assert bridge in net.link_names()
    vm, = lab.state.hosts
    assert (vm.server_id, vm.ip) == (server['id'], ip)
    assert lab.sshd_up(vm.name)
    assert 'one or more ports' in refused(state, 'network', 'delete',
                                          'extra-net')
    run_cli(state, 'server', 'delete', '--wait', 'extra-vm')
    run_cli(state, 'port', 'delete', 'extra-port')
    run_cli(state, 'image', 'delete', 'extra-image')
    run_cli(state, 'network', 'delete', 'extra-net')
    assert _made_labs(state) == []
    assert bridge not in net.link_names()


def _made_labs(state: ServicesState) -> list[str]:
    where = cloud.labs_dir(Root(state.root))
    return sorted(os.path.join(where, d) for d in os.listdir(where)) \
        if os.path.isdir(where) else []


def test_status_of_a_root_without_services_is_refused(tmp_path, capsys):
    assert main(['lab', 'tacker', 'status', '--root', str(tmp_path)]) == 1
    assert 'lab tacker up' in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_up_refuses_a_directory_that_is_not_the_plugin(tmp_path, capsys):
    code = main(['lab', 'tacker', 'up', '--root', str(tmp_path / 'r'),
                 '--plugin', str(tmp_path)])
    assert code == 1
    assert 'not a checkout of the plugin' in capsys.readouterr().err
    assert not (tmp_path / 'r').exists()


def test_up_on_a_running_root_is_refused_and_changes_nothing(tacker_site):
    before = ServicesState.load(Root(tacker_site.root))
    with pytest.raises(LabError, match='running already'):
        site.up(tacker_site.root, tacker_site_checkout())
    assert ServicesState.load(Root(tacker_site.root)) == before
    assert all(r.up for r in site.status(tacker_site.root))


def _service_logs(root: Root) -> list[str]:
    found = []
    for top in (root.of('log'), root.of('rabbitmq')):
        for base, _, files in os.walk(top):
            found += [os.path.join(base, f) for f in files
                      if '.log' in f]
    return found


def test_down_ends_every_process_and_no_log_holds_a_password(
        tacker_site):
    # Near the end of this module (pytest keeps the order): it stops the
    # session's services.
    state = tacker_site
    root = Root(state.root)
    # A record for the next test to find after "up" again; registered
    # here, so that module needs no other module to run before it.
    Operator(root).register_vim()
    pids = dict(state.pids)
    tree = {p for pid in pids.values()
            for p in (pid, *processes.descendants(pid))}
    started = time.monotonic()
    stopped = site.down(state.root)
    print(f'\ndown in {time.monotonic() - started:.1f} s')
    assert set(stopped) == set(site.SERVICES)
    assert all(procs.is_gone(p) for p in tree)
    assert procs.find(root=root.path) == []
    if state.epmd_pid:
        # epmd stays while another Erlang node (another services root
        # started beside this one) still uses it.
        assert procs.is_gone(state.epmd_pid) or rabbitmq.epmd_names()
    for port in state.ports.values():
        assert not net.port_open(HOST, port), port
    rows = site.status(state.root)
    assert not any(r.up for r in rows)

    logs = _service_logs(root)
    assert {os.path.basename(p) for p in logs} >= {
        'tacker-server.log', 'tacker-conductor.log', 'keystone.log',
        'glance.log', 'heat-api.log', 'heat-engine.log', 'mariadb.log',
        'barbican.log'}
    # Barbican's key-encryption key is among the generated secrets.
    assert 'barbican_kek' in state.passwords
    generated = list(state.passwords.items())
    for path in logs:
        with open(path, encoding='utf-8', errors='replace') as f:
            text = f.read()
        leaked = [name for name, s in generated if s in text]
        assert not leaked, f'{path} holds {leaked}'
    # The CLI reports what is left: nothing.
    proc = subprocess.run([sys.executable, '-m', 'kubernetes_mgmt.cli',
                           'lab', 'tacker', 'status', '--root', root.path],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 3 and ' up' not in proc.stdout


def test_up_again_on_the_same_root_keeps_tackers_records(tacker_site):
    # After the previous test's down: the databases stay in the root. The
    # services stay up for the modules after this one (the session's
    # fixture stops them at the end).
    state = site.up(tacker_site.root, tacker_site_checkout())
    down = [r.name for r in site.status(state.root) if not r.up]
    assert not down, _last_lines(Root(state.root), down)
    assert state.passwords == tacker_site.passwords
    # The VIM registered before the down.
    assert VIM_NAME in [v['Name'] for v in openstack(state, 'vim', 'list')]
    assert tacker.loaded_drivers(Root(state.root).log(
        'tacker-conductor')) is not None


def _last_lines(root: Root, services: list[str]) -> str:
    """What the logs of ``services`` end with (a failed start)."""
    text = []
    for name in services:
        path = root.log(name)
        if os.path.exists(path):
            with open(path, encoding='utf-8', errors='replace') as f:
                text.append(f'{name}: ' + ''.join(f.readlines()[-15:]))
    return f'not running after up: {services}\n' + '\n'.join(text)


def tacker_site_checkout() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))

"""The operator's session with the openstack CLI, as README's "Using it
with the openstack CLI" shows it: each command run for real against the
root's services, each LCM operation followed until it ends; a failure
carries Tacker's error detail and the conductor's log lines for it. The
checks between commands (the instance, its operations, VIMs, Heat's
resources) read the REST APIs through one session, named as the CLI
lists them."""
from __future__ import annotations

import json
import os
import re
import time
import uuid
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field

import yaml

from kubernetes_mgmt.remote.retry import wait_until
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.openstack import clients, cloud
from kubernetes_mgmt_lab.openstack.api_reader import ApiReader
from kubernetes_mgmt_lab.openstack.layout import HOST, Root
from kubernetes_mgmt_lab.openstack.state import ServicesState

ENDED = ('COMPLETED', 'FAILED_TEMP', 'FAILED', 'ROLLED_BACK')
OP_DEADLINE = 900.0
VIM_NAME = 'lab-openstack'


class OperationFailed(LabError):
    """An LCM operation ended otherwise than COMPLETED."""

    def __init__(self, op: dict, conductor_lines: list[str]):
        self.op = op
        self.state = op.get('Operation State')
        detail = op.get('Error') or {}
        lines = ''.join(f'\n  {line}' for line in conductor_lines[-15:])
        super().__init__(
            f'{op.get("Operation")} of VNF {op.get("VNF Instance ID")} '
            f'ended {self.state}: {detail}\nconductor log:{lines}')


@dataclass
class Operator:
    """One operator's CLI session against a services root."""

    root: Root
    echo: Callable[[str], None] | None = None   # shows each command
    timings: dict[str, float] = field(default_factory=dict)
    # The VNF LCM API of the vnflcm commands (--os-tacker-api-version).
    api_version: int = 1
    _api: ApiReader | None = field(default=None, repr=False)

    @property
    def api(self) -> ApiReader:
        """Tacker's and Heat's REST APIs, for polls and checks."""
        if self._api is None:
            self._api = ApiReader(self.root, self.api_version)
        return self._api

    @property
    def state(self) -> ServicesState:
        return ServicesState.load(self.root)

    # -- the CLI --------------------------------------------------------------

    def run(self, *args: str, parse: bool = True, timeout: float = 300.0,
            show: bool = True):
        """``openstack ARGS`` (``-f json`` when ``parse``): its output;
        ``show``: echo the command (polls do not)."""
        if args[:1] == ('vnflcm',) and self.api_version != 1:
            args = (*args, '--os-tacker-api-version', str(self.api_version))
        argv = [*args, '-f', 'json'] if parse else list(args)
        if show:
            self._show('$ openstack ' + ' '.join(args))
        proc = clients.openstack(self.root, *argv, timeout=timeout)
        if proc.returncode != 0:
            raise LabError(f'openstack {" ".join(args)} failed: '
                           f'{proc.stderr.strip()[-800:]}')
        out = json.loads(proc.stdout) if parse else proc.stdout.strip()
        if not parse and out:
            self._show(out)
        return out

    def _show(self, text: str) -> None:
        if self.echo is not None:
            self.echo(text)

    # -- VIM, package, instance ----------------------------------------------

    def register_vim(self) -> str:
        """The lab's OpenStack as the default VIM (once)."""
        for vim in self.run('vim', 'list'):
            if vim['Name'] == VIM_NAME:
                return vim['ID']
        state = self.state
        path = self.root.of('vim.yaml')
        _private_json(path, {
            'auth_url': f'http://{HOST}:{state.ports["keystone"]}/v3',
            'username': 'admin', 'password': state.passwords['admin'],
            'project_name': 'admin', 'project_domain_name': 'Default',
            'user_domain_name': 'Default', 'cert_verify': 'False'})
        return self.run('vim', 'register', '--config-file', path,
                        '--is-default', VIM_NAME)['id']

    def register_kubernetes_vim(self, name: str, auth_url: str,
                                token: str, ca_pem: str,
                                namespace: str) -> str:
        """A Kubernetes VIM with a bearer token (README, "CNF infra
        driver"); the token only ever lives in an owner-only file."""
        path = self.root.of(f'vim-{name}.yaml')
        _private_json(path, {'auth_url': auth_url, 'bearer_token': token,
                             'ssl_ca_cert': ca_pem,
                             'project_name': namespace,
                             'type': 'kubernetes'})
        return self.run('vim', 'register', '--config-file', path,
                        name)['id']

    def onboard(self, csar: str) -> tuple[str, str]:
        """``vnf package create`` + ``upload``: (package id, VNFD id).

        A package whose VNFD is already onboarded is used as it is: Tacker
        16 accepts a VNFD id once per database, even after the package
        holding it was deleted."""
        known = self.onboarded(_descriptor_id(csar))
        if known is not None:
            return known
        package_id = self.run('vnf', 'package', 'create')['ID']
        offset = _log_size(self.root)
        self.run('vnf', 'package', 'upload', '--path', csar, package_id,
                 parse=False)

        def onboarded():
            shown = self.api.package(package_id)
            if shown['onboardingState'] == 'CREATED':
                # Tacker marks UPLOADING before it answers; back to
                # CREATED means the conductor gave up.
                lines = ''.join(f'\n  {line}' for line in _conductor_lines(
                    self.root, offset, package_id)[-10:])
                raise LabError(f'Tacker did not onboard package '
                               f'{package_id}:{lines}')
            return shown if shown['onboardingState'] == 'ONBOARDED' \
                else None

        shown = _poll(onboarded, 120, 'package onboarding')
        return package_id, shown['vnfdId']

    def onboarded(self, vnfd_id: str) -> tuple[str, str] | None:
        for package in self.api.packages():
            if package['onboardingState'] == 'ONBOARDED' and \
                    package.get('vnfdId') == vnfd_id:
                return package['id'], vnfd_id
        return None

    def create(self, vnfd_id: str, name: str | None = None) -> str:
        args = ['--name', name] if name else []
        return self.run('vnflcm', 'create', *args, vnfd_id)['ID']

    def show(self, vnf_id: str) -> dict:
        """The instance with the fields ``vnflcm show`` lists, read
        through the REST API (a check, not a command of the session)."""
        return _as_listed(self.api.vnf_instance(vnf_id), _INSTANCE_FIELDS)

    def request_file(self, sample: str, vim_id: str, name: str,
                     changes: Callable[[dict], None] | None = None,
                     network: int = 0) -> str:
        """A sample request of ``samples/requests`` with the lab's values
        in place of its placeholders, in an owner-only file."""
        with open(sample, encoding='utf-8') as f:
            body = json.load(f)
        state = self.state
        values = {'REPLACE_WITH_OPENSTACK_VIM_ID': vim_id,
                  'REPLACE_WITH_NETWORK_ID': cloud.network_id(
                      self.root, cloud.NETWORK_NAMES[network]),
                  'REPLACE_WITH_VM_PASSWORD': state.passwords['vm']}
        body = _substitute(body, values)
        _set_subnet(body, state.subnets[network])
        if changes is not None:
            changes(body)
        path = self.root.of('requests', f'{name}.json')
        _private_json(path, body)
        return path

    # -- LCM operations -------------------------------------------------------

    def instantiate(self, vnf_id: str, request: str,
                    wait: bool = True) -> dict | None:
        return self._operate('INSTANTIATE', vnf_id, wait,
                             'vnflcm', 'instantiate', vnf_id, request)

    def scale(self, vnf_id: str, kind: str, aspect: str,
              wait: bool = True, params: str | None = None
              ) -> dict | None:
        """``params``: a file of additionalParams (v2: the user data)."""
        extra = ['--additional-param-file', params] if params else []
        return self._operate('SCALE', vnf_id, wait, 'vnflcm', 'scale',
                             '--type', kind, '--aspect-id', aspect,
                             *extra, vnf_id)

    def heal(self, vnf_id: str, vnfcs: tuple[str, ...] = (),
             wait: bool = True, params: str | None = None
             ) -> dict | None:
        # One --vnfc-instance with every id: the option takes a list,
        # and a repeated one replaces the earlier.
        args = ['--vnfc-instance', *vnfcs] if vnfcs else []
        if params:
            args += ['--additional-param-file', params]
        return self._operate('HEAL', vnf_id, wait, 'vnflcm', 'heal',
                             vnf_id, *args)

    def change_vnfpkg(self, vnf_id: str, request: str,
                      wait: bool = True) -> dict | None:
        """v2 ChangeCurrentVnfPackage with the request file."""
        return self._operate('CHANGE_VNFPKG', vnf_id, wait, 'vnflcm',
                             'change-vnfpkg', vnf_id, request)

    def terminate(self, vnf_id: str, wait: bool = True) -> dict | None:
        return self._operate('TERMINATE', vnf_id, wait, 'vnflcm',
                             'terminate', vnf_id)

    def retry(self, op_id: str) -> dict:
        before = self._where_now(op_id)
        self.run('vnflcm', 'op', 'retry', op_id, parse=False)
        return self.wait(op_id, after=before)

    def rollback(self, op_id: str) -> dict:
        before = self._where_now(op_id)
        self.run('vnflcm', 'op', 'rollback', op_id, parse=False)
        return self.wait(op_id, after=before, check=False)

    def fail(self, op_id: str) -> dict:
        """``op fail``: give up a FAILED_TEMP operation (it ends FAILED)."""
        return self.run('vnflcm', 'op', 'fail', op_id)

    def _operate(self, operation: str, vnf_id: str, wait: bool,
                 *args: str) -> dict | None:
        known = {o['id'] for o in self.api.op_occurrences(vnf_id)}
        started = time.monotonic()
        self.run(*args, parse=False)
        op_id = _poll(lambda: self._new_op(vnf_id, operation, known), 60,
                      f'the {operation} operation of VNF {vnf_id}')
        if not wait:
            return {'ID': op_id}
        op = self.wait(op_id)
        self.timings[f'{len(self.timings) + 1:2d}. {operation.lower()} '
                     f'{vnf_id[:8]}'] = round(time.monotonic() - started, 1)
        return op

    def _new_op(self, vnf_id: str, operation: str,
                known: set[str]) -> str | None:
        for op in self.api.op_occurrences(vnf_id):
            if op['id'] not in known and op['operation'] == operation:
                return op['id']
        return None

    def _where_now(self, op_id: str) -> tuple[str, str]:
        return _where(self.api.op_occurrence(op_id))

    def wait(self, op_id: str, after: tuple[str, str] | None = None,
             check: bool = True) -> dict:
        """``op show`` until the operation has ended (and, after a retry
        or rollback, is no longer where it was: ``after``, its state and
        the time it entered it. A v2 retry may fail again at once, into
        the same state; Tacker v1 leaves the time as it was)."""
        offset = _log_size(self.root)

        def ended() -> dict | None:
            op = self.api.op_occurrence(op_id)
            if op['operationState'] in ENDED and _where(op) != after:
                return op
            return None

        op = _as_listed(_poll(ended, OP_DEADLINE, f'operation {op_id}'),
                        _OP_FIELDS)
        self._show(f'  -> {op["Operation"]} {op["Operation State"]}')
        if check and op['Operation State'] != 'COMPLETED':
            raise OperationFailed(op, _conductor_lines(self.root, offset,
                                                       op_id))
        return op


# The REST fields the tests read, named as the CLI lists them
# (python-tackerclient's columns; nested values are the same JSON).
_INSTANCE_FIELDS = {
    'id': 'ID', 'vnfInstanceName': 'VNF Instance Name',
    'vnfdId': 'VNFD ID', 'instantiationState': 'Instantiation State',
    'instantiatedVnfInfo': 'Instantiated Vnf Info',
    'vimConnectionInfo': 'VIM Connection Info', 'metadata': 'metadata'}
_OP_FIELDS = {
    'id': 'ID', 'operation': 'Operation',
    'operationState': 'Operation State',
    'vnfInstanceId': 'VNF Instance ID',
    'stateEnteredTime': 'State Entered Time', 'error': 'Error',
    'operationParams': 'Operation Parameters'}


def _as_listed(resource: dict, fields: dict[str, str]) -> dict:
    return {listed: resource[key] for key, listed in fields.items()
            if key in resource}


def _where(op: dict) -> tuple[str, str]:
    """Where an operation occurrence (as the REST API shows it) is."""
    return op['operationState'], str(op.get('stateEnteredTime'))


def _poll(fn, deadline: float, what: str):
    found = []

    def done() -> bool:
        value = fn()
        if value:
            found.append(value)
        return bool(value)

    # A poll is a GET on a kept session: at most a second apart.
    if not wait_until(done, deadline=deadline, first=0.5, ceiling=1.0):
        raise LabError(f'{what} did not end within {deadline:g} s')
    return found[0]


def _substitute(value, values: dict[str, str]):
    if isinstance(value, dict):
        return {k: _substitute(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, values) for v in value]
    if value == 'REPLACE_WITH_A_NEW_UUID':
        return str(uuid.uuid4())
    if isinstance(value, str) and value in values:
        return values[value]
    return value


def _set_subnet(body: dict, subnet: str) -> None:
    """NFS exports go to the lab's subnet."""
    params = body.get('additionalParams', {}).get(
        'k8s_cluster_installation_param', {})
    for export in params.get('storage_server', {}).get(
            'nfs_server_setup_params', []):
        export['export_to'] = subnet


def _private_json(path: str, data: dict) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w', encoding='utf-8') as f:
        json.dump(data, f, indent=2)


def _log_size(root: Root) -> int:
    try:
        return os.path.getsize(root.log('tacker-conductor'))
    except OSError:
        return 0


def _conductor_lines(root: Root, offset: int, op_id: str) -> list[str]:
    """The conductor's ERROR/WARNING lines since ``offset``."""
    try:
        with open(root.log('tacker-conductor'), encoding='utf-8',
                  errors='replace') as f:
            f.seek(offset)
            text = f.read()
    except OSError:
        return []
    return [line for line in text.splitlines()
            if re.search(r' (ERROR|WARNING) ', line) or op_id in line]


def _descriptor_id(csar: str) -> str:
    """The VNFD id of a CSAR: its entry definitions' VNF descriptor_id."""
    with zipfile.ZipFile(csar) as archive:
        meta = archive.read('TOSCA-Metadata/TOSCA.meta').decode()
        entry = next(line.split(':', 1)[1].strip()
                     for line in meta.splitlines()
                     if line.startswith('Entry-Definitions:'))
        vnfd = yaml.safe_load(archive.read(entry))
    nodes = vnfd['topology_template']['node_templates']
    return next(node['properties']['descriptor_id']
                for node in nodes.values()
                if 'descriptor_id' in (node.get('properties') or {}))

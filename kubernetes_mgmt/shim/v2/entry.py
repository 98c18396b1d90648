"""The v2 LCM script's body: ``main()`` runs one operation.

tacker-conductor runs the package's script as ``python <script>`` with the
inputs pickled on stdin. The result, the instance with the driver's state
in its ``metadata``, is pickled to stdout, also after a failure (what was
learnt stays for a retry only if Tacker keeps it). A failure exits 1 with
one line on stderr, which Tacker puts in the operation's error: the
driver's message, naming host and step, secrets masked.
"""
from __future__ import annotations

import logging
import sys
from typing import Any

from kubernetes_mgmt import redact
from kubernetes_mgmt.errors import MgmtDriverError
from kubernetes_mgmt.shim.v2 import operations, stdio, tacker_conf
from kubernetes_mgmt.shim.v2.instance import V2Instance
from kubernetes_mgmt.state.instance_state import METADATA_KEY

LOG = redact.get_logger(__name__)
_CREDENTIAL_KEYS = ('password', 'applicationCredentialSecret',
                    'client_secret', 'bearer_token')


def main(args: list[str] | None = None) -> int:
    # Until Tacker's logging is set up nothing may reach stderr: it
    # becomes the operation's error text (library warnings included).
    logging.captureWarnings(True)
    logging.getLogger().addHandler(logging.NullHandler())
    with stdio.result_channel() as channel:
        inputs = stdio.read_input()
        instance = V2Instance(inputs.get('vnf_instance') or {})
        instance.adopt_state(carried_state(inputs))
        with redact.operation(str(inputs['operation']), hook=True):
            _register_secrets(instance)
            code = _run(inputs, instance, args)
        stdio.write_result(channel, result(instance, code))
    return code


def carried_state(inputs: dict) -> str | None:
    """The state a failed attempt of this operation handed on: Tacker
    keeps no instance change of a failed operation, but keeps the
    script's ``user_script_err_handling_data`` for its retry and
    rollback."""
    carried = inputs.get('user_script_err_handling_data') or {}
    return carried.get(METADATA_KEY) if isinstance(carried, dict) else None


def result(instance: V2Instance, code: int) -> dict:
    """What goes back: the instance, and after a failure the driver's
    state (signed, no secret in it: host keys, nodes, the VIM's id)."""
    out: dict = {'vnf_instance': instance.for_tacker()}
    if code != 0:
        out['user_script_err_handling_data'] = {
            METADATA_KEY: instance.vnf_metadata.get(METADATA_KEY)}
    return out


def _run(inputs: dict, instance: V2Instance, args: list[str] | None
         ) -> int:
    operation = str(inputs['operation'])
    if not operations.has_work(operation):
        return 0    # nothing to load Tacker's configuration for
    try:
        conf = tacker_conf.load(args)
        _setup_logging(conf)
        call = operations.Call(
            operation=operation, request=inputs.get('request') or {},
            instance=instance, grant_request=inputs.get('grant_request'),
            grant=inputs.get('grant_response'),
            context=admin_context(instance),
            csar_dir=inputs.get('tmp_csar_dir'))
        operations.run(call)
    except MgmtDriverError as exc:
        print(redact.redact(str(exc)), file=sys.stderr)
        return 1
    except Exception as exc:    # the operation's error says what broke
        LOG.exception('%s of VNF instance %s failed', operation, instance.id)
        print(redact.redact(f'{type(exc).__name__}: {exc}'),
              file=sys.stderr)
        return 1
    return 0


def _register_secrets(instance: V2Instance) -> None:
    for connection in instance.vim_connection_info:
        redact.register(*(connection.access_info.get(k)
                          for k in _CREDENTIAL_KEYS))


def _setup_logging(conf: Any) -> None:
    """Tacker's logging where it goes to a file, the journal or syslog.
    Logging to stderr is left off: stderr is the operation's error."""
    from oslo_log import log as oslo_logging

    if conf.log_file or conf.log_dir or conf.use_journal or conf.use_syslog:
        oslo_logging.setup(conf, 'tacker')


def admin_context(instance: V2Instance) -> Any:
    """An admin context in the project of the instance's OpenStack VIM
    as Tacker registered it: the cluster's VIM gets the same tenant."""
    from tacker import context

    admin = context.get_admin_context()
    tenant = None
    for connection in instance.vim_connection_info:
        if connection.vim_id and 'OPENSTACK' in connection.vim_type.upper():
            tenant = _vim_tenant(admin, connection.vim_id)
            break
    if tenant is None:
        return admin
    return context.Context(user_id=None, tenant_id=tenant, is_admin=True,
                           roles=['admin'], overwrite=False)


def _vim_tenant(admin: Any, vim_id: str) -> str | None:
    from tacker.extensions import nfvo
    from tacker.nfvo import nfvo_plugin

    try:
        return nfvo_plugin.NfvoPlugin().get_vim(
            admin, vim_id, mask_password=True).get('tenant_id')
    except nfvo.VimNotFoundException:
        return None
